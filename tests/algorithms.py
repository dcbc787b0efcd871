"""Tiny settings and builders for every weighted algorithm beyond DQN (shared by the family test files)."""

import copy
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch as th
from sb3_contrib import QRDQN, TQC, CrossQ
from stable_baselines3 import DDPG, SAC, TD3
from stable_baselines3.common.base_class import BaseAlgorithm

from sb3_complementary import (
    ComplementaryCrossQ,
    ComplementaryDDPG,
    ComplementaryQRDQN,
    ComplementaryReplayBuffer,
    ComplementarySAC,
    ComplementaryTD3,
    ComplementaryTQC,
    PrioritizedQRDQN,
    PrioritizedSAC,
    PrioritizedTD3,
    WeightedSamples,
)
from tests.conftest import TINY_DQN, tiny_extractor

#: Small actor-critic settings: 200 gradient steps in a 300-step learn.
TINY_AC: dict[str, Any] = {
    "learning_starts": 100,
    "batch_size": 16,
    "buffer_size": 1000,
    "policy_kwargs": {"net_arch": [16]},
    "device": "cpu",
}
#: Learn length of the short runs (past ``learning_starts`` and past two extractor fits).
STEPS = 300


@dataclass(frozen=True)
class Spec:
    """One algorithm under test: our class, its uniform parent, its tiny env and settings."""

    cls: type[BaseAlgorithm]
    parent: type[BaseAlgorithm]
    env_id: str
    kwargs: dict[str, Any] = field(default_factory=dict)

    @property
    def complementary(self) -> bool:
        return self.cls.__name__.startswith("Complementary")

    def model_kwargs(self, **overrides: Any) -> dict[str, Any]:
        """Fresh settings: the class's defaults with a tiny extractor schedule (it fits within :data:`STEPS`).

        SB3 writes into the ``policy_kwargs`` dict it is given, so never share one.
        """
        extra = tiny_extractor(fast_memory=100) if self.complementary else {}
        return copy.deepcopy({**self.kwargs, **extra, **overrides})

    def parent_kwargs(self, **overrides: Any) -> dict[str, Any]:
        return copy.deepcopy({**self.kwargs, **overrides})


_TQC_POLICY = {"net_arch": [16], "n_quantiles": 5, "n_critics": 2}
_QR_SETTINGS = {**TINY_DQN, "policy_kwargs": {"net_arch": [16], "n_quantiles": 8}}

SPECS: dict[str, Spec] = {
    "ComplementarySAC": Spec(ComplementarySAC, SAC, "Pendulum-v1", TINY_AC),
    "PrioritizedSAC": Spec(PrioritizedSAC, SAC, "Pendulum-v1", TINY_AC),
    "ComplementaryTD3": Spec(ComplementaryTD3, TD3, "Pendulum-v1", TINY_AC),
    "PrioritizedTD3": Spec(PrioritizedTD3, TD3, "Pendulum-v1", TINY_AC),
    "ComplementaryDDPG": Spec(ComplementaryDDPG, DDPG, "Pendulum-v1", TINY_AC),
    "ComplementaryTQC": Spec(ComplementaryTQC, TQC, "Pendulum-v1", {**TINY_AC, "policy_kwargs": _TQC_POLICY}),
    "ComplementaryCrossQ": Spec(ComplementaryCrossQ, CrossQ, "Pendulum-v1", TINY_AC),
    "ComplementaryQRDQN": Spec(ComplementaryQRDQN, QRDQN, "CartPole-v1", _QR_SETTINGS),
    "PrioritizedQRDQN": Spec(PrioritizedQRDQN, QRDQN, "CartPole-v1", _QR_SETTINGS),
}
ACTOR_CRITIC = [name for name, spec in SPECS.items() if spec.env_id == "Pendulum-v1"]
DISTRIBUTIONAL = ["ComplementaryQRDQN", "PrioritizedQRDQN", "ComplementaryTQC"]


def build(name: str, env: Any = None, **overrides: Any) -> Any:
    """Our algorithm ``name`` with its tiny settings on its tiny env (or ``env``); ``overrides`` win."""
    spec = SPECS[name]
    return spec.cls("MlpPolicy", env or spec.env_id, **spec.model_kwargs(**overrides))


def build_parent(name: str, env: Any = None, **overrides: Any) -> Any:
    spec = SPECS[name]
    return spec.parent("MlpPolicy", env or spec.env_id, **spec.parent_kwargs(**overrides))


def critic_of(model: Any) -> th.nn.Module:
    """The module whose loss carries the IS weights: the critic, or QR-DQN's quantile network."""
    return model.critic if hasattr(model, "critic") else model.quantile_net


def critic_optimizer(model: Any) -> th.optim.Optimizer:
    return model.critic.optimizer if hasattr(model, "critic") else model.policy.optimizer


def fixed_batch(model: Any, weights: np.ndarray, indices: np.ndarray | None = None):
    """A ``sample_weighted`` replacement that always returns the same transitions with the given IS weights."""
    buffer: ComplementaryReplayBuffer = model.replay_buffer
    n = len(weights)
    chosen = np.arange(n) * 3 % buffer.size() if indices is None else indices

    def sample_weighted(batch_size: int, env: Any = None) -> WeightedSamples:
        assert batch_size == n
        return WeightedSamples(
            samples=buffer.get_samples_at(chosen, env),
            indices=chosen,
            weights=th.as_tensor(weights, dtype=th.float32).reshape(-1, 1),
            raw_weights=np.asarray(weights, dtype=np.float64),
            control=np.arange(n) < n // 4,
        )

    return sample_weighted


# --------------------------------------------------------------------------- one train() call on a fixed batch


def train_with_weights(name: str, weights: np.ndarray, monkeypatch: Any, gradient_steps: int = 3) -> tuple[list, list]:
    """
    One ``train()`` call on a fixed batch with the given IS weights, from a fresh model, with the critic's
    optimizer step replaced by a recorder (so the critic never moves and the actor sees the same critic).

    :return: per step, the critic's gradients; per actor step, the actor's gradients.
    """
    model = build(name, seed=0, learning_starts=10_000)
    model.learn(150)  # collect only
    # The model's draw (the sum tree or the candidate pool, whichever the class's defaults use) returns the fixed batch.
    draw = fixed_batch(model, np.asarray(weights))
    monkeypatch.setattr(model, "_draw_batch", lambda batch_size: draw(batch_size, model._vec_normalize_env))
    critic_grads, actor_grads = [], []

    def grads(module):
        return [th.zeros_like(p) if p.grad is None else p.grad.clone() for p in module.parameters()]

    monkeypatch.setattr(critic_optimizer(model), "step", lambda *a, **k: critic_grads.append(grads(critic_of(model))))
    if hasattr(model, "actor"):
        actor_step = model.actor.optimizer.step

        def record_then_step(*args, **kwargs):
            actor_grads.append(grads(model.actor))
            return actor_step(*args, **kwargs)

        monkeypatch.setattr(model.actor.optimizer, "step", record_then_step)
    th.manual_seed(0)
    model.train(gradient_steps=gradient_steps, batch_size=len(weights))
    return critic_grads, actor_grads
