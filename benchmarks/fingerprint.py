"""
Golden fingerprints of short training runs: proof that a refactor preserves behaviour bit for bit.

    python benchmarks/fingerprint.py --out tests/data/fingerprints.json    # record
    python benchmarks/fingerprint.py --check tests/data/fingerprints.json  # compare (exit 1 on a change)
    python benchmarks/fingerprint.py --only dqn_default,sac_default --check tests/data/fingerprints.json

Each configuration trains a short run (small ``buffer_size``, so that the buffer wraps; where the
density ratio runs, the extractor fits and the buffer is re-scored several times at the default
schedule) and hashes, with SHA-256:

- ``policy``: every tensor of the policy's ``state_dict`` (the final parameters);
- ``scores``: the replay buffer's ``scores`` array;
- ``losses``: the sequence of every ``train/*loss*`` value logged by ``train()``;
- ``fingerprint``: the three above together, the one that must not change.

The extractor's parameters are hashed too (``extractor``), for diagnosis only. Runs are
deterministic per machine (CPU, one torch thread), not across machines: compare fingerprints
recorded on the same machine.
"""

import argparse
import copy
import hashlib
import json
import sys
import time
from typing import Any

import gymnasium as gym
import numpy as np
import sb3_contrib
import stable_baselines3 as sb3
import torch as th
from stable_baselines3.common.envs import BitFlippingEnv
from stable_baselines3.common.logger import Logger
from stable_baselines3.her import HerReplayBuffer

import sb3_complementary as sb3c

#: Small DQN settings: the buffer (2,000) wraps twice in 5,000 steps; the density ratio's extractor
#: (fast memory 400) fits every 500 steps once 800 transitions are stored.
DQN_BASE: dict[str, Any] = {
    "learning_starts": 500,
    "buffer_size": 2000,
    "batch_size": 32,
    "train_freq": 4,
    "gradient_steps": 1,
    "target_update_interval": 250,
    "policy_kwargs": {"net_arch": [32, 32]},
}
#: Small actor-critic settings (Pendulum-v1): the buffer wraps in 3,000 steps.
AC_BASE: dict[str, Any] = {
    "learning_starts": 300,
    "buffer_size": 2000,
    "batch_size": 32,
    "train_freq": 2,
    "gradient_steps": 1,
    "policy_kwargs": {"net_arch": [32, 32]},
}

#: The DQN family's default until 2026-12-07: the density ratio x fresh |TD| on a pool of 4. The
#: configurations below that pin it keep the fingerprints recorded while it was the default.
DENSITY_RATIO: dict[str, Any] = {
    "contribution": "density_ratio",
    "epsilon": 1e-3,
    "uniform_fraction": 0.25,
    "score_floor": 0.01,
}

#: name -> (class name, env id, steps, constructor kwargs)
CONFIGS: dict[str, tuple[str, str, int, dict[str, Any]]] = {
    "dqn_default": ("ComplementaryDQN", "CartPole-v1", 5000, DQN_BASE),  # LaBER
    "dqn_density_ratio": ("ComplementaryDQN", "CartPole-v1", 5000, {**DQN_BASE, **DENSITY_RATIO}),
    "dqn_fresh_td": (
        "ComplementaryDQN",
        "CartPole-v1",
        5000,
        {**DQN_BASE, **DENSITY_RATIO, "contribution": "fresh_td"},
    ),
    "dqn_alpha0": ("ComplementaryDQN", "CartPole-v1", 5000, {**DQN_BASE, **DENSITY_RATIO, "alpha": 0.0}),
    "dqn_nstep3": ("ComplementaryDQN", "CartPole-v1", 5000, {**DQN_BASE, **DENSITY_RATIO, "n_steps": 3}),
    "dqn_her_bitflip": (
        "ComplementaryDQN",
        "BitFlipping-8",
        4000,
        {**DQN_BASE, "replay_buffer_class": HerReplayBuffer, "replay_buffer_kwargs": {"n_sampled_goal": 4}},
    ),
    "per_dqn": ("PrioritizedDQN", "CartPole-v1", 5000, DQN_BASE),
    "qrdqn_default": (
        "ComplementaryQRDQN",
        "CartPole-v1",
        5000,
        {**DQN_BASE, "policy_kwargs": {"net_arch": [32, 32], "n_quantiles": 8}},
    ),
    "sac_default": ("ComplementarySAC", "Pendulum-v1", 3000, AC_BASE),
    "sac_alpha1_pool4": (
        "ComplementarySAC",
        "Pendulum-v1",
        3000,
        {**AC_BASE, **DENSITY_RATIO, "alpha": 1.0, "candidate_pool": 4},
    ),
    "td3_default": ("ComplementaryTD3", "Pendulum-v1", 3000, AC_BASE),
    "ddpg_default": ("ComplementaryDDPG", "Pendulum-v1", 3000, AC_BASE),
    "tqc_default": (
        "ComplementaryTQC",
        "Pendulum-v1",
        3000,
        {**AC_BASE, "policy_kwargs": {"net_arch": [32, 32], "n_quantiles": 5, "n_critics": 2}},
    ),
    "crossq_default": ("ComplementaryCrossQ", "Pendulum-v1", 3000, AC_BASE),
    "per_sac": ("PrioritizedSAC", "Pendulum-v1", 3000, AC_BASE),
    # The parents: ``alpha=0`` (the control, and the actor-critic classes' default) draws as they do, so the
    # ``policy`` and ``losses`` hashes of dqn_alpha0 and of each ``*_default`` actor-critic equal their parent's.
    "dqn_parent": ("DQN", "CartPole-v1", 5000, DQN_BASE),
    "sac_parent": ("SAC", "Pendulum-v1", 3000, AC_BASE),
    "td3_parent": ("TD3", "Pendulum-v1", 3000, AC_BASE),
    "ddpg_parent": ("DDPG", "Pendulum-v1", 3000, AC_BASE),
    "tqc_parent": (
        "TQC",
        "Pendulum-v1",
        3000,
        {**AC_BASE, "policy_kwargs": {"net_arch": [32, 32], "n_quantiles": 5, "n_critics": 2}},
    ),
    "crossq_parent": ("CrossQ", "Pendulum-v1", 3000, AC_BASE),
}


def _hash_arrays(arrays: list[np.ndarray]) -> str:
    digest = hashlib.sha256()
    for array in arrays:
        array = np.ascontiguousarray(array)
        digest.update(str((array.dtype.str, array.shape)).encode())
        digest.update(array.tobytes())
    return digest.hexdigest()


def _state_arrays(module: th.nn.Module) -> list[np.ndarray]:
    return [tensor.detach().cpu().numpy() for _, tensor in sorted(module.state_dict().items())]


def _make_env(env_id: str) -> gym.Env:
    if env_id == "BitFlipping-8":
        return BitFlippingEnv(n_bits=8, continuous=False, max_steps=8)
    return gym.make(env_id)


def run(name: str, seed: int = 0) -> dict[str, Any]:
    """Train configuration ``name`` and hash what it ends with."""
    cls_name, env_id, steps, kwargs = CONFIGS[name]
    th.set_num_threads(1)
    cls = next(getattr(module, cls_name) for module in (sb3c, sb3, sb3_contrib) if hasattr(module, cls_name))
    policy = "MultiInputPolicy" if env_id.startswith("BitFlipping") else "MlpPolicy"
    # SB3 writes into the dicts it is given (policy_kwargs): never share them between runs.
    model = cls(policy, _make_env(env_id), seed=seed, device="cpu", **copy.deepcopy(kwargs))
    losses: list[float] = []
    logger = Logger(folder=None, output_formats=[])
    record = logger.record

    def recording(key: str, value: Any, exclude: Any = None) -> None:
        if key.startswith("train/") and "loss" in key:
            losses.append(float(value))
        record(key, value, exclude)

    logger.record = recording  # type: ignore[method-assign]
    model.set_logger(logger)
    start = time.perf_counter()
    model.learn(steps)
    policy_hash = _hash_arrays(_state_arrays(model.policy))
    scores_hash = _hash_arrays([np.asarray(getattr(model.replay_buffer, "scores", np.zeros(0)))])  # none: a parent
    losses_hash = _hash_arrays([np.asarray(losses, dtype=np.float64)])
    extractor = getattr(model, "extractor", None)
    return {
        "fingerprint": hashlib.sha256(f"{policy_hash}{scores_hash}{losses_hash}".encode()).hexdigest(),
        "policy": policy_hash,
        "scores": scores_hash,
        "losses": losses_hash,
        "extractor": None if extractor is None else _hash_arrays(_state_arrays(extractor)),
        "n_losses": len(losses),
        "seconds": round(time.perf_counter() - start, 1),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", help="comma-separated configuration names (default: all)")
    parser.add_argument("--out", help="write the fingerprints as JSON here")
    parser.add_argument("--check", help="compare against this JSON; exit 1 if a fingerprint differs")
    args = parser.parse_args()
    names = args.only.split(",") if args.only else list(CONFIGS)
    expected = {}
    if args.check:
        with open(args.check) as file:
            expected = json.load(file)
    results, changed = {}, []
    for name in names:
        results[name] = run(name)
        status = ""
        if name in expected:
            same = expected[name]["fingerprint"] == results[name]["fingerprint"]
            if not same:
                changed.append(name)
                parts = [
                    k for k in ("policy", "scores", "losses", "extractor") if expected[name][k] != results[name][k]
                ]
                status = f"  CHANGED ({', '.join(parts)})"
            else:
                status = "  same"
        print(f"{name:20s} {results[name]['fingerprint'][:16]} {results[name]['seconds']:6.1f}s{status}", flush=True)
    if args.out:
        with open(args.out, "w") as file:
            json.dump(results, file, indent=1, sort_keys=True)
            file.write("\n")
    if changed:
        print(f"changed: {', '.join(changed)}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
