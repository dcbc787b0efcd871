"""The gates of a screen (docs/benchmarks/protocol.md, "Screens before studies"), from its run files.

For each candidate, on the entries where every named contender has all its seeds:

1. **The extractor learns**: the held-out ROC AUC of its classifier (run files' ``roc_auc``), averaged
   over the eval points from a quarter of the budget on (after warm-up), per entry; the gate
   wants at least 0.65 on at least two entries. It does not apply to a candidate that learns
   nothing (no ``roc_auc``: fresh |TD|, ReLo).
2. **It changes the draws or the weights**: the ESS fraction of the replay distribution over the
   same eval points (``ess_fraction``); the gate wants at most 0.9 (the mean over the entries).
3. **No harm**: on every entry the candidate's mean normalised AUC is at least 0.95x that of the
   first baseline (DQN).
4. **The learned part matters** (with ``--fixed``, the same machinery with a fixed selection):
   P(candidate > fixed) has a lower CI bound above 0.5 over both suites together, and the candidate
   is not worse on either suite alone (its IQM ratio's CI does not lie wholly below 1).

Until 2026-12-06 gate 3 was "it beats the control" (IQM of the normalised AUC against the
control's, with a stratified-bootstrap 95% CI, and P(candidate > control)); it is printed when
``--control`` is given. The IQM ratios to the baselines (DQN, PER) are printed too, over all
complete entries and per suite (classic, non-stationary).

A learned selection strength (``alpha="auto"``) also shows the strength it used after warm-up
(``strength``), per entry. Usage::

    python -m benchmarks.diagnostics.screen_gates docs/benchmarks/screen/runs \\
        --candidates density-sampling,density-loss --control density-control --out docs/benchmarks/screen/gates.md
"""

from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.harness.metrics import auc, mean_pm_std
from benchmarks.harness.report import (
    Interval,
    ReportData,
    collect,
    iqm_ratios,
    parse_suites,
)
from benchmarks.harness.report.goals import probability_of_improvement

AUC_GATE, ESS_GATE, HARM_GATE = 0.65, 0.9, 0.95
#: The protocol's two suites, as the screen's entries are named.
SUITES = (
    "classic=CartPole-v1,MountainCar-v0,LunarLander-v3;"
    "non-stationary=CartPole-drift,CartPole-family-uniform,CartPole-family-sequential"
)


def after_warmup(record: dict, key: str) -> float:
    """Mean of a run's per-eval-point diagnostic from a quarter of the budget on (NaN if absent)."""
    curve = record.get("curve", {})
    if key not in curve:
        return float("nan")
    steps = np.asarray(curve["timesteps"], dtype=float)
    values = np.asarray([np.nan if v is None else v for v in curve[key]], dtype=float)
    values = values[steps >= record["env"]["budget"] / 4]
    return float(np.nanmean(values)) if np.isfinite(values).any() else float("nan")


def mean(values: np.ndarray) -> float:
    """Mean over the finite values; NaN when there is none (a uniform contender records no diagnostics)."""
    finite = values[np.isfinite(values)]
    return float(finite.mean()) if finite.size else float("nan")


def fmt(value: float, digits: int = 3) -> str:
    return "–" if np.isnan(value) else f"{value:.{digits}f}"


def spread(values: np.ndarray) -> str:
    """Mean ± sample std over seeds, or a dash when the run files record nothing."""
    finite = values[np.isfinite(values)]
    return "–" if finite.size == 0 else mean_pm_std(finite, 3)


def restrict(data: ReportData, contenders: list[str], seeds: list[int]) -> ReportData:
    """The entries on which every contender has every seed done, and only those contenders."""
    envs = [e for e in data.envs if all(set(seeds) <= set(data.curves.get(c, {}).get(e, {})) for c in contenders)]
    return dataclasses.replace(
        data, envs=envs, contenders=contenders, complete_seeds={c: list(seeds) for c in contenders}
    )


def probability(scores: dict[str, np.ndarray], x: str, y: str, reps: int) -> Interval:
    """P(x > y) over the entries, with its stratified-bootstrap 95% CI."""
    return probability_of_improvement(scores[x], scores[y], reps, seed=0)


def comparisons(
    scores: dict[str, np.ndarray], candidate: str, control: str | None, baselines: list[str], reps: int
) -> tuple[Any, str, list[str]]:
    """IQM AUC ratio to the control, P(candidate > control), and the IQM AUC ratios to the baselines."""
    to_baselines = [iqm_ratios(scores, [candidate], b, reps, 0)[candidate].fmt() for b in baselines]
    if control is None:
        return None, "", to_baselines
    ratio = iqm_ratios(scores, [candidate], control, reps, 0)[candidate]
    return ratio, probability(scores, candidate, control, reps).fmt(), to_baselines


def emit(lines: list[str], out: Path | None) -> None:
    """Print the page, and write it to ``out`` when one is given."""
    text = "\n".join(lines) + "\n"
    print(text)
    if out:
        out.write_text(text)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("runs", type=Path)
    parser.add_argument("--candidates", required=True)
    parser.add_argument("--control", default=None, help="the alpha=0 control (left out when not given)")
    parser.add_argument("--baselines", default="dqn,per", help="the first is the no-harm gate's reference")
    parser.add_argument("--fixed", default=None, help="the same machinery with a fixed selection (gate 4)")
    parser.add_argument("--seeds", default="0,1,2,3,4")
    parser.add_argument("--reps", type=int, default=2000)
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument(
        "--suites",
        default=SUITES,
        help="per-suite comparisons: 'name=entry,entry;name=entry' (the protocol's two suites by default)",
    )
    args = parser.parse_args(argv)
    candidates = args.candidates.split(",")
    baselines = [b for b in args.baselines.split(",") if b]
    seeds = [int(s) for s in args.seeds.split(",")]
    fixed = [args.fixed] if args.fixed else []
    control = [args.control] if args.control else []
    contenders = [*candidates, *fixed, *control, *baselines]
    data = restrict(collect(args.runs), contenders, seeds)
    if not data.envs:
        raise SystemExit("no entry has every seed of every contender yet")
    records = {(r.contender, r.env, r.seed): r.data for r in data.records if r.status == "done"}
    lines = [
        f"Screen gates over {len(data.envs)} entries ({', '.join(data.envs)}), seeds {args.seeds}; "
        f"diagnostics averaged over the eval points from a quarter of the budget on.",
        "",
        "| contender | entry | held-out ROC AUC | ESS fraction | weight p5 / p95 / max | strength | normalised AUC "
        "| AUC over the second half |",
        "|---|---|---|---|---|---|---|---|",
    ]
    gates: dict[str, dict[str, float]] = {}
    for contender in contenders:
        aucs, esses = [], []
        for env in data.envs:
            runs = [records[(contender, env, s)] for s in seeds]
            diagnostics = {
                key: np.array([after_warmup(r, key) for r in runs])
                for key in ("roc_auc", "ess_fraction", "weight_p5", "weight_p95", "weight_max", "strength")
            }
            score = np.array([auc(data.normalized(contender, env, s)) for s in seeds])
            half = len(data.timesteps[env]) // 2  # the drift entry switches task at half the budget
            late = np.array([auc(data.normalized(contender, env, s)[half:]) for s in seeds])
            aucs.append(mean(diagnostics["roc_auc"]))
            esses.append(mean(diagnostics["ess_fraction"]))
            weights = " / ".join(fmt(mean(diagnostics[k]), 2) for k in ("weight_p5", "weight_p95", "weight_max"))
            lines.append(
                f"| {contender} | {env} | {spread(diagnostics['roc_auc'])} | {fmt(esses[-1])} | {weights} | "
                f"{spread(diagnostics['strength'])} | "
                f"{spread(score)} | {spread(late)} |"
            )
        gates[contender] = {
            "auc_entries": sum(a >= AUC_GATE for a in aucs),
            "classifier": any(np.isfinite(aucs)),
            "ess": float(np.mean(esses)),
        }
    scores = {c: data.score_matrix(c, auc) for c in contenders}

    lines += [
        "",
        "| candidate | gate 1: entries with AUC ≥ 0.65 | gate 2: mean ESS ≤ 0.9 |"
        + (" IQM AUC / control [95% CI] | P(candidate > control) [95% CI] |" if control else "")
        + "".join(f" IQM AUC / {b} |" for b in baselines),
        "|---|---|---|" + "---|" * (len(control) * 2 + len(baselines)),
    ]
    for candidate in candidates:
        ratio, p_control, to_baselines = comparisons(scores, candidate, args.control, baselines, args.reps)
        g = gates[candidate]
        gate_1 = f"{g['auc_entries']} of {len(data.envs)} ({'pass' if g['auc_entries'] >= 2 else 'fail'})"
        lines.append(
            f"| {candidate} | {gate_1 if g['classifier'] else 'n/a (nothing learned)'} | "
            f"{g['ess']:.3f} ({'pass' if g['ess'] <= ESS_GATE else 'fail'}) |"
            + (f" {ratio.fmt()} ({'pass' if ratio.point > 1 else 'fail'}) | {p_control} |" if ratio else "")
            + "".join(f" {r} |" for r in to_baselines)
        )
    for suite, members in parse_suites(args.suites).items():
        envs = [e for e in members if e in data.envs]
        if not envs:
            continue
        subset = dataclasses.replace(data, envs=envs)
        suite_scores = {c: subset.score_matrix(c, auc) for c in contenders}
        missing = sorted(set(members) - set(envs))
        lines += [
            "",
            f"{suite} suite ({', '.join(envs)}{'; not complete yet: ' + ', '.join(missing) if missing else ''}):",
            "",
            "| candidate |"
            + (" IQM AUC / control [95% CI] | P(candidate > control) [95% CI] |" if control else "")
            + "".join(f" IQM AUC / {b} |" for b in baselines),
            "|---|" + "---|" * (len(control) * 2 + len(baselines)),
        ]
        for candidate in candidates:
            ratio, p_control, to_baselines = comparisons(suite_scores, candidate, args.control, baselines, args.reps)
            cells = f" {ratio.fmt()} | {p_control} |" if ratio else ""
            lines.append(f"| {candidate} |{cells}" + "".join(f" {r} |" for r in to_baselines))
    lines += no_harm_lines(data, [*candidates, *fixed], baselines[0] if baselines else "dqn")
    if args.fixed:
        lines += learned_part_lines(data, candidates, args.fixed, parse_suites(args.suites), args.reps)
    emit(lines, args.out)


def no_harm_lines(data: ReportData, candidates: list[str], reference: str) -> list[str]:
    """Gate 3: per entry, the candidate's mean normalised AUC over the reference's (at least 0.95)."""
    if reference not in data.contenders:
        return []
    seeds = data.complete_seeds[reference]
    lines = [
        "",
        f"No harm (gate 3): mean normalised AUC / {reference}'s, per entry (at least {HARM_GATE}):",
        "",
        "| candidate | " + " | ".join(data.envs) + " | gate 3 |",
        "|---|" + "---|" * (len(data.envs) + 1),
    ]
    for candidate in candidates:
        ratios = [
            np.mean([auc(data.normalized(candidate, env, s)) for s in seeds])
            / np.mean([auc(data.normalized(reference, env, s)) for s in seeds])
            for env in data.envs
        ]
        failing = [env for env, r in zip(data.envs, ratios, strict=True) if r < HARM_GATE]
        verdict = "pass" if not failing else f"fail on {', '.join(failing)}"
        lines.append(f"| {candidate} | " + " | ".join(f"{r:.2f}" for r in ratios) + f" | {verdict} |")
    return lines


def learned_part_lines(
    data: ReportData, candidates: list[str], fixed: str, suites: dict[str, list[str]], reps: int
) -> list[str]:
    """Gate 4: P(candidate > fixed) over both suites together, and the IQM ratio and P suite by suite."""
    lines = [
        "",
        f"The learned part (gate 4): each candidate against `{fixed}`, the same machinery with a fixed selection:",
        "",
        "| candidate | entries | IQM AUC / fixed [95% CI] | P(candidate > fixed) [95% CI] | gate 4 |",
        "|---|---|---|---|---|",
    ]
    groups = {"both suites": list(data.envs)} | {
        name: [e for e in members if e in data.envs] for name, members in suites.items()
    }
    for candidate in candidates:
        rows, failures = [], []
        for name, envs in groups.items():
            if not envs:
                continue
            subset = dataclasses.replace(data, envs=envs)
            scores = {c: subset.score_matrix(c, auc) for c in (candidate, fixed)}
            ratio = iqm_ratios(scores, [candidate], fixed, reps, 0)[candidate]
            p = probability(scores, candidate, fixed, reps)
            if name == "both suites" and p.low <= 0.5:
                failures.append("P's lower bound at most 0.5")
            elif name != "both suites" and ratio.high < 1:
                failures.append(f"worse on {name}")
            rows.append(f"| {candidate} | {name} ({len(envs)}) | {ratio.fmt()} | {p.fmt()} |")
        verdict = "fail: " + "; ".join(failures) if failures else "pass"
        lines += [rows[0] + f" {verdict} |"] + [row + " |" for row in rows[1:]]
    return lines


if __name__ == "__main__":
    main()
