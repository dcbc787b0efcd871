"""Sphinx configuration of the sb3-complementary docs: Sphinx + MyST-Parser + furo, SB3's own stack.

Build (as ``.ci/run`` does; warnings are errors, so a broken cross-reference or a stale autodoc name
fails the build)::

    sphinx-build -W --keep-going -b html docs docs/_build/html
"""

import sys
import warnings
from pathlib import Path

from docutils import nodes
from sphinx import addnodes
from sphinx.application import Sphinx
from sphinx.transforms.post_transforms import SphinxPostTransform

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # autodoc documents this checkout's package, installed or not

import sb3_complementary  # noqa: E402

# sphinx-autodoc-typehints 3.6 calls an API that Sphinx 9 deprecates: a Python warning printed once per
# docstring, not a Sphinx warning, and nothing this project can change.
warnings.filterwarnings("ignore", message=r".*set_application' is deprecated", module="sphinx_autodoc_typehints")

project = "sb3-complementary"
author = "sb3-complementary contributors"
copyright = "2026, sb3-complementary contributors"
release = sb3_complementary.__version__
version = release

extensions = [
    "myst_parser",
    "sphinx.ext.autodoc",
    "sphinx_autodoc_typehints",
    "sphinx_copybutton",
]

source_suffix = {".md": "markdown"}
root_doc = "index"

exclude_patterns = [
    "_build",
    # run files, raw logs and diagnostic outputs: data, not pages
    "**/runs",
    "**/runs-*",
    "performance-logs",
    "benchmarks/diagnostics/score_spread",
    "benchmarks/diagnostics/ratio-temperature",
    # generated tables without a page title of their own: each is included by a page under results/
    "benchmarks/screen/gates.md",
    "benchmarks/screen/gates-nonlearned.md",
    "benchmarks/screen/gates-relo.md",
    "benchmarks/screen/multitask.md",
    "benchmarks/screen-progress/gates.md",
    "benchmarks/screen-progress/gates-laber.md",
    "benchmarks/screen-progress/gates-fresh-td.md",
    "benchmarks/study/harm-noise.md",
    "benchmarks/study-laber/gates.md",
    "benchmarks/study-laber/gates-seeds-5-9.md",
    "benchmarks/screen-actor-batch/gates-laber.md",
    "benchmarks/screen-actor-batch/gates.md",
    "multitask/per_task.md",
]

# MyST: GitHub-style anchors for the ``page.md#section`` links the pages already use.
myst_enable_extensions = ["colon_fence"]
myst_heading_anchors = 4

html_theme = "furo"
html_title = f"sb3-complementary {release}"
html_static_path = ["_static"]
html_theme_options = {"navigation_with_keys": True}

autodoc_member_order = "bysource"
autodoc_typehints = "description"
autodoc_default_options = {"show-inheritance": True}
# SB3's MaybeCallback and GymEnv aliases name BaseCallback and VecEnv as strings (SB3 imports them
# under TYPE_CHECKING only); the explicit constructors' ``env: GymEnv | str`` needs the second.
autodoc_type_aliases = {
    "BaseCallback": "stable_baselines3.common.callbacks.BaseCallback",
    "VecEnv": "stable_baselines3.common.vec_env.VecEnv",
}
typehints_defaults = "comma"

# Copy only the code, not the prompts of console examples.
copybutton_prompt_text = r"\$ |>>> |\.\.\. "
copybutton_prompt_is_regexp = True


class FolderLinksAsPaths(SphinxPostTransform):
    """
    A Markdown link to a folder of the repository (``[logs](diagnostics/score_spread/)``: run files,
    logs) renders as the folder's path, not as a link: a folder is no page, and the repository has no
    public address to link to yet. Runs just before MyST's reference resolver, and only for targets
    that are existing folders, so a link to a missing page or file still fails the build.
    """

    default_priority = 8  # MyST's MystReferenceResolver runs at 9

    def run(self, **kwargs: object) -> None:
        for node in list(self.document.findall(addnodes.pending_xref)):
            if node.get("reftype") != "myst" or node.get("refdomain"):
                continue
            target = str(node["reftarget"]).split("#", 1)[0]
            _, absolute = self.env.relfn2path(target, node.get("refdoc", self.env.docname))
            folder = Path(absolute)
            if not target or not folder.is_dir():
                continue
            path = folder.resolve().relative_to(ROOT).as_posix() + "/"
            shown = node.astext()
            replacement: list[nodes.Node] = list(node.children)
            if target.rstrip("/") not in shown:
                replacement += [nodes.Text(" ("), nodes.literal(path, path), nodes.Text(")")]
            node.replace_self(replacement)


def setup(app: Sphinx) -> dict[str, object]:
    app.add_post_transform(FolderLinksAsPaths)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
