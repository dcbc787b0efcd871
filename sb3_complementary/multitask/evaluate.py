"""
Command line of the per-task evaluation (:func:`~sb3_complementary.multitask.evaluation.evaluate_multitask`)
of a saved model: a table, and optionally a JSON file and a bar chart.

    python -m sb3_complementary.multitask.evaluate --model logs/model.zip --algo complementary_dqn --family cartpole

The same command is ``sb3-complementary evaluate-multitask``.
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from stable_baselines3.common.base_class import BaseAlgorithm
from stable_baselines3.common.off_policy_algorithm import OffPolicyAlgorithm

from sb3_complementary.multitask.evaluation import evaluate_multitask, one_hot_expected
from sb3_complementary.multitask.multitask_env import MultiTaskEnv
from sb3_complementary.multitask.variants import get_family, list_families

#: ``--algo`` names; anything else must be a ``module:Class`` path.
ALGORITHMS: dict[str, str] = {
    "complementary_dqn": "sb3_complementary:ComplementaryDQN",
    "prioritized_dqn": "sb3_complementary:PrioritizedDQN",
    "complementary_qrdqn": "sb3_complementary:ComplementaryQRDQN",
    "prioritized_qrdqn": "sb3_complementary:PrioritizedQRDQN",
    "complementary_sac": "sb3_complementary:ComplementarySAC",
    "prioritized_sac": "sb3_complementary:PrioritizedSAC",
    "complementary_td3": "sb3_complementary:ComplementaryTD3",
    "prioritized_td3": "sb3_complementary:PrioritizedTD3",
    "complementary_ddpg": "sb3_complementary:ComplementaryDDPG",
    "complementary_tqc": "sb3_complementary:ComplementaryTQC",
    "complementary_crossq": "sb3_complementary:ComplementaryCrossQ",
    "dqn": "stable_baselines3:DQN",
    "ppo": "stable_baselines3:PPO",
    "a2c": "stable_baselines3:A2C",
    "sac": "stable_baselines3:SAC",
    "td3": "stable_baselines3:TD3",
    "ddpg": "stable_baselines3:DDPG",
    "qrdqn": "sb3_contrib:QRDQN",
}


def algorithm_class(algo: str) -> type[BaseAlgorithm]:
    """
    :param algo: An ``--algo`` name of :data:`ALGORITHMS` or a ``module:Class`` path.
    :return: The algorithm class.
    :raises ValueError: listing the known names when ``algo`` is neither.
    """
    path = ALGORITHMS.get(algo, algo)
    module_name, sep, attr = path.partition(":")
    if not sep:
        raise ValueError(f"unknown algorithm {algo!r}; choose from {sorted(ALGORITHMS)} or give 'module:Class'")
    try:
        cls = getattr(importlib.import_module(module_name), attr)
    except (ImportError, AttributeError) as exc:
        raise ValueError(f"cannot import algorithm {algo!r} ({path}): {exc}") from exc
    if not (isinstance(cls, type) and issubclass(cls, BaseAlgorithm)):
        raise ValueError(f"{path} is not an SB3 algorithm class")
    return cls


def load_for_evaluation(algo: str, path: str | Path, device: str = "cpu") -> BaseAlgorithm:
    """
    Load a saved model for evaluation only: an off-policy model gets a one-transition replay
    buffer (as rl-zoo3's ``enjoy`` does), since evaluation never replays.

    :param algo: See :func:`algorithm_class`.
    :param path: The ``.zip`` file.
    :param device: Torch device.
    :return: The model.
    """
    cls = algorithm_class(algo)
    extra: dict[str, Any] = {}
    if issubclass(cls, OffPolicyAlgorithm):
        extra = {"buffer_size": 1, "optimize_memory_usage": False}
    return cls.load(path, device=device, **extra)


def build_parser(prog: str = "python -m sb3_complementary.multitask.evaluate") -> argparse.ArgumentParser:
    """
    :param prog: Program name shown in usage and errors.
    :return: The ``evaluate-multitask`` argument parser.
    """
    parser = argparse.ArgumentParser(
        prog=prog,
        description="Evaluate a saved model on every variant of a task family: per-task mean ± std, "
        "aggregate mean and IQM, optional bar chart and JSON.",
    )
    parser.add_argument("--model", required=True, help="saved model (.zip)")
    parser.add_argument("--algo", default="complementary_dqn", help=f"one of {sorted(ALGORITHMS)} or module:Class")
    parser.add_argument("--family", default="cartpole", help=f"task family (built in: {list_families()})")
    parser.add_argument("--variants", default=None, help="comma-separated variant names or ids (default: all)")
    parser.add_argument("-n", "--n-eval-episodes", type=int, default=10, help="episodes per task")
    parser.add_argument("--seed", type=int, default=0, help="seed of every task's evaluation env")
    parser.add_argument("--stochastic", action="store_true", help="sample actions instead of deterministic ones")
    parser.add_argument(
        "--task-id-in-obs",
        choices=("auto", "yes", "no"),
        default="auto",
        help="append the one-hot task block to observations (auto: if the model's observation space has room)",
    )
    parser.add_argument("--plot", default=None, help="write the per-task bar chart to this PNG")
    parser.add_argument("--json", default=None, help="write the result (episodes included) to this JSON file")
    parser.add_argument("--device", default="cpu", help="torch device of the loaded model")
    parser.add_argument(
        "--import",
        dest="imports",
        action="append",
        default=[],
        metavar="MODULE",
        help="import this module first (e.g. one that calls register_family); repeatable",
    )
    return parser


def main(argv: Sequence[str] | None = None, prog: str | None = None) -> int:
    """
    Command line entry point (also ``sb3-complementary evaluate-multitask``).

    :param argv: Arguments after the program name (``sys.argv[1:]`` when None).
    :param prog: Program name for usage and errors (default: the ``python -m`` form).
    :return: Exit status (0 on success; bad input exits with argparse's status 2 and a message).
    """
    parser = build_parser() if prog is None else build_parser(prog)
    args = parser.parse_args(argv)
    try:
        for module in args.imports:
            importlib.import_module(module)
        family = get_family(args.family)
        variants: list[int | str] | None = None
        if args.variants:
            variants = [int(v) if v.strip().isdigit() else v.strip() for v in args.variants.split(",")]
        model = load_for_evaluation(args.algo, args.model, device=args.device)
        env = MultiTaskEnv(family, schedule="round_robin", variants=variants)
        flag = {"auto": None, "yes": True, "no": False}[args.task_id_in_obs]
        env.set_task_id_in_obs(one_hot_expected(model.observation_space, env) if flag is None else flag)
        try:
            result = evaluate_multitask(
                model,
                env,
                n_eval_episodes=args.n_eval_episodes,
                deterministic=not args.stochastic,
                seed=args.seed,
                plot_path=args.plot,
            )
        finally:
            env.close()
    except (ValueError, FileNotFoundError) as exc:
        parser.error(str(exc))
    print(result.format_table())
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps(result.to_dict(), indent=1) + "\n")
    if args.plot:
        print(f"bar chart: {args.plot}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
