"""
The header of the report page: title, the command that regenerates it, what it is made from, and the
first-look banners.
"""

from __future__ import annotations

from collections.abc import Sequence

from benchmarks.harness.report.collect import ReportData
from benchmarks.harness.report.markdown import join_blocks

#: Seeds the protocol plans for an ablation (never more than the study's own ``full_seeds``).
ABLATION_SEEDS = 5


def _seeds_per_entry(data: ReportData, contender: str) -> dict[str, int]:
    """:return: Done seeds of ``contender`` per entry it has run on (entries with none are left out)."""
    return {env: len(data.curves[contender][env]) for env in data.envs if data.curves.get(contender, {}).get(env)}


def header_section(
    data: ReportData,
    command: str,
    reps: int,
    target: str,
    baselines: Sequence[str],
    reference: str,
    full_seeds: int,
    title: str,
) -> str:
    """Title, the command that regenerates the page, what it is made from, and the first-look banners."""
    n_done = sum(r.status == "done" for r in data.records)
    n_failed = sum(r.status == "failed" for r in data.records)
    unreadable = f", plus {len(data.corrupt)} unreadable" if data.corrupt else ""
    # Both banners count every contender with runs, from the run files rather than the
    # statistics: one with no seed done on every entry is not aggregated, so it has no row, and
    # the banner is the only place the page says it is coming. The headline's contenders decide
    # the first look; the others are the ablations.
    headline = [c for c in data.contenders if c in (target, reference, *baselines)]
    min_seeds = min((len(data.complete_seeds[c]) for c in headline), default=0)
    first_look = (
        f"> **First look, not the study:** some contenders have fewer than {full_seeds} complete seeds "
        f"(fewest: {min_seeds}). Numbers will move as the matrix fills."
        if min_seeds < full_seeds
        else ""
    )
    ablation_seeds = min(full_seeds, ABLATION_SEEDS)
    short = [c for c in data.contenders if c not in headline and len(data.complete_seeds[c]) < ablation_seeds]
    # An ablation with its seeds done on some entries only was left off the others on purpose: it
    # is not filling in, and only the per-environment tables show it.
    per_entry = {c: _seeds_per_entry(data, c) for c in short}
    partial = [
        c
        for c in short
        if len(per_entry[c]) < len(data.envs) and min(per_entry[c].values(), default=0) >= ablation_seeds
    ]
    filling = [c for c in short if c not in partial]
    counts = ", ".join(f"`{c}` ({len(data.complete_seeds[c])})" for c in filling)
    no_row = (
        " A contender at 0 has no row yet: none of its seeds is done on every entry."
        if any(not data.complete_seeds[c] for c in filling)
        else ""
    )
    filling_banner = (
        f"> **Ablations still filling in** (complete seeds of {ablation_seeds} planned): {counts}. "
        f"Their rows are a first look.{no_row}"
        if filling
        else ""
    )
    partial_note = ", ".join(f"`{c}` ({len(per_entry[c])} of {len(data.envs)})" for c in partial)
    partial_banner = (
        f"> **Ablations run on some entries only** (entries with {ablation_seeds} seeds done): {partial_note}. "
        "They have no aggregate row; the per-environment tables show them."
        if partial
        else ""
    )
    return join_blocks(
        f"# {title}",
        "Regenerate every table and figure of this page from the run files:",
        f"```bash\n{command}\n```",
        f"Generated from {len(data.records)} run files ({n_done} done, {n_failed} failed{unreadable}); "
        f"stratified bootstrap 95% CIs with {reps} replications. Protocol: `docs/benchmarks/protocol.md`; "
        "the runs are produced by `python -m benchmarks.run`.",
        first_look,
        filling_banner,
        partial_banner,
    )
