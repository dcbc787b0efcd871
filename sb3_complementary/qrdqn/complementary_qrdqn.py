"""ComplementaryQRDQN: sb3-contrib's QRDQN whose replay is run by a co-evolving experience extractor."""

from typing import Any, ClassVar

import torch as th
from sb3_contrib.qrdqn.policies import CnnPolicy, MlpPolicy, MultiInputPolicy, QRDQNPolicy
from stable_baselines3.common.buffers import ReplayBuffer
from stable_baselines3.common.policies import BasePolicy
from stable_baselines3.common.type_aliases import GymEnv, Schedule

from sb3_complementary.qrdqn.weighted_qrdqn import WeightedQRDQN


class ComplementaryQRDQN(WeightedQRDQN):
    """
    QRDQN with Complementary replay. By default (``contribution="laber"``: LaBER, Lahire et al. 2022)
    each gradient step draws a uniform pool of ``candidate_pool`` batches, measures each candidate's
    ``|TD|`` now, and down-samples its batch in proportion to it, with IS weights that keep a uniform
    batch's gradient; no extractor is built. With ``contribution="density_ratio"`` a small experience
    extractor, a classifier of the freshest transitions against the whole buffer, multiplies fresh
    ``|TD|`` by its density ratio; it is fitted by an
    :class:`~sb3_complementary.common.extractor.ExtractorTrainingCallback` that ``learn()`` adds.
    Idea: Complementary RL (arXiv 2603.17621), mapped onto SB3 in docs/design.md.

    Drop-in: ``ComplementaryQRDQN("MlpPolicy", env).learn(...)`` works wherever ``QRDQN`` does. It takes every
    argument of sb3-contrib's ``QRDQN`` (positional ones included), then these keyword-only knobs:

    :param contribution: What scores the draws: ``"laber"`` (fresh ``|TD|`` on the pool, with LaBER's IS
        weights ``mean(p) / p_i`` that keep a uniform batch's gradient), ``"fresh_td"`` (fresh ``|TD|``,
        floored at ``score_floor`` and never undone by IS weights) or ``"density_ratio"`` (the
        experience extractor's density ratio times fresh ``|TD|``; with ``candidate_pool=0``, the
        ratio alone from the sum tree). The ``|TD|`` kinds need ``candidate_pool >= 1``.
    :param alpha: Priority exponent, >= 0. 0 draws uniformly, as the parent does, and scores nothing.
    :param epsilon: Added to the scores, >= 0.
    :param uniform_fraction: Share of each batch drawn uniformly, in [0, 1].
    :param score_floor: Minimum score, >= 0 (also the fallback for non-finite scores).
    :param candidate_pool: ``k >= 1``: each gradient step selects its batch from ``k * batch_size``
        uniform candidates, their ``|TD|`` measured now by side-effect-free forward passes (with HER,
        after relabelling). 0: no pool (``density_ratio`` only).
    :param extractor_kwargs: The extractor's settings (network, schedule, fast memory, ratio
        temperature and cap, IS exponent):
        :func:`~sb3_complementary.common.extractor_settings.extractor_settings`. Read only with
        ``contribution="density_ratio"``.
    """

    policy_aliases: ClassVar[dict[str, type[BasePolicy]]] = {
        "MlpPolicy": MlpPolicy,
        "CnnPolicy": CnnPolicy,
        "MultiInputPolicy": MultiInputPolicy,
    }

    def __init__(
        self,
        policy: str | type[QRDQNPolicy],
        env: GymEnv | str,
        learning_rate: float | Schedule = 5e-5,
        buffer_size: int = 1000000,  # 1e6,
        learning_starts: int = 100,
        batch_size: int = 32,
        tau: float = 1.0,
        gamma: float = 0.99,
        train_freq: int | tuple[int, str] = 4,
        gradient_steps: int = 1,
        replay_buffer_class: type[ReplayBuffer] | None = None,
        replay_buffer_kwargs: dict[str, Any] | None = None,
        optimize_memory_usage: bool = False,
        n_steps: int = 1,
        target_update_interval: int = 10000,
        exploration_fraction: float = 0.005,
        exploration_initial_eps: float = 1.0,
        exploration_final_eps: float = 0.01,
        max_grad_norm: float | None = None,
        stats_window_size: int = 100,
        tensorboard_log: str | None = None,
        policy_kwargs: dict[str, Any] | None = None,
        verbose: int = 0,
        seed: int | None = None,
        device: th.device | str = "auto",
        _init_setup_model: bool = True,
        *,
        contribution: str = "laber",
        alpha: float = 1.0,
        epsilon: float = 1e-6,
        uniform_fraction: float = 0.0,
        score_floor: float = 0.0,
        candidate_pool: int = 4,
        extractor_kwargs: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(
            policy=policy,
            env=env,
            learning_rate=learning_rate,
            buffer_size=buffer_size,
            learning_starts=learning_starts,
            batch_size=batch_size,
            tau=tau,
            gamma=gamma,
            train_freq=train_freq,
            gradient_steps=gradient_steps,
            replay_buffer_class=replay_buffer_class,
            replay_buffer_kwargs=replay_buffer_kwargs,
            optimize_memory_usage=optimize_memory_usage,
            n_steps=n_steps,
            target_update_interval=target_update_interval,
            exploration_fraction=exploration_fraction,
            exploration_initial_eps=exploration_initial_eps,
            exploration_final_eps=exploration_final_eps,
            max_grad_norm=max_grad_norm,
            stats_window_size=stats_window_size,
            tensorboard_log=tensorboard_log,
            policy_kwargs=policy_kwargs,
            verbose=verbose,
            seed=seed,
            device=device,
            _init_setup_model=False,
        )
        self._init_replay(
            contribution=contribution,
            alpha=alpha,
            epsilon=epsilon,
            uniform_fraction=uniform_fraction,
            score_floor=score_floor,
            candidate_pool=candidate_pool,
            extractor_kwargs=extractor_kwargs,
        )
        if _init_setup_model:
            self._setup_model()
