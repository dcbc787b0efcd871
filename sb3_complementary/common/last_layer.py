"""Access to a network's last linear layer: finding it, and reading its input during a forward pass."""

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import torch as th
from torch import nn


def last_linear(module: nn.Module) -> nn.Linear:
    """
    The last ``nn.Linear`` registered in ``module``: the output layer of an SB3 ``create_mlp`` network.

    :param module: A Q-network, a critic's ``q_networks[i]`` or a quantile network.
    :raises ValueError: if it holds no linear layer.
    """
    layers = [m for m in module.modules() if isinstance(m, nn.Linear)]
    if not layers:
        raise ValueError(f"{type(module).__name__} has no nn.Linear layer to measure the contribution at")
    return layers[-1]


class LayerInput:
    """What :func:`capture_input` read: ``value`` is the ``(B, H)`` detached input of the layer's last call."""

    def __init__(self) -> None:
        self.value: th.Tensor | None = None

    def _hook(self, module: nn.Module, args: tuple[Any, ...]) -> None:
        self.value = args[0].detach()

    def get(self) -> th.Tensor:
        if self.value is None:
            raise RuntimeError("the layer was not called while its input was being captured")
        return self.value


@contextmanager
def capture_input(layer: nn.Module, enabled: bool = True) -> Iterator[LayerInput]:
    """
    Record the input of ``layer`` (its penultimate features ``φ``) while the block runs.

    A forward pre-hook, so the algorithm's own forward pass (and its numerics) stay untouched:
    ``φ`` comes for free from the pass that computes the loss.

    :param layer: Usually :func:`last_linear` of the first critic.
    :param enabled: When False, nothing is hooked (the contribution signal does not need ``φ``).
    """
    captured = LayerInput()
    handle = layer.register_forward_pre_hook(captured._hook) if enabled else None
    try:
        yield captured
    finally:
        if handle is not None:
            handle.remove()
