"""
The runs section of the report page: seeds done and failed, failed, unreadable and left-out runs, code and
library versions.
"""

from __future__ import annotations

from collections import defaultdict

from benchmarks.harness.report.collect import ReportData
from benchmarks.harness.report.markdown import join_blocks, markdown_table


def runs_section(data: ReportData) -> str:
    """Completeness: seeds done and failed, failed, unreadable and left-out runs, code and library versions."""
    failed = sorted((r for r in data.records if r.status == "failed"), key=lambda r: r.run_id)
    failed_blocks = (
        (
            markdown_table(["run file", "error"], [[f"`{r.path.name}`", r.error[:300]] for r in failed]),
            "The full traceback is in each run file (`traceback`). Failed runs are not in the aggregates.",
        )
        if failed
        else ("None.",)
    )
    unreadable_blocks = (
        (
            "### Unreadable run files",
            "These files are half-written or corrupt; the runner redoes them:",
            "\n".join(f"- `{path.name}`" for path in data.corrupt),
        )
        if data.corrupt
        else ()
    )
    left_out = sorted(
        (r for r in data.records if r.status == "done" and r.seed not in data.complete_seeds.get(r.contender, [])),
        key=lambda r: r.run_id,
    )
    left_out_blocks = (
        (
            "### Done runs left out of the aggregates",
            "Their seed is not done on every environment for that contender yet (they are in the learning curves):",
            ", ".join(f"`{r.run_id}`" for r in left_out),
        )
        if left_out
        else ()
    )
    return join_blocks(
        "## Runs",
        "Seeds done (failed) per contender and environment:",
        _status_table(data),
        "### Failed runs",
        *failed_blocks,
        *unreadable_blocks,
        *left_out_blocks,
        "### Code and library versions",
        _versions_table(data),
    )


def _status_table(data: ReportData) -> str:
    """Seeds done (and failed) per contender and environment, and the complete seeds."""
    status: dict[tuple[str, str], list[int]] = defaultdict(lambda: [0, 0])
    for record in data.records:
        status[(record.contender, record.env)][0 if record.status == "done" else 1] += 1

    def cell(contender: str, env: str) -> str:
        done, failed = status[(contender, env)]
        return f"{done}" + (f" ({failed} failed)" if failed else "")

    return markdown_table(
        ["contender", *data.envs, "complete seeds"],
        [
            [f"`{c}`", *[cell(c, e) for e in data.envs], ",".join(map(str, data.complete_seeds[c])) or "none"]
            for c in data.contenders
        ],
    )


def _versions_table(data: ReportData) -> str:
    """Git commit of the runner per contender (marked when dirty), then the library versions the runs recorded."""
    by_contender: dict[str, set[str]] = defaultdict(set)
    libraries: dict[str, set[str]] = defaultdict(set)
    for record in data.records:
        code = record.data.get("code", {})
        commit = code.get("git_commit") or "unknown"
        dirty = f" (dirty, package {code.get('package_sha256')})" if code.get("git_dirty") else ""
        label = f"{commit[:10]}{dirty}"
        by_contender[record.contender].add(label)
        for name, version in record.data.get("versions", {}).items():
            libraries[name].add(str(version))
    rows = [[f"`{c}`", ", ".join(sorted(by_contender[c]))] for c in data.contenders]
    table = markdown_table(["contender", "code (git commit of the runner)"], rows)
    libs = "; ".join(f"{name} {', '.join(sorted(versions))}" for name, versions in sorted(libraries.items()))
    return table + "\n\nLibraries: " + libs + "."
