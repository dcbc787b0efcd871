"""
Loading our models for ``enjoy`` and ``record-video`` without allocating their replay buffer.

rl-zoo3's ``enjoy`` and ``record_video`` load an off-policy model with ``buffer_size=1`` (and
``optimize_memory_usage=False``): a trained agent needs no replay memory, and an Atari buffer
would otherwise take gigabytes. They decide that from a hard-coded list of rl-zoo3's own
off-policy algorithms, local to each script, which our algorithms are not in. While one of those
scripts runs, :func:`inference_algorithms` therefore puts in ``ALGOS`` a subclass of each of our
off-policy algorithms whose ``load`` supplies the same two defaults; the model it returns is an
instance of the real class.
"""

import contextlib
import io
import pathlib
from collections.abc import Iterator
from typing import Any

from stable_baselines3.common.base_class import BaseAlgorithm
from stable_baselines3.common.off_policy_algorithm import OffPolicyAlgorithm

from sb3_complementary.zoo.registry import ZOO_ALGORITHMS

#: What rl-zoo3's scripts pass when loading one of their own off-policy algorithms.
INFERENCE_LOAD_KWARGS: dict[str, Any] = {"buffer_size": 1, "optimize_memory_usage": False}


def inference_loader(algorithm: type[BaseAlgorithm]) -> type[BaseAlgorithm]:
    """
    A subclass of ``algorithm`` whose ``load`` defaults to :data:`INFERENCE_LOAD_KWARGS`.

    :param algorithm: An off-policy algorithm class.
    :return: The subclass; its ``load`` returns an instance of ``algorithm`` itself.
    """

    def load(
        cls: type,
        path: str | pathlib.Path | io.BufferedIOBase,
        env: Any = None,
        device: Any = "auto",
        custom_objects: dict[str, Any] | None = None,
        print_system_info: bool = False,
        force_reset: bool = True,
        **kwargs: Any,
    ) -> BaseAlgorithm:
        kwargs = {**INFERENCE_LOAD_KWARGS, **kwargs}
        return algorithm.load(path, env, device, custom_objects, print_system_info, force_reset, **kwargs)

    return type(algorithm.__name__, (algorithm,), {"load": classmethod(load), "__module__": __name__})


@contextlib.contextmanager
def inference_algorithms() -> Iterator[None]:
    """Within the block, ``ALGOS`` holds :func:`inference_loader` versions of our off-policy algorithms."""
    from rl_zoo3.utils import ALGOS

    saved = {entry.name: ALGOS[entry.name] for entry in ZOO_ALGORITHMS if entry.name in ALGOS}
    try:
        for name, algorithm in saved.items():
            if issubclass(algorithm, OffPolicyAlgorithm):
                ALGOS[name] = inference_loader(algorithm)
        yield
    finally:
        ALGOS.update(saved)
