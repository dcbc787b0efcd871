"""CrossQ's policy for ``Dict`` observations, which sb3-contrib does not ship (goal-conditioned tasks, HER)."""

from typing import Any

import torch as th
from gymnasium import spaces
from sb3_contrib.crossq.policies import CrossQPolicy
from stable_baselines3.common.torch_layers import BaseFeaturesExtractor, CombinedExtractor
from stable_baselines3.common.type_aliases import Schedule
from torch import nn


class MultiInputPolicy(CrossQPolicy):
    """
    sb3-contrib's ``CrossQPolicy`` for ``Dict`` observation spaces: SB3's ``CombinedExtractor``
    flattens and joins every key before the batch-renormalised actor and critics, as SAC's
    ``MultiInputPolicy`` does. The arguments, and their defaults, are ``CrossQPolicy``'s except
    ``features_extractor_class``.

    :param observation_space: A ``Dict`` observation space (for HER: ``observation``,
        ``achieved_goal``, ``desired_goal``).
    :param action_space: Action space (``Box``).
    :param lr_schedule: Learning rate schedule.
    :param net_arch: The actor's and critics' hidden layers (CrossQ's default: ``pi [256, 256]``,
        ``qf [1024, 1024]``).
    :param activation_fn: Activation function.
    :param batch_norm: Batch renormalisation in the actor and critics.
    :param batch_norm_momentum: Momentum of the running statistics.
    :param batch_norm_eps: Added to the variance.
    :param renorm_warmup_steps: Steps before batch renormalisation's corrections are used.
    :param use_sde: State-dependent exploration.
    :param log_std_init: Initial log standard deviation.
    :param use_expln: ``expln()`` instead of ``exp()`` for gSDE's standard deviation.
    :param clip_mean: Clip of the Gaussian mean with gSDE.
    :param features_extractor_class: Features extractor (default: ``CombinedExtractor``).
    :param features_extractor_kwargs: Its keyword arguments.
    :param normalize_images: Divide image observations by 255.
    :param optimizer_class: Optimizer class.
    :param optimizer_kwargs: Its keyword arguments (CrossQ's default: Adam with ``betas=(0.5, 0.999)``).
    :param n_critics: Number of critics.
    :param share_features_extractor: Share the features extractor between actor and critics.
    """

    def __init__(
        self,
        observation_space: spaces.Space,
        action_space: spaces.Box,
        lr_schedule: Schedule,
        net_arch: list[int] | dict[str, list[int]] | None = None,
        activation_fn: type[nn.Module] = nn.ReLU,
        batch_norm: bool = True,
        batch_norm_momentum: float = 0.01,
        batch_norm_eps: float = 0.001,
        renorm_warmup_steps: int = 100_000,
        use_sde: bool = False,
        log_std_init: float = -3,
        use_expln: bool = False,
        clip_mean: float = 2.0,
        features_extractor_class: type[BaseFeaturesExtractor] = CombinedExtractor,
        features_extractor_kwargs: dict[str, Any] | None = None,
        normalize_images: bool = True,
        optimizer_class: type[th.optim.Optimizer] = th.optim.Adam,
        optimizer_kwargs: dict[str, Any] | None = None,
        n_critics: int = 2,
        share_features_extractor: bool = False,
    ):
        super().__init__(
            observation_space,
            action_space,
            lr_schedule,
            net_arch=net_arch,
            activation_fn=activation_fn,
            batch_norm=batch_norm,
            batch_norm_momentum=batch_norm_momentum,
            batch_norm_eps=batch_norm_eps,
            renorm_warmup_steps=renorm_warmup_steps,
            use_sde=use_sde,
            log_std_init=log_std_init,
            use_expln=use_expln,
            clip_mean=clip_mean,
            features_extractor_class=features_extractor_class,
            features_extractor_kwargs=features_extractor_kwargs,
            normalize_images=normalize_images,
            optimizer_class=optimizer_class,
            optimizer_kwargs=optimizer_kwargs,
            n_critics=n_critics,
            share_features_extractor=share_features_extractor,
        )
