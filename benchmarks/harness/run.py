"""
One run: build the environment and the contender, train for the step budget, evaluate every
``eval.fraction`` of the budget on a separate environment, and return the record.

What is timed
-------------
``train_seconds`` is the wall-clock time spent inside ``model.learn()`` minus the time spent
in the evaluations that run inside it (measured around each evaluation in the callback). It
therefore covers environment stepping, replay insertion and sampling, gradient steps and
whatever else the contender does during ``learn`` (e.g. refreshing learned scores), and
excludes process start-up, imports, model construction (``setup_seconds``) and the final
evaluation (run after ``learn`` returns). ``train_cpu_seconds`` is the same span in process
CPU time. ``env_steps_per_second = budget / train_seconds``.

What is recorded
----------------
At every eval point: each episode's return (``curve.returns``), their mean and std; for a
weighted replay (PER, Complementary), also the sampling distribution's effective sample size as a
fraction of the stored transitions (``curve.ess_fraction``: 1 = uniform) and each task's share of
replay draws and of the stored data (``curve.task_shares``: ``{task_id: [sample_share,
data_share]}``, one task in a single-task run), which is how the multi-task study sees whether one
task monopolises replay.

The function never raises for a failing run: the record then has ``status: "failed"`` with
the traceback, so the matrix goes on.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import importlib.metadata
import os
import platform
import socket
import time
import traceback
from typing import Any

import numpy as np

from benchmarks.harness.envs import import_object_path, make_env
from benchmarks.harness.hyperparams import constructor_kwargs
from benchmarks.harness.matrix import RunSpec

_PACKAGES = ("sb3-complementary", "stable_baselines3", "sb3_contrib", "torch", "gymnasium", "numpy", "rl_zoo3")


def library_versions() -> dict[str, str]:
    """:return: Versions of the packages that determine a run's result (plus Python's)."""
    versions = {"python": platform.python_version()}
    for name in _PACKAGES:
        try:
            versions[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            versions[name] = "not installed"
    if versions["sb3-complementary"] == "not installed":
        # Running from a source checkout that is not pip-installed: read the package version.
        try:
            import sb3_complementary

            versions["sb3-complementary"] = str(getattr(sb3_complementary, "__version__", "source checkout"))
        except ImportError:
            pass
    return versions


def _now() -> str:
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")


def _limit_threads() -> None:
    """One process per run, one thread per process: runs do not compete for cores."""
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    os.environ.setdefault("MKL_NUM_THREADS", "1")
    import torch

    torch.set_num_threads(1)
    with contextlib.suppress(RuntimeError):  # already set, or parallel work already started in this process
        torch.set_num_interop_threads(1)


def execute_run(spec: RunSpec) -> dict[str, Any]:
    """
    Execute one run and return its record (JSON-safe). Imports the contender lazily.

    :param spec: The run.
    :return: The record, ``status`` ``"done"`` or ``"failed"``.
    """
    record: dict[str, Any] = {
        "run_id": spec.run_id,
        "status": "failed",
        "contender": spec.contender.to_dict(),
        "env": spec.entry.to_dict(),
        "seed": spec.seed,
        "eval": {
            "fraction": spec.evaluation.fraction,
            "episodes": spec.evaluation.episodes,
            "seed": spec.seed + spec.evaluation.seed_offset,
            "deterministic": True,
        },
        "hyperparams": spec.entry.hyperparams.to_dict(),
        "device": spec.device,
        "started_at": _now(),
        "host": {"hostname": socket.gethostname(), "cpu_count": os.cpu_count(), "platform": platform.platform()},
        "pid": os.getpid(),
        "error": None,
        "traceback": None,
    }
    curve: dict[str, list[Any]] = {"timesteps": [], "mean": [], "std": [], "returns": []}
    try:
        record["versions"] = library_versions()
        _limit_threads()
        _train(spec, record, curve)
        record["status"] = "done"
    except Exception as exc:
        record["error"] = f"{type(exc).__name__}: {exc}"
        record["traceback"] = traceback.format_exc()
        record["partial_curve"] = curve
    record["finished_at"] = _now()
    return record


def _train(spec: RunSpec, record: dict[str, Any], curve: dict[str, list[Any]]) -> None:
    import torch
    from stable_baselines3.common.callbacks import BaseCallback
    from stable_baselines3.common.evaluation import evaluate_policy
    from stable_baselines3.common.monitor import Monitor
    from stable_baselines3.common.vec_env import DummyVecEnv

    entry = spec.entry
    algo_class = import_object_path(spec.contender.algo)
    kwargs = constructor_kwargs(entry.hyperparams)
    kwargs.update(spec.contender.kwargs)
    record["model_kwargs"] = {**entry.hyperparams.model_kwargs, **spec.contender.kwargs}
    record["algo_class"] = f"{algo_class.__module__}.{algo_class.__qualname__}"
    record["torch_threads"] = torch.get_num_threads()

    eval_points = spec.evaluation.timesteps(entry.budget)
    eval_seed = spec.seed + spec.evaluation.seed_offset
    eval_kwargs = entry.eval_env_dict()["env_kwargs"]  # env_kwargs unless the entry evaluates on another env
    eval_env = DummyVecEnv([lambda: Monitor(make_env(entry.env_id, eval_kwargs, entry.wrappers))])

    def evaluate(timestep: int) -> float:
        start = time.perf_counter()
        if entry.eval_task == "training":  # score the task being learned at this point
            task = train_env.unwrapped.task_id  # type: ignore[attr-defined]
            eval_env.envs[0].unwrapped.set_task(task)  # type: ignore[attr-defined]
            curve.setdefault("eval_task", []).append(int(task))
        eval_env.seed(eval_seed)  # same start states at every eval point of this run
        successes: list[bool] = []

        def record_success(local: dict[str, Any], _: dict[str, Any]) -> None:
            info = local["info"]
            if local["done"] and "is_success" in info:  # goal-conditioned envs report it
                successes.append(bool(info["is_success"]))

        returns, _ = evaluate_policy(
            model,
            eval_env,
            n_eval_episodes=spec.evaluation.episodes,
            deterministic=True,
            return_episode_rewards=True,
            callback=record_success,
        )
        values = np.asarray(returns, dtype=np.float64)
        curve["timesteps"].append(int(timestep))
        curve["mean"].append(float(values.mean()))
        curve["std"].append(float(values.std()))
        curve["returns"].append(values.tolist())
        if successes:
            curve.setdefault("success_rate", []).append(float(np.mean(successes)))
        buffer = model.replay_buffer
        if hasattr(buffer, "task_shares"):  # weighted replays: how concentrated, and on which tasks
            diagnostics = (
                model.replay_diagnostics()
                if hasattr(model, "replay_diagnostics")
                else {"ess_fraction": model.sampling_ess_fraction()}
            )
            for name, value in diagnostics.items():
                curve.setdefault(name, []).append(value)
            curve.setdefault("task_shares", []).append({str(k): list(v) for k, v in buffer.task_shares().items()})
        return time.perf_counter() - start

    class _EvalInLearn(BaseCallback):
        """Evaluate at every eval point but the last, and account for the time it takes."""

        def __init__(self) -> None:
            super().__init__()
            self.next_index = 0
            self.eval_seconds = 0.0
            self.eval_cpu_seconds = 0.0

        def _on_step(self) -> bool:
            while self.next_index < len(eval_points) - 1 and self.num_timesteps >= eval_points[self.next_index]:
                cpu = time.process_time()
                self.eval_seconds += evaluate(eval_points[self.next_index])
                self.eval_cpu_seconds += time.process_time() - cpu
                self.next_index += 1
            return True

    setup_start = time.perf_counter()
    train_env = Monitor(make_env(entry.env_id, entry.env_kwargs, entry.wrappers))
    model = algo_class(entry.hyperparams.policy, train_env, seed=spec.seed, device=spec.device, verbose=0, **kwargs)
    setup_seconds = time.perf_counter() - setup_start

    callback = _EvalInLearn()
    learn_cpu = time.process_time()
    learn_start = time.perf_counter()
    model.learn(total_timesteps=entry.budget, callback=callback, progress_bar=False)
    learn_seconds = time.perf_counter() - learn_start
    learn_cpu_seconds = time.process_time() - learn_cpu

    final_eval_seconds = evaluate(model.num_timesteps)
    train_seconds = learn_seconds - callback.eval_seconds
    record["curve"] = curve
    record["timing"] = {
        "train_seconds": train_seconds,
        "train_cpu_seconds": learn_cpu_seconds - callback.eval_cpu_seconds,
        "eval_seconds": callback.eval_seconds + final_eval_seconds,
        "setup_seconds": setup_seconds,
        "learn_seconds": learn_seconds,
        "env_steps": int(model.num_timesteps),
        "env_steps_per_second": model.num_timesteps / train_seconds if train_seconds > 0 else float("nan"),
        "what": (
            "train_seconds = wall-clock inside model.learn() minus the evaluations run inside it; "
            "excludes process start, imports, model construction (setup_seconds) and the final evaluation"
        ),
    }
    if len(curve["timesteps"]) != len(eval_points):
        raise RuntimeError(f"expected {len(eval_points)} eval points, recorded {len(curve['timesteps'])}")
    eval_env.close()
    train_env.close()
