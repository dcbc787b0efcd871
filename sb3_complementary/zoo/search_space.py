"""
Optuna search space of our knobs, added on top of the parent algorithm's rl-zoo3 search space.

rl-zoo3 looks a sampler up in ``rl_zoo3.hyperparams_opt.HYPERPARAMS_SAMPLER`` by algorithm name
and calls it as ``sampler(trial, n_actions, n_envs, additional_args)``; the sampler returns
constructor keyword arguments. :func:`extend_sampler` builds ours: the parent's sampler (DQN's
for the DQN family) followed by a knob sampler from this module.

The replay knobs are suggested under their constructor names and the extractor's settings as
``extractor_<key>``, so a stored trial converts back to keyword arguments (``--trial-id``) with
:func:`extend_converter`: the parent's ``HYPERPARAMS_CONVERTER`` rewrites its own encoded
parameters (``one_minus_gamma``, ``batch_size_pow``, ``net_arch``, ...), and the
``extractor_<key>`` ones are nested back into ``extractor_kwargs``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # optuna comes with the zoo extra; importing this module must not need it
    import optuna

#: ``knobs(trial) -> {constructor knob: value}``.
KnobSampler = Callable[["optuna.Trial"], dict[str, Any]]
#: rl-zoo3's sampler signature: ``sampler(trial, n_actions, n_envs, additional_args) -> kwargs``.
ZooSampler = Callable[["optuna.Trial", int, int, dict], dict[str, Any]]


def sample_replay_knobs(trial: optuna.Trial) -> dict[str, Any]:
    """
    Knobs of every weighted replay: how peaked the sampling is and how much of it stays uniform.

    :param trial: The Optuna trial.
    :return: ``alpha`` in [0, 1] (0: uniform draws, the actor-critic default) and ``uniform_fraction``
        in [0, 0.5].
    """
    return {
        "alpha": trial.suggest_float("alpha", 0.0, 1.0),
        "uniform_fraction": trial.suggest_float("uniform_fraction", 0.0, 0.5),
    }


def sample_complementary_knobs(trial: optuna.Trial) -> dict[str, Any]:
    """
    Knobs of a Complementary algorithm: the replay knobs plus two of the extractor's settings.

    :param trial: The Optuna trial.
    :return: The replay knobs and ``extractor_kwargs`` with ``lr_ratio`` (log, [0.03, 1]) and
        ``refresh_interval`` (log, [250, 4000] env steps), suggested as ``extractor_lr_ratio`` and
        ``extractor_refresh_interval`` (:func:`extend_converter` nests a stored trial's back).
    """
    return {
        **sample_replay_knobs(trial),
        "extractor_kwargs": {
            "lr_ratio": trial.suggest_float("extractor_lr_ratio", 0.03, 1.0, log=True),
            "refresh_interval": trial.suggest_int("extractor_refresh_interval", 250, 4000, log=True),
        },
    }


def extend_sampler(parent: ZooSampler, knobs: KnobSampler) -> ZooSampler:
    """
    A rl-zoo3 sampler that samples the parent's search space, then our knobs.

    :param parent: The parent algorithm's rl-zoo3 sampler (e.g. ``sample_dqn_params``).
    :param knobs: Our knob sampler, e.g. :func:`sample_complementary_knobs`.
    :return: A sampler with rl-zoo3's signature returning both sets of keyword arguments.
    :raises ValueError: if a knob name collides with a parameter the parent already sampled.
    """

    def sample(trial: optuna.Trial, n_actions: int, n_envs: int, additional_args: dict) -> dict[str, Any]:
        params = parent(trial, n_actions, n_envs, additional_args)
        extra = knobs(trial)
        clash = sorted(set(params) & set(extra))
        if clash:
            raise ValueError(f"knob sampler {knobs.__name__} re-samples the parent's parameters {clash}")
        return {**params, **extra}

    sample.__name__ = f"{getattr(parent, '__name__', 'parent')}+{knobs.__name__}"
    sample.__doc__ = f"rl-zoo3 sampler: {getattr(parent, '__name__', 'parent')} then {knobs.__name__}."
    return sample


#: Prefix of the trial parameters that :func:`extend_converter` nests into ``extractor_kwargs``.
EXTRACTOR_PREFIX = "extractor_"


def extend_converter(parent: Callable[[dict[str, Any]], dict[str, Any]]) -> Callable[[dict[str, Any]], dict[str, Any]]:
    """
    A rl-zoo3 converter (stored trial parameters -> constructor kwargs) for our algorithms.

    :param parent: The parent algorithm's ``HYPERPARAMS_CONVERTER`` entry.
    :return: A converter that runs the parent's, then nests every ``extractor_<key>`` parameter into
        ``extractor_kwargs`` (a trial's parameters are flat; the constructor takes a dict).
    """

    def convert(params: dict[str, Any]) -> dict[str, Any]:
        kwargs = dict(parent(params))
        nested = {k[len(EXTRACTOR_PREFIX) :]: kwargs.pop(k) for k in list(kwargs) if k.startswith(EXTRACTOR_PREFIX)}
        if nested:
            kwargs["extractor_kwargs"] = {**kwargs.get("extractor_kwargs", {}), **nested}
        return kwargs

    return convert
