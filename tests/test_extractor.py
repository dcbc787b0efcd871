"""ExperienceExtractor, its running normaliser, and the callback that fits it and re-scores the buffer."""

import numpy as np
import pytest
import torch as th
from torch.nn import functional as F

from sb3_complementary import ComplementaryDQN, ExperienceExtractor, ExtractorTrainingCallback
from sb3_complementary.common.extractor import RunningNormalizer
from tests.conftest import LABEL_REPLAY, TINY_DQN, TINY_EXTRACTOR


def test_scores_start_neutral_and_stay_in_open_unit_interval():
    th.manual_seed(0)
    extractor = ExperienceExtractor(5, [16, 16], learning_rate=1e-3)
    x = np.random.default_rng(0).normal(scale=100.0, size=(64, 5)).astype(np.float32)
    np.testing.assert_array_equal(extractor.score(x), np.full(64, 0.5, dtype=np.float32))
    extractor.net[-1].reset_parameters()  # leave the neutral init: a generic head
    scores = extractor.score(x)
    assert scores.shape == (64,) and scores.dtype == np.float32
    assert np.all((scores > 0) & (scores < 1))
    assert np.std(scores) > 0
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


def test_fitting_separable_labels_raises_positive_scores():
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
    scores = extractor.score(x)
    assert scores[labels == 1].mean() > 0.8 and scores[labels == 0].mean() < 0.2
    assert np.mean((scores > 0.5) == (labels == 1)) > 0.95


def make_model(**overrides):
    kwargs = {**TINY_DQN, **TINY_EXTRACTOR, **LABEL_REPLAY, "contribution": "td", "learning_starts": 10_000, "seed": 0}
    kwargs.update(overrides)
    return ComplementaryDQN("MlpPolicy", "CartPole-v1", **kwargs)


def test_callback_fit_learns_labels_from_the_store():
    """Used directly, the callback fits the extractor on the label store (here: positive iff high reward)."""
    model = make_model(coupling_coef=0.1, extractor_gradient_steps=60, learning_rate=1e-3, extractor_lr_ratio=10.0)
    model.learn(100)  # collect only
    buffer = model.replay_buffer
    indices = buffer.valid_indices()
    features = buffer.feature_matrix(indices)
    # Label by episode position: the first half of each episode "helped".
    position = features[:, 8]
    labels = (position < np.median(position)).astype(np.float32)
    model.label_store.add(features, labels)

    callback = ExtractorTrainingCallback(extractor_train_freq=1, refresh_interval=1)
    callback.init_callback(model)
    before = model.extractor.score(features)
    callback.fit()
    after = model.extractor.score(features)
    assert np.isfinite(callback.last_loss)
    gain_positive = after[labels == 1].mean() - before[labels == 1].mean()
    gain_negative = after[labels == 0].mean() - before[labels == 0].mean()
    assert gain_positive > 0.05 and gain_positive > gain_negative + 0.1

    callback.refresh()
    np.testing.assert_allclose(buffer.scores[indices], np.maximum(after, buffer.score_floor), rtol=1e-5)
    np.testing.assert_allclose(buffer.tree.leaves[indices], buffer.priority(buffer.scores[indices]), rtol=1e-5)


def test_callback_rejects_algorithms_without_extractor():
    from stable_baselines3 import DQN

    model = DQN("MlpPolicy", "CartPole-v1", **TINY_DQN)
    with pytest.raises(ValueError, match="ExtractorTrainingCallback"):
        model.learn(10, callback=ExtractorTrainingCallback())


def test_callback_overrides_win_over_model_knobs():
    model = make_model(extractor_train_freq=10**6, refresh_interval=10**6, learning_starts=20)
    callback = ExtractorTrainingCallback(extractor_train_freq=50, refresh_interval=50, batch_size=16)
    model.learn(300, callback=callback)
    assert np.isfinite(callback.last_loss)  # it fitted, although the model's own schedule never would
    head = model.extractor.net[-1]
    assert head.weight.abs().sum().item() > 0
