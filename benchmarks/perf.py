"""
Performance figures for issue #2, measured side by side in one process on one machine.

    python -m benchmarks.perf --out docs/performance-logs/performance.json            # everything
    python -m benchmarks.perf --only train --repeats 5 --steps 50000  # one part
    python -m benchmarks.perf --only her --steps 10000 --out docs/performance-logs/performance-her.json
    python -m benchmarks.perf --only pool --out docs/performance-logs/performance-pool.json  # the pool's cost
    python -m benchmarks.perf --only train --complementary-kwargs '{"contribution": "density_ratio"}' \
        --out docs/performance-logs/performance-density.json                           # a candidate's training cost
    python -m benchmarks.perf --device cuda --steps 10000 --repeats 2 --out performance-gpu.json  # on a GPU
    python -m benchmarks.perf --only policies --steps 12000 --repeats 3 \
        --out docs/performance-logs/performance-policies-0.2.0.json                  # the cost a user meets

Parts:
- ``train``: wall-clock of ComplementaryDQN / DQN and PrioritizedDQN / DQN on CartPole-v1 with
  rl-zoo3's DQN hyperparameters, same seed and steps, interleaved repeats; the median ratio is
  what we quote (these machines are shared and noisy, absolute times are not).
- ``her``: CPU time of PrioritizedDQN and ComplementaryDQN with HER against DQN with SB3's HER on
  BitFlippingEnv(n_bits=15), the packaged ``BitFlipping-15-v0`` entry's settings, interleaved repeats.
- ``pool``: where draw-time selection spends its time: ComplementaryDQN with a candidate pool
  (``--complementary-kwargs``, ``candidate_pool`` 4 if not given) trained 5k steps
  on CartPole-v1, then each piece of one draw (gather, |TD| measurement, selection) and a training
  step's own forward, timed on the live model against a uniform batch, in process CPU time.
- ``replay``: batch-256 ``sample_weighted`` + ``update_scores`` on a 1M-transition buffer, against
  SB3's uniform ``ReplayBuffer.sample`` on the same data; also cpprb's C++ prioritized buffer
  (the library we could have used for the sum tree) when it is installed.
- ``rescore``: a full re-score of 1M transitions by the default extractor.
- ``migrate``: a 1M-row plain SB3 buffer migrated by ``load_rows`` against ``add()`` row by row.
- ``gpu`` (the only part of ``--device cuda``, which refuses without CUDA): wall-clock and CPU
  time of DQN, PrioritizedDQN and the default ComplementaryDQN on the GPU, side by side, with
  ``MlpPolicy`` on CartPole-v1 (rl-zoo3's settings) and ``CnnPolicy`` on 84×84 random frames
  (Atari's network and batch; the frames are random so that no ROM is needed: the cost measured
  is the networks' and the replay's, not the emulator's).
- ``policies``: the ``gpu`` part's comparison on the CPU (one torch thread): the CPU cost of the
  default with ``MlpPolicy`` and with ``CnnPolicy``.
- ``memory``: the buffer's extra bytes per transition (sum tree, scores, features) against the
  bytes of its observation storage.
"""

import argparse
import json
import platform
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import torch as th
from stable_baselines3 import DQN
from stable_baselines3.common.buffers import ReplayBuffer

import sb3_complementary
from benchmarks.harness.hyperparams import constructor_kwargs, zoo_hyperparams
from sb3_complementary import ComplementaryDQN, ComplementaryReplayBuffer, ExperienceExtractor, PrioritizedDQN

#: rl-zoo3's tuned DQN entry for CartPole-v1, read from the installed rl_zoo3.
ZOO_CARTPOLE = constructor_kwargs(zoo_hyperparams("CartPole-v1"))


def timed(fn: Callable[[], Any]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def interleaved(builders: dict[str, Callable[[], Any]], steps: int, repeats: int, baseline: str) -> dict[str, Any]:
    """
    Learn ``steps`` with each model in turn, ``repeats`` times; ratios to ``baseline`` per repeat, then median.

    Both wall-clock and process CPU time are recorded. With one torch thread the CPU time of the
    process is the work the algorithm did, and it barely moves when other jobs share the machine,
    whereas wall-clock time also counts the time the process waited for a core.

    :param builders: Name -> a function that builds a fresh model (same seed for all).
    """
    wall: dict[str, list[float]] = {name: [] for name in builders}
    cpu: dict[str, list[float]] = {name: [] for name in builders}
    for repeat in range(repeats):
        for name, build in builders.items():
            model = build()
            cpu_start = time.process_time()
            wall[name].append(timed(lambda model=model: model.learn(steps)))
            cpu[name].append(time.process_time() - cpu_start)
            print(f"  repeat {repeat} {name}: {wall[name][-1]:.1f}s wall, {cpu[name][-1]:.1f}s cpu", flush=True)
    out: dict[str, Any] = {"steps": steps, "repeats": repeats, "wall_seconds": wall, "cpu_seconds": cpu}
    for clock, seconds in (("wall", wall), ("cpu", cpu)):
        for name in builders:
            if name == baseline:
                continue
            ratios = [a / b for a, b in zip(seconds[name], seconds[baseline], strict=True)]
            out[f"{clock}_ratio_{name}_to_{baseline}"] = {
                "median": statistics.median(ratios),
                "min": min(ratios),
                "max": max(ratios),
            }
    return out


def bench_train(steps: int, repeats: int, seed: int, complementary_kwargs: dict[str, Any]) -> dict[str, Any]:
    """
    DQN / PrioritizedDQN / ComplementaryDQN on CartPole-v1 with rl-zoo3's hyperparameters, interleaved.

    ``complementary_kwargs`` are given to ComplementaryDQN (a candidate's knobs; empty: its defaults).
    """
    builders = {
        "DQN": lambda: DQN("MlpPolicy", "CartPole-v1", seed=seed, **ZOO_CARTPOLE),
        "PrioritizedDQN": lambda: PrioritizedDQN("MlpPolicy", "CartPole-v1", seed=seed, **ZOO_CARTPOLE),
        "ComplementaryDQN": lambda: ComplementaryDQN(
            "MlpPolicy", "CartPole-v1", seed=seed, **ZOO_CARTPOLE, **complementary_kwargs
        ),
    }
    return {**interleaved(builders, steps, repeats, baseline="DQN"), "complementary_kwargs": complementary_kwargs}


def bench_pool(
    complementary_kwargs: dict[str, Any], repeats: int, seed: int, warmup_steps: int = 5_000, calls: int = 300
) -> dict[str, Any]:
    """
    Process CPU milliseconds per call of each piece of a draw-time selection, on a live model.

    :param complementary_kwargs: ComplementaryDQN knobs (``candidate_pool`` defaults to 4).
    :param repeats: Timings per piece; the median is quoted.
    :param warmup_steps: Steps learned first, so that the buffer holds data and a density
        classifier has been fitted (it waits for twice its fast memory).
    :param calls: Calls per timing.
    """
    kwargs = {"candidate_pool": 4, **complementary_kwargs}
    model = ComplementaryDQN("MlpPolicy", "CartPole-v1", seed=seed, **ZOO_CARTPOLE, **kwargs)
    model.learn(warmup_steps)
    buffer, batch_size = model.replay_buffer, model.batch_size
    pool = buffer.uniform_indices(model.candidate_pool * batch_size)
    pool_samples = buffer.get_samples_at(pool)
    batch_samples = buffer.get_samples_at(pool[:batch_size])
    td_abs = model._current_td_abs(pool_samples)
    scores = model.importance.candidate_scores(model, pool, td_abs)
    pieces: dict[str, Callable[[], Any]] = {
        "gather the pool": lambda: buffer.get_samples_at(pool),
        "measure the pool's |TD|": lambda: model._current_td_abs(pool_samples),
        "select from the pool": lambda: buffer.select_from_candidates(pool, pool_samples, scores, batch_size),
        "the whole draw": lambda: model._draw_batch(batch_size),
        "a uniform batch (SB3 sample)": lambda: buffer.sample(batch_size),
        "a training step's forward of its batch": lambda: model._q_values_and_penultimate(batch_samples.observations),
    }

    def per_call_ms(fn: Callable[[], Any]) -> float:
        fn()
        start = time.process_time()
        for _ in range(calls):
            fn()
        return (time.process_time() - start) / calls * 1e3

    milliseconds = {name: [per_call_ms(fn) for _ in range(repeats)] for name, fn in pieces.items()}
    return {
        "complementary_kwargs": kwargs,
        "pool_rows": len(pool),
        "batch_size": batch_size,
        "cpu_ms_per_call": {name: statistics.median(values) for name, values in milliseconds.items()},
        "cpu_ms_per_call_all": milliseconds,
    }


def bench_her(steps: int, repeats: int, seed: int) -> dict[str, Any]:
    """
    DQN with SB3's HerReplayBuffer against PrioritizedDQN and ComplementaryDQN with HER (their
    weighted HER buffers), on BitFlippingEnv(n_bits=15) with the settings of the packaged
    ``BitFlipping-15-v0`` zoo entry, interleaved.
    """
    from stable_baselines3.common.envs import BitFlippingEnv
    from stable_baselines3.her import HerReplayBuffer

    settings = {
        "replay_buffer_class": HerReplayBuffer,
        "replay_buffer_kwargs": {"n_sampled_goal": 4, "goal_selection_strategy": "future"},
        "learning_rate": 1e-3,
        "batch_size": 64,
        "buffer_size": 100_000,
        "learning_starts": 1000,
        "gamma": 0.95,
        "target_update_interval": 500,
        "train_freq": 1,
        "exploration_fraction": 0.1,
        "exploration_final_eps": 0.02,
        "seed": seed,
        "device": "cpu",
    }

    def builder(cls: Any) -> Callable[[], Any]:
        return lambda: cls(
            "MultiInputPolicy", BitFlippingEnv(n_bits=15), policy_kwargs={"net_arch": [256, 256]}, **settings
        )

    builders = {
        name: builder(cls)
        for name, cls in (("DQN", DQN), ("PrioritizedDQN", PrioritizedDQN), ("ComplementaryDQN", ComplementaryDQN))
    }
    return {**interleaved(builders, steps, repeats, baseline="DQN"), "env": "BitFlippingEnv(n_bits=15)"}


class RandomFrames(gym.Env):
    """84×84 grey frames of noise (channel first, ``uint8``), 4 actions, 200-step episodes: CnnPolicy's input."""

    observation_space = gym.spaces.Box(0, 255, (1, 84, 84), np.uint8)
    action_space = gym.spaces.Discrete(4)

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[np.ndarray, dict]:
        super().reset(seed=seed)
        self._t = 0
        return self.observation_space.sample(), {}

    def step(self, action: int) -> tuple[np.ndarray, float, bool, bool, dict]:
        self._t += 1
        return self.observation_space.sample(), float(action == 0), False, self._t >= 200, {}


#: Atari's DQN settings (rl-zoo3), with a buffer that fits any GPU machine's memory.
CNN_SETTINGS: dict[str, Any] = {
    "buffer_size": 20_000,
    "learning_rate": 1e-4,
    "batch_size": 32,
    "learning_starts": 1_000,
    "target_update_interval": 1_000,
    "train_freq": 4,
    "gradient_steps": 1,
    "exploration_fraction": 0.1,
    "exploration_final_eps": 0.01,
}


def bench_policies(
    steps: int, repeats: int, seed: int, device: str, policies: tuple[str, ...] = ("MlpPolicy", "CnnPolicy")
) -> dict[str, Any]:
    """
    DQN / PrioritizedDQN / the default ComplementaryDQN on ``device``, interleaved, for ``MlpPolicy``
    (CartPole-v1, rl-zoo3's settings) and ``CnnPolicy`` (:class:`RandomFrames`, :data:`CNN_SETTINGS`),
    or only the ``policies`` named.
    """
    on_gpu = th.device(device).type == "cuda"
    out: dict[str, Any] = {"device": device, "gpu": th.cuda.get_device_name(th.device(device)) if on_gpu else None}
    for policy, env, settings in (
        ("MlpPolicy", "CartPole-v1", ZOO_CARTPOLE),
        ("CnnPolicy", RandomFrames, CNN_SETTINGS),
    ):
        if policy not in policies:
            continue

        def builder(cls: Any, policy: str = policy, env: Any = env, settings: dict = settings) -> Callable[[], Any]:
            return lambda: cls(policy, env() if callable(env) else env, seed=seed, device=device, **settings)

        builders = {cls.__name__: builder(cls) for cls in (DQN, PrioritizedDQN, ComplementaryDQN)}
        out[policy] = interleaved(builders, steps, repeats, baseline="DQN")
    return out


def _filled_buffers(capacity: int, obs_dim: int) -> tuple[ComplementaryReplayBuffer, ReplayBuffer]:
    obs_space = gym.spaces.Box(-1, 1, (obs_dim,), np.float32)
    act_space = gym.spaces.Discrete(4)
    ours = ComplementaryReplayBuffer(capacity, obs_space, act_space, device="cpu", uniform_fraction=0.25)
    sb3 = ReplayBuffer(capacity, obs_space, act_space, device="cpu")
    rng = np.random.default_rng(0)
    for buffer in (ours, sb3):
        # Fill the storage directly: the bench is about sampling, not about 1M add() calls.
        buffer.observations[:] = rng.standard_normal(buffer.observations.shape, dtype=np.float32)
        buffer.next_observations[:] = buffer.observations
        buffer.actions[:] = rng.integers(0, 4, buffer.actions.shape)
        buffer.rewards[:] = rng.standard_normal(buffer.rewards.shape, dtype=np.float32)
        buffer.full, buffer.pos = True, 0
    ours.n_added = capacity
    ours.features.insert_step[:, 0] = np.arange(capacity)
    ours.refresh_scores(lambda x: rng.random(len(x), dtype=np.float32))
    return ours, sb3


def bench_replay(capacity: int, batch_size: int, iterations: int, repeats: int) -> dict[str, Any]:
    ours, sb3 = _filled_buffers(capacity, obs_dim=8)

    def run_ours() -> None:
        for _ in range(iterations):
            batch = ours.sample_weighted(batch_size)
            ours.update_scores(batch.indices, np.random.random(batch_size))

    def run_sb3() -> None:
        for _ in range(iterations):
            sb3.sample(batch_size)

    runs: dict[str, Callable[[], None]] = {"ours_sample_update": run_ours, "sb3_uniform_sample": run_sb3}
    try:
        import cpprb

        per = cpprb.PrioritizedReplayBuffer(
            capacity, {"obs": {"shape": (8,)}, "act": {}, "rew": {}, "next_obs": {"shape": (8,)}, "done": {}}
        )
        per.add(
            obs=ours.observations[:, 0],
            act=ours.actions[:, 0, 0],
            rew=ours.rewards[:, 0],
            next_obs=ours.observations[:, 0],
            done=ours.dones[:, 0],
        )

        def run_cpprb() -> None:
            for _ in range(iterations):
                sample = per.sample(batch_size, beta=0.4)
                per.update_priorities(sample["indexes"], np.random.random(batch_size))

        runs["cpprb_sample_update"] = run_cpprb
    except ImportError:
        pass
    seconds: dict[str, list[float]] = {name: [] for name in runs}
    for _ in range(repeats):
        for name, fn in runs.items():
            seconds[name].append(timed(fn) / iterations)
    medians = {name: statistics.median(values) for name, values in seconds.items()}
    out: dict[str, Any] = {
        "capacity": capacity,
        "batch_size": batch_size,
        "median_seconds_per_call": medians,
        "ratio_ours_to_sb3_uniform": medians["ours_sample_update"] / medians["sb3_uniform_sample"],
    }
    if "cpprb_sample_update" in medians:
        out["ratio_ours_to_cpprb"] = medians["ours_sample_update"] / medians["cpprb_sample_update"]
    return out


def bench_rescore(capacity: int, repeats: int) -> dict[str, Any]:
    ours, _ = _filled_buffers(capacity, obs_dim=8)
    extractor = ExperienceExtractor(ours.n_features, [64, 64], learning_rate=1e-4)
    seconds = [timed(lambda: ours.refresh_scores(extractor.score)) for _ in range(repeats)]
    return {"capacity": capacity, "median_seconds": statistics.median(seconds), "seconds": seconds}


def bench_memory(capacity: int, obs_dim: int) -> dict[str, Any]:
    """
    Extra bytes per transition (sum tree, scores, feature table; Discrete(4) actions) of a
    ``capacity`` buffer, beside the observation bytes SB3 itself stores (obs + next_obs, float32).
    The overhead does not depend on the observation, so the buffer is built with a 1-d one.
    """
    ours = ComplementaryReplayBuffer(capacity, gym.spaces.Box(-1, 1, (1,), np.float32), gym.spaces.Discrete(4))
    return {
        "capacity": capacity,
        "obs_dim": obs_dim,
        "extra_bytes_per_transition": ours.overhead_bytes() / capacity,
        "observation_bytes_per_transition": 2 * 4 * obs_dim,
    }


def bench_migrate(capacity: int, loop_rows: int) -> dict[str, Any]:
    """
    Migrating a full plain SB3 buffer of ``capacity`` CartPole-sized transitions: the vectorised
    ``load_rows`` against ``add()`` row by row (the way migration worked before), timed on
    ``loop_rows`` rows and quoted per row.
    """
    obs_space = gym.spaces.Box(-1, 1, (4,), np.float32)
    act_space = gym.spaces.Discrete(2)
    plain = ReplayBuffer(capacity, obs_space, act_space, device="cpu")
    rng = np.random.default_rng(0)
    plain.observations[:] = rng.standard_normal(plain.observations.shape, dtype=np.float32)
    plain.next_observations[:] = plain.observations
    plain.dones[:] = rng.random(plain.dones.shape) < 0.02
    plain.full, plain.pos = True, 0
    new = ComplementaryReplayBuffer(capacity, obs_space, act_space, device="cpu")
    vectorised = timed(lambda: new.load_rows(plain))
    looped = ComplementaryReplayBuffer(capacity, obs_space, act_space, device="cpu")

    def loop() -> None:
        for row in range(loop_rows):
            infos = [{"TimeLimit.truncated": bool(plain.timeouts[row, 0])}]
            looped.add(
                plain.observations[row],
                plain.next_observations[row],
                plain.actions[row],
                plain.rewards[row],
                plain.dones[row],
                infos,
            )

    loop_seconds = timed(loop)
    return {
        "capacity": capacity,
        "load_rows_seconds": vectorised,
        "add_loop_seconds_per_row": loop_seconds / loop_rows,
        "add_loop_seconds_extrapolated": loop_seconds / loop_rows * capacity,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "--only",
        choices=["train", "her", "pool", "replay", "rescore", "memory", "migrate", "policies", "gpu"],
        action="append",
    )
    parser.add_argument("--device", default="cpu", help="'cuda' runs the gpu part (only); it needs CUDA")
    parser.add_argument("--steps", type=int, default=50_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--capacity", type=int, default=1_000_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--policies", nargs="+", default=["MlpPolicy", "CnnPolicy"], help="the policies part's")
    parser.add_argument("--out", type=Path, default=None, help="JSON file to merge the results into")
    parser.add_argument(
        "--complementary-kwargs", type=json.loads, default={}, help="JSON knobs of ComplementaryDQN in the train part"
    )
    args = parser.parse_args()
    on_gpu = th.device(args.device).type == "cuda"
    if (on_gpu or "gpu" in (args.only or [])) and not th.cuda.is_available():
        parser.error(
            f"--device {args.device} --only gpu: CUDA is not available here (torch.cuda.is_available() is False, "
            f"torch {th.__version__}); the GPU figures need a machine with a CUDA GPU"
        )
    if on_gpu and set(args.only or ["gpu"]) != {"gpu"}:
        parser.error("--device cuda runs the gpu part only (the other parts are CPU figures)")
    th.set_num_threads(1)
    parts = args.only or (["gpu"] if on_gpu else ["replay", "rescore", "memory", "migrate", "train"])
    results: dict[str, Any] = json.loads(args.out.read_text()) if args.out and args.out.exists() else {}
    results["machine"] = {"platform": platform.platform(), "python": platform.python_version(), "torch": th.__version__}
    results["version"] = sb3_complementary.__version__
    for part in parts:
        print(f"[{part}]", flush=True)
        if part == "train":
            results[part] = bench_train(args.steps, args.repeats, args.seed, args.complementary_kwargs)
        elif part == "pool":
            results[part] = bench_pool(args.complementary_kwargs, args.repeats, args.seed)
        elif part == "gpu":
            results[part] = bench_policies(args.steps, args.repeats, args.seed, args.device if on_gpu else "cuda")
        elif part == "policies":
            results[part] = bench_policies(args.steps, args.repeats, args.seed, "cpu", tuple(args.policies))
        elif part == "her":
            results[part] = bench_her(args.steps, args.repeats, args.seed)
        elif part == "replay":
            results[part] = bench_replay(args.capacity, 256, iterations=200, repeats=args.repeats)
        elif part == "rescore":
            results[part] = bench_rescore(args.capacity, args.repeats)
        elif part == "migrate":
            results[part] = bench_migrate(args.capacity, loop_rows=20_000)
        else:
            results[part] = {str(d): bench_memory(args.capacity, d) for d in (4, 8, 84 * 84)}
        print(json.dumps(results[part], indent=1), flush=True)
    if args.out:
        args.out.write_text(json.dumps(results, indent=1) + "\n")


if __name__ == "__main__":
    main()
