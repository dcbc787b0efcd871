"""The report on a tiny synthetic set of run files."""

from __future__ import annotations

import os
import re
import zlib
from pathlib import Path
from typing import Any

import matplotlib
import numpy as np
import pytest
from rliable import metrics as rly_metrics

matplotlib.use("Agg")

from benchmarks.harness import report
from benchmarks.harness.metrics import auc
from benchmarks.harness.normalize import RandomScore, save_random_scores
from benchmarks.harness.report import BudgetMismatchError, build_report, collect
from benchmarks.harness.store import write_run_file

ENVS = {
    # name: (budget, r_random, r_ref)
    "CartPole-v1": (1000, 20.0, 500.0),
    "MountainCar-v0": (2000, -200.0, -100.849),
}
# Pages rendered by build_report(reps=50, command=...) and committed under tests/golden/: name ->
# (seeds of make_runs, build_report's keyword arguments). "full" has every optional section (banners,
# ablations, ESS, failed, unreadable and left-out runs); "plain" the other branches.
GOLDEN_PAGES: dict[str, tuple[range, dict[str, Any]]] = {
    "full": (range(3), {}),
    "plain": (range(2), {"target": "complementary-td", "baselines": ("dqn",), "reference": "per", "full_seeds": 2}),
}
# Fraction of the way from random to reference reached at the end of training.
SKILL = {"dqn": 0.7, "per": 0.75, "complementary": 0.9, "complementary-td": 0.6}
KWARGS = {"complementary-td": {"contribution": "td"}}


def synthetic_record(
    contender: str, env: str, seed: int, budget: int | None = None, status: str = "done"
) -> dict[str, Any]:
    env_budget, r_random, r_ref = ENVS[env]
    budget = budget or env_budget
    timesteps = [round(budget * k / 20) for k in range(1, 21)]
    # crc32, not hash(): str hashes are salted per process, and the synthetic runs must not be.
    rng = np.random.default_rng(zlib.crc32(f"{contender}/{env}/{seed}".encode()))
    progress = np.linspace(0.0, 1.0, 20) ** (1.0 / SKILL[contender])
    mean = r_random + (r_ref - r_random) * SKILL[contender] * progress + rng.normal(0, 5, size=20)
    data: dict[str, Any] = {
        "run_id": f"{contender}__{env}__s{seed}",
        "status": status,
        "contender": {"name": contender, "algo": "stable_baselines3:DQN", "kwargs": KWARGS.get(contender, {})},
        "env": {
            "name": env,
            "env_id": env,
            "env_kwargs": {},
            "wrappers": [],
            "budget": budget,
            "r_ref": r_ref,
            "r_ref_source": "rl-zoo3 benchmark.md row 'dqn | x | y'",
        },
        "seed": seed,
        "eval": {"fraction": 0.05, "episodes": 10},
        "versions": {"stable_baselines3": "2.9.2", "torch": "2.x"},
        "code": {"git_commit": "0123456789abcdef", "git_dirty": False},
    }
    if status == "done":
        data["curve"] = {"timesteps": timesteps, "mean": mean.tolist(), "std": [1.0] * 20}
        if contender == "complementary":  # recorded by weighted-replay contenders only
            data["curve"]["ess_fraction"] = np.linspace(0.4, 0.6, 20).tolist() if seed == 0 else [0.1 * seed] * 20
        base = 10.0 * (1.3 if contender.startswith("complementary") else 1.0)
        data["timing"] = {"train_seconds": base * (1 + seed), "train_cpu_seconds": base * (1 + seed)}
    else:
        data["error"] = "RuntimeError: synthetic crash | with a pipe"
        data["traceback"] = "Traceback (most recent call last):\nRuntimeError: synthetic crash\n"
    return data


def make_runs(runs: Path, seeds: range = range(3)) -> None:
    for contender in SKILL:
        for env in ENVS:
            for seed in seeds:
                failed = contender == "complementary-td" and env == "MountainCar-v0" and seed == 2
                write_run_file(runs, synthetic_record(contender, env, seed, status="failed" if failed else "done"))
    save_random_scores(
        runs, {env: RandomScore(r_random, 1.0, 100, 0, "synthetic") for env, (_, r_random, _) in ENVS.items()}
    )


def test_report_writes_tables_and_pngs(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    make_runs(runs)
    (runs / "per__CartPole-v1__s9.json").write_text('{"run_id": "per__Cart')  # half-written
    out = tmp_path / "site"
    readme = build_report(runs, out, reps=50)
    text = readme.read_text()

    assert text.startswith("# Benchmark results")
    assert f"python -m benchmarks.report --runs {runs} --out {out}" in text.split("## Headline")[0]
    assert "First look" in text  # 3 seeds < 10
    for heading in ("## Headline", "## Goal check", "## Wall-clock cost", "## Per environment", "### Failed runs"):
        assert heading in text
    assert "| `complementary` | 3 |" in text
    assert "| `complementary-td` | 2 |" in text  # seed 2 failed on one env: aggregated over 2 seeds
    assert "`complementary-td__MountainCar-v0__s2.json` | RuntimeError: synthetic crash \\| with a pipe" in text
    assert "`complementary-td__CartPole-v1__s2`" in text  # done, but left out of the aggregates: listed
    assert "`per__CartPole-v1__s9.json`" in text  # unreadable: listed
    assert "| `complementary` | `dqn` |" in text and "| `complementary` | `per` |" in text  # P(X > Y) rows
    assert "1.30 [1.30, 1.30] (n=6)" in text  # wall-clock ratio to dqn, all environments
    headline = text.split("## Headline")[1].split("## Goal check")[0]
    assert "| `complementary` | `complementary-td` |" not in headline  # ablation pairs have their own table
    ablations = text.split("## Ablations")[1].split("## Wall-clock cost")[0]
    assert "| `complementary-td` | `contribution='td'` | 2 |" in ablations
    per_env = text.split("Normalised AUC per run")[1].split("Normalisation constants")[0]
    assert "| `complementary-td` |" in per_env and "(3) |" in per_env  # every done run, complete seed or not
    data = collect(runs)
    aucs = [float(auc(data.normalized("dqn", "CartPole-v1", s))) for s in sorted(data.curves["dqn"]["CartPole-v1"])]
    assert f"| `dqn` | {np.mean(aucs):.3f} ± {np.std(aucs, ddof=1):.3f} (3) |" in per_env  # the sample std
    assert "IQM of normalised AUC at least 1.10x" in text
    ess_section = text.split("### How far from uniform the replay samples")[1].split("## Figures")[0]
    # Per run the mean over eval points (0.5, 0.1, 0.2), then the median over seeds.
    assert "| `complementary` | 0.200 (3) | 0.200 (3) |" in ess_section
    assert "`dqn`" not in ess_section  # uniform contenders record no ESS: no row

    expected = {
        "aggregate_auc.png",
        "aggregate_final.png",
        "probability_of_improvement.png",
        "performance_profiles.png",
        "aggregate_curve.png",
        "curves_CartPole-v1.png",
        "curves_MountainCar-v0.png",
    }
    assert expected <= {p.name for p in out.iterdir()}
    for name in expected:
        assert (out / name).stat().st_size > 1000
        assert f"]({name})" in text


#: "point [low, high]": a bootstrap CI (or a wall-clock ratio's [min, max]) after its point estimate.
INTERVAL = re.compile(r"(-?\d+(?:\.\d+)?) \[(-?\d+(?:\.\d+)?), (-?\d+(?:\.\d+)?)\]")


def split_interval_bounds(text: str) -> tuple[str, list[tuple[float, float, float]]]:
    """The page with every interval's bounds replaced by a placeholder, and each (point, low, high)."""
    intervals = [(float(point), float(low), float(high)) for point, low, high in INTERVAL.findall(text)]
    return INTERVAL.sub(r"\1 [low, high]", text), intervals


@pytest.mark.parametrize("name", sorted(GOLDEN_PAGES))
def test_page_matches_the_golden_page(tmp_path: Path, name: str) -> None:
    """
    The whole page, byte for byte but for the bounds of its intervals: any change of wording, layout,
    number format or point estimate fails. The bounds come from rliable's bootstrap (NumPy's global
    generator, seeded by the report per call), so they may move with the versions of rliable, arch
    and NumPy: each must parse, be in order and bracket its point estimate.

    After an intended change of the page, rewrite the golden files with
    ``SB3C_REGENERATE_GOLDEN=1 pytest tests/test_benchmark_report.py -k golden`` and review their diff.
    """
    seeds, kwargs = GOLDEN_PAGES[name]
    runs = tmp_path / "runs"
    make_runs(runs, seeds)
    if name == "full":
        (runs / "per__CartPole-v1__s9.json").write_text('{"run_id": "per__Cart')  # half-written
    command = f"python -m benchmarks.report --runs runs --out site --reps 50 ({name})"
    text = build_report(runs, tmp_path / "site", reps=50, command=command, **kwargs).read_text()
    golden = Path(__file__).parent / "golden" / f"report_{name}.md"
    if os.environ.get("SB3C_REGENERATE_GOLDEN"):
        golden.parent.mkdir(exist_ok=True)
        golden.write_text(text)
    page, intervals = split_interval_bounds(text)
    expected_page, expected_intervals = split_interval_bounds(golden.read_text())
    assert page == expected_page, f"the page differs from {golden}"
    assert len(intervals) == len(expected_intervals) > 40
    for point, low, high in intervals:
        assert low <= point <= high, f"{point} [{low}, {high}]"


def test_first_look_banner_follows_the_planned_seeds(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    make_runs(runs)  # 3 seeds (2 complete for complementary-td)
    text = build_report(runs, tmp_path / "a", reps=20, full_seeds=2).read_text()
    assert "First look" not in text and "still filling in" not in text
    assert "--full-seeds 2" in text.split("## Headline")[0]
    # The headline's contenders (complementary, dqn, per) have 3 seeds; the ablation has 2.
    text = build_report(runs, tmp_path / "b", reps=20, full_seeds=3).read_text()
    assert "First look, not the study" not in text
    assert "Ablations still filling in** (complete seeds of 3 planned): `complementary-td` (2)" in text
    assert "First look, not the study" in build_report(runs, tmp_path / "c", reps=20, full_seeds=4).read_text()


def test_ablation_setting_is_what_differs_from_the_target(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Knobs the ablation shares with the target are not listed; one the target sets and it does not is."""
    monkeypatch.setitem(KWARGS, "complementary", {"alpha": 1.0, "candidate_pool": 4})
    monkeypatch.setitem(KWARGS, "complementary-td", {"alpha": 1.0, "contribution": "td"})
    runs = tmp_path / "runs"
    make_runs(runs)
    ablations = build_report(runs, tmp_path / "site", reps=20).read_text().split("## Ablations")[1]
    assert "| `complementary-td` | `contribution='td'`, `candidate_pool` not set (its run's default) | 2 |" in ablations


def test_an_ablation_done_on_some_entries_only_is_not_filling_in(tmp_path: Path) -> None:
    """Lowest-score eviction runs only where the buffer fills: all its seeds done there, none elsewhere."""
    runs = tmp_path / "runs"
    make_runs(runs)
    for seed in range(3):
        record = synthetic_record("complementary-td", "CartPole-v1", seed)
        record["run_id"], record["contender"] = f"evict__CartPole-v1__s{seed}", {**record["contender"], "name": "evict"}
        write_run_file(runs, record)
    banner = build_report(runs, tmp_path / "site", reps=20, full_seeds=3).read_text().split("## Headline")[0]
    assert "`evict`" not in banner.split("Ablations still filling in")[1].split("\n")[0]
    assert f"Ablations run on some entries only** (entries with 3 seeds done): `evict` (1 of {len(ENVS)})" in banner


def test_ablations_are_complete_at_the_protocols_five_seeds(tmp_path: Path) -> None:
    """The protocol runs ablations at 5 seeds, so a 10-seed study does not list a 5-seed ablation."""
    runs = tmp_path / "runs"
    make_runs(runs, seeds=range(6))  # complementary-td: seed 2 failed on one entry, so 5 complete
    text = build_report(runs, tmp_path / "a", reps=20).read_text().split("## Headline")[0]
    assert "First look, not the study" in text and "still filling in" not in text
    (runs / "complementary-td__CartPole-v1__s5.json").unlink()  # 4 complete
    text = build_report(runs, tmp_path / "b", reps=20).read_text().split("## Headline")[0]
    assert "Ablations still filling in** (complete seeds of 5 planned): `complementary-td` (4)" in text


def test_filling_banner_names_an_ablation_with_no_complete_seed(tmp_path: Path) -> None:
    """An ablation run on one entry only is not aggregated, so only the banner can say it is coming."""
    runs = tmp_path / "runs"
    make_runs(runs)
    late = synthetic_record("complementary-td", "CartPole-v1", 0)
    late["run_id"], late["contender"] = "late__CartPole-v1__s0", {**late["contender"], "name": "late"}
    write_run_file(runs, late)
    text = build_report(runs, tmp_path / "site", reps=20, full_seeds=3).read_text()
    banner = text.split("## Headline")[0]
    assert "`complementary-td` (2), `late` (0)" in banner
    assert "A contender at 0 has no row yet" in banner
    headline = text.split("## Headline")[1].split("\n## ")[0]
    assert "| `complementary-td` | 2 |" in headline and "`late`" not in headline


def test_statistics_on_synthetic_runs(tmp_path: Path) -> None:
    make_runs(tmp_path)
    data = collect(tmp_path)
    assert data.contenders == ["dqn", "per", "complementary", "complementary-td"]
    assert data.complete_seeds["complementary-td"] == [0, 1]
    stats = report.compute_statistics(data, reps=50)
    iqm_dqn = stats.aggregates["AUC"]["dqn"][0]
    iqm_comp = stats.aggregates["AUC"]["complementary"][0]
    assert iqm_comp.point > iqm_dqn.point
    assert iqm_dqn.low <= iqm_dqn.point <= iqm_dqn.high
    assert stats.poi["AUC"][("complementary", "dqn")].point == pytest.approx(1.0)
    assert stats.wallclock["complementary"]["CartPole-v1"].median == pytest.approx(1.3)
    assert "dqn" not in stats.wallclock
    ratio = stats.iqm_ratio["complementary"]
    assert ratio.low <= ratio.point <= ratio.high and ratio.point > 1.0
    # The ablation (skill 0.6) against the default (0.9): below it, on every seed and environment.
    assert stats.ablations == ["complementary-td"]
    assert stats.ablation_ratio["complementary-td"].high < 1.0
    assert stats.poi["AUC"][("complementary", "complementary-td")].point == pytest.approx(1.0)
    tau, profiles, profile_cis = stats.profiles["AUC"]
    assert profiles["dqn"].shape == tau.shape and profile_cis["dqn"].shape == (2, *tau.shape)
    # Reproducible whatever the state of NumPy's global generator (rliable resamples from it).
    np.random.seed(12345)
    again = report.compute_statistics(data, reps=50)
    assert again.aggregates == stats.aggregates and again.poi == stats.poi and again.iqm_ratio == stats.iqm_ratio


def test_mismatched_budgets_are_refused(tmp_path: Path) -> None:
    make_runs(tmp_path, seeds=range(2))
    write_run_file(tmp_path, synthetic_record("dqn", "CartPole-v1", 5, budget=4000))
    with pytest.raises(BudgetMismatchError, match=r"CartPole-v1: runs with different budgets") as info:
        build_report(tmp_path, tmp_path / "site", reps=10)
    assert "dqn__CartPole-v1__s5.json" in str(info.value)
    assert "MountainCar-v0" not in str(info.value)
    assert not (tmp_path / "site" / "README.md").exists()
    assert report.main(["--runs", str(tmp_path), "--out", str(tmp_path / "site"), "--reps", "10"]) == 2


def test_no_runs_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="no readable run file"):
        collect(tmp_path)


def test_goals_per_suite(tmp_path: Path) -> None:
    """Each suite is judged on its own entries, by the goal of the other contender's role."""
    runs = tmp_path / "runs"
    make_runs(runs)
    for seed in range(3):  # PER has no run on the second suite's entry yet
        (runs / f"per__MountainCar-v0__s{seed}.json").unlink()
    suites = report.parse_suites("classic=CartPole-v1;non-stationary=MountainCar-v0")
    data = collect(runs)
    rows = report.suite_comparisons(data, "complementary", "dqn", ["per"], "complementary-td", suites, reps=50)
    by_key = {(r.suite, r.other): r for r in rows}
    assert [(r.suite, r.other, r.role) for r in rows[:3]] == [
        ("classic", "dqn", "reference"),
        ("classic", "per", "baseline"),
        ("classic", "complementary-td", "control"),
    ]
    dqn = by_key[("classic", "dqn")]
    scores = {c: np.array([[float(auc(data.normalized(c, "CartPole-v1", s)))] for s in range(3)]) for c in SKILL}
    expected = rly_metrics.aggregate_iqm(scores["complementary"]) / rly_metrics.aggregate_iqm(scores["dqn"])
    assert dqn.ratio is not None and dqn.ratio.point == pytest.approx(expected)
    assert dqn.met == (expected >= report.REFERENCE_RATIO_GOAL["classic"] and dqn.p is not None and dqn.p.low > 0.5)
    # The control lost every pair (skill 0.6 against 0.9): P = 1, so the control goal holds.
    control = by_key[("classic", "complementary-td")]
    assert control.p is not None and control.p.point == pytest.approx(1.0) and control.met
    # seed 2 of the control failed on MountainCar-v0: that suite compares the two seeds both have.
    assert by_key[("non-stationary", "complementary-td")].seeds == [0, 1]
    # No PER run on the suite's entry: no figure and no verdict.
    per = by_key[("non-stationary", "per")]
    assert per.missing == ["MountainCar-v0"] and per.ratio is None and per.met is None
    # A held-out replication: only the seeds asked for.
    held_out = report.suite_comparisons(data, "complementary", "dqn", [], None, suites, reps=50, seeds=[1, 2])
    assert {tuple(r.seeds) for r in held_out} == {(1, 2)} and len(held_out) == 2

    page = build_report(
        runs,
        tmp_path / "site",
        reps=50,
        baselines=("dqn", "per", "complementary-td"),
        control="complementary-td",
        suites="classic=CartPole-v1;non-stationary=MountainCar-v0",
    ).read_text()
    assert "## Goals per suite" in page and "## Goal check" not in page
    assert "| `per` | 0; no runs yet on MountainCar-v0 | n/a | n/a | not worse (ratio ≥ 1.00) | n/a |" in page
    assert "**non-stationary suite** (MountainCar-v0)" in page


def test_suite_goals_refuse_bad_input(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="suite 'atari' has no goal in the protocol"):
        report.parse_suites("atari=Pong")
    with pytest.raises(ValueError, match="suite 'classic' names no entry"):
        report.parse_suites("classic=")
    make_runs(tmp_path, seeds=range(2))
    with pytest.raises(ValueError, match="control 'complementary-td' must be one of the baselines"):
        build_report(tmp_path, tmp_path / "site", reps=10, control="complementary-td", suites="classic=CartPole-v1")


def test_a_baseline_with_no_complete_seed_makes_a_first_look(tmp_path: Path) -> None:
    """A baseline missing from an entry is not aggregated at all; the page must still say it is incomplete."""
    runs = tmp_path / "runs"
    make_runs(runs, seeds=range(2))
    for seed in range(2):
        (runs / f"per__MountainCar-v0__s{seed}.json").unlink()
    text = build_report(runs, tmp_path / "site", reps=10, full_seeds=2).read_text()
    assert "First look, not the study:** some contenders have fewer than 2 complete seeds (fewest: 0)" in text
