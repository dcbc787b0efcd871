"""Queries never write: asking the model or its buffer what the replay does leaves training unchanged, bit for bit."""

from typing import Any

import numpy as np
import pytest
import torch as th
from stable_baselines3.common.callbacks import BaseCallback

from sb3_complementary import ComplementaryDQN
from sb3_complementary.common.extractor import held_out_auc
from tests.conftest import DENSITY_RATIO

SETTINGS = {"train_freq": 300, "refresh_interval": 300, "fast_memory": 200}


class AskEverything(BaseCallback):
    """At every env step, every query a user or a logger may make, and (with an extractor) a held-out AUC on ``rng``."""

    def __init__(self, rng_of: Any) -> None:
        super().__init__()
        self.rng_of = rng_of

    def _on_step(self) -> bool:
        model = self.model
        model.replay_diagnostics()
        model.sampling_ess_fraction()
        buffer = model.replay_buffer
        if buffer.size() > 2 * model.extractor_settings["fast_memory"]:
            buffer.ess_fraction()
            buffer.replay_weights()
            buffer.task_shares()
            buffer.sampling_probabilities(buffer.valid_indices(), buffer.uniform_fraction)
            buffer.overhead_bytes()
            if model.extractor is not None:
                held_out_auc(model.extractor, buffer, model.extractor_settings["fast_memory"], self.rng_of(model))
        return True


def _train(callback: BaseCallback | None, **replay: Any) -> tuple[list[th.Tensor], np.ndarray, bool]:
    """The policy's parameters, the buffer's scores, and whether the buffer holds a sum tree, after 2,500 steps."""
    model = ComplementaryDQN(
        "MlpPolicy", "CartPole-v1", seed=3, learning_starts=300, buffer_size=2000, extractor_kwargs=SETTINGS, **replay
    )
    model.learn(2500, callback=callback)
    parameters = [p.detach().clone() for p in model.policy.parameters()]
    return parameters, model.replay_buffer.scores.copy(), model.replay_buffer.tree is not None


@pytest.mark.parametrize(
    "replay",
    [{}, DENSITY_RATIO, {**DENSITY_RATIO, "candidate_pool": 0}],
    ids=["default", "density-ratio-pool", "density-ratio-tree"],
)
def test_queries_leave_training_bit_for_bit(replay: dict[str, Any]) -> None:
    """Nor do they build the sum tree where the draws never read it (the pool configurations)."""
    params, scores, tree = _train(None, **replay)
    asked_params, asked_scores, asked_tree = _train(
        AskEverything(lambda model: getattr(model, "auc_rng", None)), **replay
    )
    for a, b in zip(params, asked_params, strict=True):
        assert th.equal(a, b)
    np.testing.assert_array_equal(scores, asked_scores)
    assert asked_tree == tree == (replay.get("candidate_pool") == 0), "a query built the tree, or a tree draw did not"


def test_the_check_can_fail_a_query_on_the_training_generator_changes_training() -> None:
    # What the AUC did before 53be4dc: its held-out sample came from replay_rng, the generator of
    # the classifier's mini-batches, so asking for it moved the next fit and the scores.
    _, scores, _ = _train(None, **DENSITY_RATIO)
    _, asked_scores, _ = _train(AskEverything(lambda model: model.replay_rng), **DENSITY_RATIO)
    assert not np.array_equal(scores, asked_scores)
