"""ExperienceExtractor, its running normaliser, and the schedule on which the model fits it and re-scores the buffer."""

import numpy as np
import pytest
import torch as th
from torch.nn import functional as F

from sb3_complementary import ComplementaryDQN, ExperienceExtractor
from sb3_complementary.common.extractor import RunningNormalizer
from tests.conftest import DENSITY_RATIO, TINY_DQN, TINY_EXTRACTOR, fill_buffer


def test_logits_start_at_zero_a_ratio_of_one():
    th.manual_seed(0)
    extractor = ExperienceExtractor(5, [16, 16], learning_rate=1e-3)
    x = np.random.default_rng(0).normal(scale=100.0, size=(64, 5)).astype(np.float32)
    np.testing.assert_array_equal(extractor.numpy_logits(x), np.zeros(64, dtype=np.float32))
    extractor.net[-1].reset_parameters()  # leave the zero init: a generic head
    logits = extractor.numpy_logits(x)
    assert logits.shape == (64,) and logits.dtype == np.float32
    assert np.all(np.isfinite(logits)) and np.std(logits) > 0
    th.testing.assert_close(extractor(th.as_tensor(x)), th.sigmoid(extractor.logits(th.as_tensor(x))))


def test_normaliser_statistics_match_numpy():
    rng = np.random.default_rng(1)
    normalizer = RunningNormalizer(3)
    batches = [rng.normal(loc=[5, -2, 0], scale=[3, 0.1, 10], size=(n, 3)) for n in (7, 50, 1, 200)]
    for batch in batches:
        normalizer.update(th.as_tensor(batch, dtype=th.float32))
    data = np.concatenate(batches)
    np.testing.assert_allclose(normalizer.mean.numpy(), data.mean(axis=0), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(normalizer.var.numpy(), data.var(axis=0), rtol=1e-3)
    assert normalizer.count.item() == pytest.approx(len(data), abs=1e-3)
    normalised = normalizer(th.as_tensor(data, dtype=th.float32)).numpy()
    np.testing.assert_allclose(normalised.mean(axis=0), 0, atol=1e-3)
    np.testing.assert_allclose(normalised.std(axis=0), 1, atol=1e-2)
    assert np.abs(normalizer(th.full((1, 3), 1e6)).numpy()).max() <= normalizer.clip


def test_normaliser_statistics_are_in_the_state_dict():
    extractor = ExperienceExtractor(4, [8], learning_rate=1e-3)
    extractor.normalizer.update(th.ones(10, 4) * 3)
    state = extractor.state_dict()
    assert {"normalizer.mean", "normalizer.var", "normalizer.count"} <= set(state)
    clone = ExperienceExtractor(4, [8], learning_rate=1e-3)
    clone.load_state_dict(state)
    th.testing.assert_close(clone.normalizer.mean, extractor.normalizer.mean)


def test_fitting_separable_labels_raises_their_logits():
    th.manual_seed(0)
    rng = np.random.default_rng(2)
    extractor = ExperienceExtractor(4, [16], learning_rate=1e-2)
    x = rng.normal(size=(256, 4)).astype(np.float32)
    labels = (x[:, 0] + 0.5 * x[:, 2] > 0).astype(np.float32)
    features, targets = th.as_tensor(x), th.as_tensor(labels)
    for _ in range(150):
        extractor.normalizer.update(features)
        loss = F.binary_cross_entropy_with_logits(extractor.logits(features), targets)
        extractor.optimizer.zero_grad()
        loss.backward()
        extractor.optimizer.step()
    scores = 1.0 / (1.0 + np.exp(-extractor.numpy_logits(x)))
    assert scores[labels == 1].mean() > 0.8 and scores[labels == 0].mean() < 0.2
    assert np.mean((scores > 0.5) == (labels == 1)) > 0.95


def make_model(**overrides):
    kwargs = {**TINY_DQN, **DENSITY_RATIO, **TINY_EXTRACTOR, "learning_starts": 10_000, "seed": 0}
    kwargs.update(overrides)
    return ComplementaryDQN("MlpPolicy", "CartPole-v1", **kwargs)


def test_fit_tells_the_fast_memory_from_the_buffer_and_the_rescore_writes_the_ratio(recording_logger):
    """
    fit_extractor: a buffer whose observations grow with time (fill_buffer writes the row counter)
    is separable by recency, so the classifier of the fast memory (the 100 freshest rows) against the
    whole buffer reaches the best held-out AUC there is: the slow side holds the fast rows too (a
    quarter of 400), so a perfect classifier scores about ``1 - 0.5 * 100 / 400 = 0.875`` (an unfitted
    one 0.5). refresh_scores then writes each row's tempered,
    self-normalised, capped ratio ``min(exp(logit / T) / mean, cap)`` as its score, and its priority.
    """
    logger, writer = recording_logger
    fast_fit = {**TINY_EXTRACTOR["extractor_kwargs"], "gradient_steps": 200, "lr_ratio": 100.0}  # Adam at 1e-2
    model = make_model(extractor_kwargs=fast_fit)
    model.set_logger(logger)
    buffer = model.replay_buffer
    fill_buffer(buffer, 400)
    assert np.isnan(model.extractor_auc)
    loss = model.fit_extractor()
    assert np.isfinite(loss) and model.extractor_auc > 0.8
    model.refresh_scores()
    logger.dump(0)
    assert writer.values("complementary/roc_auc") == [model.extractor_auc]

    indices = buffer.valid_indices()
    logits = model.extractor.numpy_logits(buffer.ratio_inputs(indices)).astype(np.float64)
    settings = model.extractor_settings
    tempered = np.exp(logits / settings["temperature"])
    expected = np.maximum(np.minimum(tempered / tempered.mean(), settings["cap"]), buffer.score_floor)
    np.testing.assert_allclose(buffer.scores[indices], expected, rtol=1e-4)
    assert buffer.scores[indices].max() > 2.0  # the freshest rows weigh more than the mean
    leaves, _ = buffer._leaves()  # what the next tree draw sees (the tree is built when one reads it)
    np.testing.assert_allclose(leaves[indices], buffer.priority(buffer.scores[indices]), rtol=1e-5)


def test_the_fit_waits_for_twice_the_fast_memory():
    model = make_model()
    fill_buffer(model.replay_buffer, 150)  # fast memory 100 (a fifth of 500): 200 rows are needed
    assert np.isnan(model.fit_extractor()) and np.isnan(model.extractor_auc)
    assert model.extractor.net[-1].weight.abs().sum().item() == 0


def test_the_schedule_follows_extractor_kwargs():
    """train_freq and refresh_interval beyond the run: learn() never fits; fit_extractor() still does, on demand."""
    never = {**TINY_EXTRACTOR["extractor_kwargs"], "train_freq": 10**6, "refresh_interval": 10**6}
    model = make_model(extractor_kwargs=never, learning_starts=20)
    model.learn(300)
    assert np.isnan(model.extractor_auc) and model.last_fit_step == 0
    assert model.extractor.net[-1].weight.abs().sum().item() == 0
    assert np.isfinite(model.fit_extractor()) and np.isfinite(model.extractor_auc)
    assert model.extractor.net[-1].weight.abs().sum().item() > 0

    often = make_model(learning_starts=20)  # every 100 steps
    often.learn(300)
    assert often.last_fit_step == 300 and np.isfinite(often.extractor_auc)
