"""Measurements that leave training untouched: the global RNG streams, train/eval flags and autograd."""

from collections.abc import Iterator
from contextlib import contextmanager

import torch as th
from torch import nn


@contextmanager
def preserved_rng(device: th.device | str) -> Iterator[None]:
    """
    Run the block on a fork of torch's global RNG (CPU, plus ``device`` if it is an accelerator).

    Random draws inside it (a SAC actor sampling next actions for the probe batch, a network
    being initialised) do not shift the stream that training draws from afterwards, so a
    weighted algorithm with uniform replay stays bit for bit equal to its parent.

    :param device: The model's device.
    """
    device = th.device(device)
    if device.type == "cpu":
        with th.random.fork_rng(devices=[]):
            yield
    else:
        with th.random.fork_rng(devices=[device.index or 0], device_type=device.type):
            yield


@contextmanager
def side_effect_free(module: nn.Module, device: th.device | str) -> Iterator[None]:
    """
    Evaluate ``module`` without side effects on training.

    No autograd graph, every submodule in eval mode (dropout off; batch-norm layers read their
    running statistics and do not update them), and torch's RNG preserved. Every submodule's
    train/eval flag is restored afterwards, whatever it was.

    :param module: The policy (actor, critics and their targets).
    :param device: The model's device.
    """
    modes = [(m, m.training) for m in module.modules()]
    with preserved_rng(device), th.no_grad():
        # What ``module.train(False)`` does, without nn.Module.__setattr__'s checks (10x faster, every step).
        for submodule, _ in modes:
            object.__setattr__(submodule, "training", False)
        try:
            yield
        finally:
            for submodule, training in modes:
                object.__setattr__(submodule, "training", training)
