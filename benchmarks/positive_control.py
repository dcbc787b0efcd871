"""
The positive control of the replay benchmark (issue 45): updates to learn Blind Cliffwalk's values.

Schaul et al. (ICLR 2016, Figures 1-2) show that on Blind Cliffwalk replaying the one rewarding
transition first saves a number of updates that grows exponentially with the chain length: the
one effect prioritized replay is known for. This script measures whether the replays of this
package show it, with SB3's own models and ``train()``:

    python benchmarks/positive_control.py run            # every run not on disk yet (resumable)
    python benchmarks/positive_control.py report         # the results page and plot, from the run files

Protocol (each choice and why):

- Env: :mod:`blind_cliffwalk`, ``n`` states, ``gamma = 1 - 1/n`` (the paper's), right actions drawn
  from the seed.
- Q: linear on one-hot states (``net_arch=[]``) with the bias removed (frozen at 0) and the weights
  set to 0, so the Q-network *is* a table and starts at 0, as tabular Q-learning does (the wrong
  actions' values start right; the reward must be carried back).
- Optimiser: plain SGD at learning rate 0.5 on SB3's batch-mean Huber loss (which is the squared
  loss here: ``|TD| <= 1``). With one-hot inputs an update moves each ``Q(s, a)`` by 0.5 times the
  weighted mean of its TD errors in the batch: tabular Q-learning. At 0.5 a full-weight hit halves
  a link's error and no batch overshoots (PER's, fresh |TD|'s and the density ratio's weights are at
  most 1, and a batch's weights on one entry sum to at most its size). At 1 a single hit would set a
  value exactly, and any IS weight below 1 could only slow a learner down. SB3's default, Adam,
  rescales each entry's step by its own gradient history and would blur what the draws do.
- Target: copied from the Q-network after every update (``tau = 1`` every step): plain Q-learning,
  as in the paper. SB3 updates its target in ``_on_step``, which ``train()`` alone never calls, so
  the copy is made here.
- Replay: prefilled by uniformly random actions for ``8 * 2**n`` env steps (about four rewarding
  episodes on average; if none came, it goes on until the first one, and ``prefill_steps`` says so),
  then never added to. ``learning_starts`` plays no part: ``train(gradient_steps=1, batch_size=B)``
  is called directly.
- IS exponent: PrioritizedDQN anneals ``beta`` from 0.4 to 1 over ``1 - _current_progress_remaining``,
  which ``learn()`` sets and ``train()`` alone leaves at 1 (beta would stay 0.4). It is set here to
  ``1 - updates / cap`` before each update, as ``learn(total_timesteps=cap)`` would; the beta
  reached is recorded. ComplementaryDQN's exponent is fixed (LaBER 1, fresh |TD| and the density
  ratio 0).
- Density ratio: the extractor runs the schedule ``learn()`` would run over the prefill (a fit every
  500 env steps once the buffer holds twice the fast memory, a re-score every 1,000 and one at the
  end), with its Adam learning rate set to 1e-3 (its default ``lr_ratio`` of 0.25 times this SGD
  rate would give it 0.125). No env step follows, so no later fit.
- Measure: updates until the mean squared error of Q over every (state, action) pair to the true Q
  is below ``tolerance`` (1e-3), or null at ``cap`` updates (16 times the prefill).
- Draws: every batch is counted for the rewarding transitions (reward 1) it holds and the IS weight
  they carry, against the uniform rate (their share of the buffer), over the whole run and while the
  last state's value is still below 0.9.

Regimes: ``paper`` (batch 1, one transition per update, as the paper) and ``dqn`` (batch 32).
Contenders: ``dqn`` (SB3's DQN, uniform), ``per`` (PrioritizedDQN), ``laber`` (ComplementaryDQN's
default), ``fresh_td`` and ``density_ratio`` (ComplementaryDQN's contributions), and the triage's
three candidates (``triage.py``: ``rank``, ``anneal``, ``ratio_td``; ``ratio_td`` runs the
extractor's schedule as ``density_ratio`` does). Two diagnostic
variants of PER, for why it does what it does (not contenders): ``per_td_init`` (the prefill's
priorities set to its |TD| under the initial Q instead of PER's "new transitions at the maximum
priority"), ``per_beta0`` (IS exponent 0 throughout: no IS weights) and ``per_fresh`` (every
stored transition's priority set to its |TD| under the current Q before each update: PER without
stale priorities, which only a table this small makes cheap).

One JSON file per (contender, regime, n, seed) under ``--out``; a file already there is skipped.
"""

import argparse
import json
import shlex
import subprocess
import sys
import time
from collections.abc import Callable
from datetime import date
from pathlib import Path
from typing import Any

import numpy as np
import torch as th
from stable_baselines3 import DQN
from stable_baselines3.common.logger import Logger

sys.path.insert(0, str(Path(__file__).resolve().parent))
from blind_cliffwalk import BlindCliffwalk, default_gamma, true_q
from blind_cliffwalk_report import write_report
from triage import TriageDQN

from sb3_complementary import ComplementaryDQN, ExtractorTrainingCallback, PrioritizedDQN

ROOT = Path(__file__).resolve().parent.parent
RUNS = ROOT / "docs" / "benchmarks" / "blind-cliffwalk" / "runs"
PAGE = ROOT / "docs" / "results" / "blind_cliffwalk.md"
PLOT = ROOT / "docs" / "results" / "blind_cliffwalk.png"

LEARNING_RATE = 0.5
TOLERANCE = 1e-3
#: The cap, in multiples of the prefill (``8 * 2**n`` transitions).
CAP_FACTOR = 16
PREFILL_FACTOR = 8
#: The extractor's Adam learning rate (its ``lr_ratio`` is set from it).
EXTRACTOR_LR = 1e-3
#: A value of the last state above this counts as "the reward is learned" (its true value is 1).
LEARNED_LAST = 0.9
REGIMES = {"paper": 1, "dqn": 32}
CONTENDERS = ("dqn", "per", "laber", "fresh_td", "density_ratio", "rank", "anneal", "ratio_td")
#: The triage's candidates (``triage.py``): the contender's name is its ``selection``.
TRIAGE = ("rank", "anneal", "ratio_td")
#: Contenders with an experience extractor, which runs ``learn()``'s schedule over the prefill.
WITH_EXTRACTOR = ("density_ratio", "ratio_td")
DIAGNOSTICS = ("per_td_init", "per_beta0", "per_fresh")
LABELS = {
    "dqn": "DQN (uniform)",
    "per": "PrioritizedDQN",
    "laber": "ComplementaryDQN (LaBER, default)",
    "fresh_td": 'ComplementaryDQN(contribution="fresh_td")',
    "density_ratio": 'ComplementaryDQN(contribution="density_ratio")',
    "rank": "triage: rank-based selection on LaBER's pool, no IS weights",
    "anneal": "triage: LaBER's pool, IS exponent annealed 0 to 1",
    "ratio_td": "triage: ratio x |TD| on the pool, weights remove only the |TD| part",
    "per_td_init": "PER, prefill priorities = initial |TD| (diagnostic)",
    "per_beta0": "PER, IS exponent 0 (diagnostic)",
    "per_fresh": "PER, every priority fresh before each update (diagnostic)",
}


def build_model(contender: str, env: BlindCliffwalk, n: int, seed: int) -> Any:
    """The contender's SB3 model with a tabular Q (module docstring), its logger silent."""
    common: dict[str, Any] = {
        "learning_rate": LEARNING_RATE,
        "buffer_size": 2 * PREFILL_FACTOR * 2**n,  # room for a prefill that waits for its first reward
        "gamma": default_gamma(n),
        "policy_kwargs": {"net_arch": [], "optimizer_class": th.optim.SGD},
        "device": "cpu",
        "seed": seed,
    }
    if contender == "dqn":
        model = DQN("MlpPolicy", env, **common)
    elif contender in ("per", "per_td_init", "per_fresh"):
        model = PrioritizedDQN("MlpPolicy", env, **common)
    elif contender == "per_beta0":
        model = PrioritizedDQN("MlpPolicy", env, beta=0.0, **common)
    elif contender == "laber":
        model = ComplementaryDQN("MlpPolicy", env, **common)
    elif contender == "fresh_td":
        model = ComplementaryDQN("MlpPolicy", env, contribution="fresh_td", **common)
    elif contender == "density_ratio":
        model = ComplementaryDQN(
            "MlpPolicy",
            env,
            contribution="density_ratio",
            extractor_kwargs={"lr_ratio": EXTRACTOR_LR / LEARNING_RATE},
            **common,
        )
    elif contender in TRIAGE:
        extractor = {"extractor_kwargs": {"lr_ratio": EXTRACTOR_LR / LEARNING_RATE}} if contender == "ratio_td" else {}
        kind = "density_ratio" if contender == "ratio_td" else "laber"
        model = TriageDQN("MlpPolicy", env, selection=contender, contribution=kind, **extractor, **common)
    else:
        raise ValueError(f"unknown contender {contender!r}")
    model.set_logger(Logger(folder=None, output_formats=[]))
    for network in (model.q_net, model.q_net_target):
        linear = network.q_net[0]
        assert isinstance(linear, th.nn.Linear) and linear.in_features == n, "net_arch=[] must give one linear layer"
        linear.weight.data.zero_()
        linear.bias.data.zero_()
        linear.bias.requires_grad_(False)  # no shared term: each Q(s, a) is its own weight
    return model


def prefill(model: Any, env: BlindCliffwalk, n: int, seed: int, contender: str) -> int:
    """
    Fill the replay by uniformly random actions for ``8 * 2**n`` env steps, on until the first
    rewarding transition if none came; with ``density_ratio``, run the extractor's schedule as
    ``learn()`` would over these steps. Return the number of steps.
    """
    rng = np.random.default_rng([seed, n, 7])
    buffer = model.replay_buffer
    obs, _ = env.reset()
    steps, rewarded = 0, False
    schedule = None
    if contender in WITH_EXTRACTOR:  # the extractor's schedule, as learn() would add it
        schedule = ExtractorTrainingCallback()
        schedule.init_callback(model)
    while steps < PREFILL_FACTOR * 2**n or not rewarded:
        if steps >= buffer.buffer_size:
            raise RuntimeError(f"no rewarding transition in {steps} random steps (n={n}, seed={seed})")
        action = int(rng.integers(2))
        next_obs, reward, terminated, _, _ = env.step(action)
        rewarded |= reward > 0
        buffer.add(obs[None], next_obs[None], np.array([[action]]), np.array([reward]), np.array([terminated]), [{}])
        steps += 1
        model.num_timesteps = steps
        if schedule is not None:
            schedule.on_rollout_end()  # what learn() runs at each rollout's end
        obs = env.reset()[0] if terminated else next_obs
    if contender in WITH_EXTRACTOR:
        model.refresh_scores()
    return steps


class DrawCounter:
    """
    Counts, in every batch a model draws, the rewarding transitions (reward 1) and the IS weight
    they carry: the "does the replay find the rewarding transition" measure.
    """

    def __init__(self) -> None:
        self.phase = "unlearned"  # until the last state's value passes LEARNED_LAST
        self.counts = {
            phase: {"slots": 0, "rewarding": 0, "weight": 0.0, "rewarding_weight": 0.0, "updates": 0}
            for phase in ("unlearned", "learned")
        }

    def record(self, rewards: th.Tensor, weights: th.Tensor | None) -> None:
        hit = (rewards.reshape(-1) > 0.5).numpy()
        w = np.ones(len(hit)) if weights is None else weights.detach().reshape(-1).numpy().astype(np.float64)
        c = self.counts[self.phase]
        c["slots"] += len(hit)
        c["rewarding"] += int(hit.sum())
        c["weight"] += float(w.sum())
        c["rewarding_weight"] += float(w[hit].sum())
        c["updates"] += 1

    def attach(self, model: Any) -> None:
        """Wrap the model's draw: ``_draw_batch`` for the weighted replays, the buffer's ``sample`` for DQN."""
        if hasattr(model, "_draw_batch"):
            draw = model._draw_batch

            def counted_draw(batch_size: int) -> Any:
                batch = draw(batch_size)
                self.record(batch.samples.rewards, batch.weights)
                return batch

            model._draw_batch = counted_draw
        else:
            sample = model.replay_buffer.sample

            def counted_sample(batch_size: int, env: Any = None) -> Any:
                samples = sample(batch_size, env)
                self.record(samples.rewards, None)
                return samples

            model.replay_buffer.sample = counted_sample

    def summary(self, uniform_rate: float) -> dict[str, Any]:
        """Per phase and overall: the rewarding share of the draws and of the weight, and each over uniform's."""
        out: dict[str, Any] = {"uniform_rate": uniform_rate}
        phases = {**self.counts, "all": {k: sum(c[k] for c in self.counts.values()) for k in self.counts["learned"]}}
        for phase, c in phases.items():
            share = c["rewarding"] / c["slots"] if c["slots"] else None
            weight_share = c["rewarding_weight"] / c["weight"] if c["weight"] else None
            out[phase] = {
                **c,
                "draw_share": share,
                "draw_rate_over_uniform": share / uniform_rate if share is not None else None,
                "weight_share": weight_share,
                "weight_rate_over_uniform": weight_share / uniform_rate if weight_share is not None else None,
            }
        return out


def set_initial_td_priorities(model: Any) -> None:
    """``per_td_init``: every prefilled transition's score set to its |TD| under the initial Q."""
    buffer = model.replay_buffer
    indices = buffer.valid_indices()
    samples = buffer.get_samples_at(indices)
    buffer.set_all_scores(indices, model._current_td_abs(samples))


class FreshPriorities:
    """
    ``per_fresh``: before each update, every stored transition's score becomes its |TD| under the
    current table, computed from the stored (state, action, reward, done, next state) in NumPy.
    """

    def __init__(self, model: Any, gamma: float) -> None:
        buffer = model.replay_buffer
        self.buffer = buffer
        self.indices = buffer.valid_indices()
        obs = buffer.observations[: buffer.size(), 0]
        next_obs = buffer.next_observations[: buffer.size(), 0]
        self.states = obs.argmax(axis=1)
        self.actions = buffer.actions[: buffer.size(), 0].reshape(-1).astype(np.int64)
        self.rewards = buffer.rewards[: buffer.size(), 0].astype(np.float64)
        live = 1.0 - buffer.dones[: buffer.size(), 0].astype(np.float64)
        self.discount = gamma * live
        self.next_states = np.where(live > 0, next_obs.argmax(axis=1), 0)
        self.table = model.q_net.q_net[0].weight.detach().numpy()  # (actions, states)

    def __call__(self) -> None:
        table = self.table.astype(np.float64)
        target = self.rewards + self.discount * table[:, self.next_states].max(axis=0)
        td_abs = np.abs(target - table[self.actions, self.states])
        self.buffer.set_all_scores(self.indices, td_abs)


def learn_to_tolerance(
    model: Any,
    q_true: np.ndarray,
    batch_size: int,
    cap: int,
    counter: DrawCounter,
    last_state: tuple[int, int],
    anneal: bool = True,
    mse_fn: Callable[[np.ndarray], float] | None = None,
    before_update: Callable[[], None] | None = None,
) -> tuple[int | None, float]:
    """
    Call ``train(gradient_steps=1, batch_size)`` until the MSE of the Q-table to ``q_true`` is
    below the tolerance: the number of updates, or None at ``cap``; and the final MSE.

    :param anneal: Set ``_current_progress_remaining = 1 - updates / cap`` before each update (as
        ``learn(total_timesteps=cap)`` would); False leaves it at 1.
    :param last_state: ``(action, state)`` of the rewarding transition's entry in the weight matrix.
    :param mse_fn: The error measure (default: mean squared error of the table); the tests pass a twin.
    :param before_update: Called before each update (``per_fresh``'s re-score).
    """
    weight = model.q_net.q_net[0].weight
    target_weight = model.q_net_target.q_net[0].weight
    table = weight.detach().numpy()  # (actions, states), shares memory with the network
    mse_fn = mse_fn or (lambda t: float(((t.T - q_true) ** 2).mean()))
    mse = mse_fn(table)
    if mse < TOLERANCE:
        return 0, mse
    for update in range(1, cap + 1):
        if anneal:
            model._current_progress_remaining = 1.0 - update / cap
        if before_update is not None:
            before_update()
        model.train(gradient_steps=1, batch_size=batch_size)
        with th.no_grad():
            target_weight.copy_(weight)  # tau = 1 every update: plain Q-learning
        if counter.phase == "unlearned" and table[last_state] > LEARNED_LAST:
            counter.phase = "learned"
        mse = mse_fn(table)
        if mse < TOLERANCE:
            return update, mse
    return None, mse


def git_commit() -> str:
    return subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()


def run_one(contender: str, regime: str, n: int, seed: int, command: str) -> dict[str, Any]:
    """One run, as the JSON record written to disk."""
    wall, cpu = time.perf_counter(), time.process_time()
    th.set_num_threads(1)
    env = BlindCliffwalk(n, seed)
    model = build_model(contender, env, n, seed)
    steps = prefill(model, env, n, seed, contender)
    buffer = model.replay_buffer
    n_valid = buffer.size() * buffer.n_envs
    n_rewarding = int((buffer.rewards[: buffer.size()] > 0.5).sum())
    extra: dict[str, Any] = {}
    if contender == "per_td_init":
        set_initial_td_priorities(model)
    if contender in WITH_EXTRACTOR:
        rewarding = np.flatnonzero(buffer.rewards[: buffer.size()].reshape(-1) > 0.5)
        valid = buffer.valid_indices()
        fast = int(model.extractor_settings["fast_memory"])
        extra = {
            "extractor_auc": float(model.extractor_auc),
            "fast_memory": fast,
            # The density ratio of the rewarding transitions over the buffer's mean ratio (1: not found).
            "rewarding_ratio_over_mean": float(buffer.scores[rewarding].mean() / buffer.scores[valid].mean()),
            "rewarding_in_fast_memory": int(np.isin(rewarding, buffer.recent_indices(fast)).sum()),
        }
    counter = DrawCounter()
    counter.attach(model)
    q_true = true_q(n, env.right, default_gamma(n))
    cap = CAP_FACTOR * PREFILL_FACTOR * 2**n
    batch_size = REGIMES[regime]
    train_cpu = time.process_time()
    updates, mse = learn_to_tolerance(
        model,
        q_true,
        batch_size,
        cap,
        counter,
        last_state=(int(env.right[n - 1]), n - 1),
        anneal=contender != "per_beta0",
        before_update=FreshPriorities(model, default_gamma(n)) if contender == "per_fresh" else None,
    )
    train_cpu = time.process_time() - train_cpu
    return {
        "contender": contender,
        "regime": regime,
        "batch_size": batch_size,
        "n": n,
        "seed": seed,
        "updates": updates,
        "cap": cap,
        "tolerance": TOLERANCE,
        "final_mse": mse,
        "learning_rate": LEARNING_RATE,
        "optimizer": "SGD",
        "gamma": default_gamma(n),
        "prefill_steps": steps,
        "buffer_transitions": n_valid,
        "rewarding_transitions": n_rewarding,
        "beta_final": float(getattr(buffer, "beta", float("nan"))) if contender != "dqn" else None,
        "draws": counter.summary(n_rewarding / n_valid),
        **extra,
        "commit": git_commit(),
        "command": command,
        "date": date.today().isoformat(),
        "wall_s": time.perf_counter() - wall,
        "cpu_s": time.process_time() - cpu,
        "train_cpu_s": train_cpu,
    }


def run_path(out: Path, contender: str, regime: str, n: int, seed: int) -> Path:
    return out / f"{contender}__{regime}__n{n:02d}__s{seed}.json"


def cmd_run(args: argparse.Namespace, command: str) -> None:
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    for n in args.n:  # the short chains first: a budget cut leaves whole chain lengths
        for seed in args.seeds:
            for regime in args.regimes:
                for contender in args.contenders:
                    path = run_path(out, contender, regime, n, seed)
                    if path.exists():
                        continue
                    record = run_one(contender, regime, n, seed, command)
                    path.write_text(json.dumps(record, indent=1) + "\n")
                    print(
                        f"{contender:14s} {regime:5s} n={n:2d} seed={seed} updates={record['updates']} "
                        f"cpu={record['cpu_s']:.1f}s",
                        flush=True,
                    )


# ---------------------------------------------------------------------- the report
def load_runs(runs: Path) -> list[dict[str, Any]]:
    return [json.loads(path.read_text()) for path in sorted(runs.glob("*.json"))]


def report(args: argparse.Namespace) -> None:
    """Write the results page and plot from the run files (the page's text reads its numbers from them)."""
    write_report(load_runs(Path(args.runs)), Path(args.page), Path(args.plot), Path(args.runs))


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="what", required=True)
    run = sub.add_parser("run", help="run every (contender, regime, n, seed) not on disk yet")
    run.add_argument("--contenders", nargs="+", default=list(CONTENDERS), choices=[*CONTENDERS, *DIAGNOSTICS])
    run.add_argument("--regimes", nargs="+", default=list(REGIMES), choices=list(REGIMES))
    run.add_argument("--n", nargs="+", type=int, default=[6, 8, 10, 12])
    run.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2, 3, 4])
    run.add_argument("--out", default=str(RUNS))
    rep = sub.add_parser("report", help="write the results page and plot from the run files")
    rep.add_argument("--runs", default=str(RUNS))
    rep.add_argument("--page", default=str(PAGE))
    rep.add_argument("--plot", default=str(PLOT))
    args = parser.parse_args(argv)
    command = "python benchmarks/positive_control.py " + shlex.join(argv)
    if args.what == "run":
        cmd_run(args, command)
    else:
        report(args)


if __name__ == "__main__":
    main()
