"""
Normalised score, per environment::

    (R - R_random) / (R_ref - R_random)

R_ref is the rl-zoo3 benchmark score of the parent algorithm, DQN or SAC (tables below, with
where each number comes from);
R_random is the mean return of a uniform-random policy, measured by the runner and cached in
the output folder (``random_scores.json``) so the report uses exactly the numbers the runner saw.

Sources of R_ref
----------------
rl-baselines3-zoo ``benchmark.md`` ("Performance of trained agents": mean return of the
trained zoo agent over ``eval_timesteps`` with the deterministic policy, one training run),
https://github.com/DLR-RM/rl-baselines3-zoo/blob/master/benchmark.md , read at commit
``0088472b8cb622732bdbc4aa3d0d0abde86c67ed`` (same DQN rows at ``02a1a9014660a15ae2ecba900576ca2c51cf0ed7``):

=================  ===========  =====================================
env                mean_reward  row
=================  ===========  =====================================
CartPole-v1        500.000      ``dqn | CartPole-v1 | 500.000 | 0.000 | 50k``
MountainCar-v0     -100.849     ``dqn | MountainCar-v0 | -100.849 | 9.925 | 120k``
LunarLander-v3     154.382      ``dqn | LunarLander-v2 | 154.382 | 79.241 | 100k`` (see below)
Acrobot-v1         -76.639      ``dqn | Acrobot-v1 | -76.639 | 11.752 | 100k``
=================  ===========  =====================================

SAC rows (the SAC study of issue #4, ``matrices/sac.yml``), same file and commit:

========================  ===========  =====================================
env                       mean_reward  row
========================  ===========  =====================================
Pendulum-v1               -156.995     ``sac | Pendulum-v1 | -156.995 | 88.714 | 20k``
LunarLanderContinuous-v3  260.390      ``sac | LunarLanderContinuous-v2 | 260.390 | 65.467 | 500k``
========================  ===========  =====================================

zoo's table has no ``LunarLander-v3`` DQN row nor ``LunarLanderContinuous-v3`` SAC row: they
were produced with the v2 envs, which gymnasium 1.0 renamed to v3 with bug fixes only (same
dynamics and reward), and zoo's tuned v3 hyperparameters are the v2 ones. We use the v2 rows.

The sparse-reward task has no zoo row; its matrix entry states ``r_ref`` and its source (for
``BitFlippingEnv`` the optimal policy's expected return, :func:`bit_flipping_optimal_return`).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

_ZOO_BENCHMARK = (
    "rl-baselines3-zoo benchmark.md (https://github.com/DLR-RM/rl-baselines3-zoo/blob/master/benchmark.md, "
    "commit 0088472b), row"
)

#: File name of the R_random cache inside the runs folder.
RANDOM_SCORES_FILE = "random_scores.json"


@dataclass(frozen=True)
class ReferenceScore:
    """
    R_ref of one environment.

    :param score: The reference return.
    :param source: Where the number comes from (printed in the report).
    """

    score: float
    source: str


#: rl-zoo3 published scores, keyed by zoo algorithm name, then gymnasium id. See the module docstring.
ZOO_SCORES: dict[str, dict[str, ReferenceScore]] = {
    "dqn": {
        "CartPole-v1": ReferenceScore(500.0, f"{_ZOO_BENCHMARK} 'dqn | CartPole-v1 | 500.000 | 0.000 | 50k'"),
        "MountainCar-v0": ReferenceScore(
            -100.849, f"{_ZOO_BENCHMARK} 'dqn | MountainCar-v0 | -100.849 | 9.925 | 120k'"
        ),
        "LunarLander-v3": ReferenceScore(
            154.382,
            f"{_ZOO_BENCHMARK} 'dqn | LunarLander-v2 | 154.382 | 79.241 | 100k' "
            "(zoo has no v3 DQN row; gymnasium's v3 is v2 with bug fixes)",
        ),
        "Acrobot-v1": ReferenceScore(-76.639, f"{_ZOO_BENCHMARK} 'dqn | Acrobot-v1 | -76.639 | 11.752 | 100k'"),
    },
    "sac": {
        "Pendulum-v1": ReferenceScore(-156.995, f"{_ZOO_BENCHMARK} 'sac | Pendulum-v1 | -156.995 | 88.714 | 20k'"),
        "LunarLanderContinuous-v3": ReferenceScore(
            260.390,
            f"{_ZOO_BENCHMARK} 'sac | LunarLanderContinuous-v2 | 260.390 | 65.467 | 500k' "
            "(zoo has no v3 SAC row; gymnasium's v3 is v2 with bug fixes)",
        ),
    },
}


def zoo_reference(env_id: str, algo: str = "dqn") -> ReferenceScore | None:
    """
    :param env_id: Gymnasium id.
    :param algo: zoo's algorithm name (``"dqn"``, ``"sac"``).
    :return: The rl-zoo3 reference score of ``algo``, or ``None`` if zoo publishes none (or we do not quote it).
    """
    return ZOO_SCORES.get(algo, {}).get(env_id)


def bit_flipping_optimal_return(n_bits: int) -> float:
    """
    Expected return of the optimal policy on SB3's ``BitFlippingEnv`` (discrete actions,
    ``max_steps = n_bits``, reward -1 per step except 0 on the step that reaches the goal).

    The start state is uniform over ``{0, 1}^n``; with ``k`` wrong bits the optimal policy
    flips each once and earns ``-(k - 1)``; when ``k = 0`` it must flip a bit and back: ``-1``.
    With ``k ~ Binomial(n, 1/2)`` the expectation is ``-(n/2 - 1 + 2^(1-n))``.

    :param n_bits: Number of bits.
    :return: The expected optimal return.
    """
    return -(n_bits / 2.0 - 1.0 + 2.0 ** (1 - n_bits))


def normalized_score(returns: np.ndarray | float, r_random: float, r_ref: float) -> np.ndarray:
    """
    :param returns: Raw returns, any shape.
    :param r_random: Score of the uniform-random policy.
    :param r_ref: Reference score (rl-zoo3 DQN).
    :return: ``(returns - r_random) / (r_ref - r_random)``, same shape as ``returns``.
    :raises ValueError: if ``r_ref == r_random`` (the score would be undefined).
    """
    if np.isclose(r_ref, r_random):
        raise ValueError(f"R_ref ({r_ref}) equals R_random ({r_random}): the normalised score is undefined")
    return (np.asarray(returns, dtype=np.float64) - r_random) / (r_ref - r_random)


@dataclass(frozen=True)
class RandomScore:
    """
    A measured R_random.

    :param mean: Mean return of the uniform-random policy.
    :param std: Standard deviation of the returns.
    :param episodes: Number of episodes.
    :param seed: Seed used.
    :param fingerprint: Hash of the environment description and settings; a cached value is
        reused only while it matches.
    """

    mean: float
    std: float
    episodes: int
    seed: int
    fingerprint: str

    def to_dict(self) -> dict[str, Any]:
        """:return: JSON-safe representation."""
        return {
            "mean": self.mean,
            "std": self.std,
            "episodes": self.episodes,
            "seed": self.seed,
            "fingerprint": self.fingerprint,
        }


def random_fingerprint(env_description: Mapping[str, Any], episodes: int, seed: int) -> str:
    """
    :param env_description: ``SuiteEntry.env_dict()``.
    :param episodes: Number of episodes.
    :param seed: Seed.
    :return: A short hash identifying one R_random measurement.
    """
    payload = json.dumps({"env": env_description, "episodes": episodes, "seed": seed}, sort_keys=True, default=str)
    return hashlib.sha256(payload.encode()).hexdigest()[:16]


def load_random_scores(runs_dir: str | Path) -> dict[str, RandomScore]:
    """
    :param runs_dir: The runs folder.
    :return: Cached R_random per suite entry name (empty if there is no cache).
    :raises ValueError: if the cache exists but is not readable.
    """
    path = Path(runs_dir) / RANDOM_SCORES_FILE
    if not path.exists():
        return {}
    try:
        raw = json.loads(path.read_text())
        return {name: RandomScore(**value) for name, value in raw["scores"].items()}
    except (ValueError, KeyError, TypeError) as exc:
        raise ValueError(f"{path}: corrupt R_random cache ({exc}); delete it to measure again") from exc


def save_random_scores(runs_dir: str | Path, scores: Mapping[str, RandomScore]) -> None:
    """
    Write the R_random cache atomically.

    :param runs_dir: The runs folder.
    :param scores: R_random per suite entry name.
    """
    from benchmarks.harness.store import atomic_write_json

    payload = {
        "what": "mean return of a uniform-random policy per suite entry (R_random of the normalised score)",
        "scores": {name: score.to_dict() for name, score in sorted(scores.items())},
    }
    atomic_write_json(Path(runs_dir) / RANDOM_SCORES_FILE, payload)


def ensure_random_scores(
    runs_dir: str | Path,
    entries: Sequence[tuple[str, Mapping[str, Any]]],
    episodes: int,
    seed: int,
) -> dict[str, RandomScore]:
    """
    Return R_random for each entry, measuring (and caching) the ones missing or stale.

    :param runs_dir: The runs folder holding the cache.
    :param entries: ``(name, env_description)`` pairs (``SuiteEntry.name``, ``SuiteEntry.env_dict()``).
    :param episodes: Episodes per measurement.
    :param seed: Seed of each measurement.
    :return: R_random per entry name (all cached entries, including ones not asked for).
    """
    from benchmarks.harness.envs import random_policy_returns

    scores = load_random_scores(runs_dir)
    changed = False
    for name, env in entries:
        fingerprint = random_fingerprint(env, episodes, seed)
        cached = scores.get(name)
        if cached is not None and cached.fingerprint == fingerprint:
            continue
        returns = random_policy_returns(env["env_id"], env.get("env_kwargs"), env.get("wrappers", ()), episodes, seed)
        scores[name] = RandomScore(
            mean=float(returns.mean()), std=float(returns.std()), episodes=episodes, seed=seed, fingerprint=fingerprint
        )
        changed = True
    if changed:
        Path(runs_dir).mkdir(parents=True, exist_ok=True)
        save_random_scores(runs_dir, scores)
    return scores
