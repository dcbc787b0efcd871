"""
The algorithms this package adds to rl-zoo3, and their registration into rl-zoo3's lookup tables.

rl-zoo3 has no plugin mechanism: ``train``, ``enjoy``, ``record_video`` and the experiment
manager look algorithms up in the module-level dict ``rl_zoo3.utils.ALGOS`` (re-exported as
``rl_zoo3.ALGOS``), and hyperparameter optimisation looks samplers and converters up in
``rl_zoo3.hyperparams_opt.HYPERPARAMS_SAMPLER`` / ``HYPERPARAMS_CONVERTER``. Every module
imports those dicts by name, so :func:`register_algorithms` inserts into the dict objects
themselves, which every importer then sees.

Adding an algorithm is one line in :data:`ZOO_ALGORITHMS` plus its packaged
``hyperparams/<name>.yml``.
"""

from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

from stable_baselines3.common.base_class import BaseAlgorithm

from sb3_complementary.crossq import ComplementaryCrossQ
from sb3_complementary.ddpg import ComplementaryDDPG
from sb3_complementary.dqn import ComplementaryDQN, PrioritizedDQN
from sb3_complementary.qrdqn import ComplementaryQRDQN, PrioritizedQRDQN
from sb3_complementary.sac import ComplementarySAC, PrioritizedSAC
from sb3_complementary.td3 import ComplementaryTD3, PrioritizedTD3
from sb3_complementary.tqc import ComplementaryTQC
from sb3_complementary.zoo.search_space import (
    KnobSampler,
    ZooSampler,
    extend_converter,
    extend_sampler,
    sample_complementary_knobs,
    sample_replay_knobs,
)

#: Folder of the packaged hyperparameter files, one ``<name>.yml`` per algorithm.
HYPERPARAMS_DIR = Path(__file__).parent / "hyperparams"


@dataclass(frozen=True)
class ZooAlgorithm:
    """
    One algorithm of this package as rl-zoo3 sees it.

    :param name: The ``--algo`` name (also the packaged ``hyperparams/<name>.yml`` and the log sub-folder).
    :param algorithm: The algorithm class.
    :param parent: The rl-zoo3 algorithm it extends (``"dqn"``): its Optuna search space and its
        converter of stored trials are reused.
    :param knobs: Sampler of our own knobs, added to the parent's search space by ``-optimize``.
    """

    name: str
    algorithm: type[BaseAlgorithm]
    parent: str
    knobs: KnobSampler

    @property
    def hyperparams_file(self) -> Path:
        """:return: The packaged rl-zoo3 hyperparameter file of this algorithm."""
        return HYPERPARAMS_DIR / f"{self.name}.yml"


#: Every algorithm of this package, in the order ``--help`` and error messages list them.
ZOO_ALGORITHMS: tuple[ZooAlgorithm, ...] = (
    ZooAlgorithm("complementary_dqn", ComplementaryDQN, parent="dqn", knobs=sample_complementary_knobs),
    ZooAlgorithm("prioritized_dqn", PrioritizedDQN, parent="dqn", knobs=sample_replay_knobs),
    ZooAlgorithm("complementary_qrdqn", ComplementaryQRDQN, parent="qrdqn", knobs=sample_complementary_knobs),
    ZooAlgorithm("prioritized_qrdqn", PrioritizedQRDQN, parent="qrdqn", knobs=sample_replay_knobs),
    ZooAlgorithm("complementary_sac", ComplementarySAC, parent="sac", knobs=sample_complementary_knobs),
    ZooAlgorithm("prioritized_sac", PrioritizedSAC, parent="sac", knobs=sample_replay_knobs),
    ZooAlgorithm("complementary_td3", ComplementaryTD3, parent="td3", knobs=sample_complementary_knobs),
    ZooAlgorithm("prioritized_td3", PrioritizedTD3, parent="td3", knobs=sample_replay_knobs),
    ZooAlgorithm("complementary_ddpg", ComplementaryDDPG, parent="ddpg", knobs=sample_complementary_knobs),
    ZooAlgorithm("complementary_tqc", ComplementaryTQC, parent="tqc", knobs=sample_complementary_knobs),
    # rl-zoo3 has no search space for crossq: train/enjoy work, -optimize refuses with the reason.
    ZooAlgorithm("complementary_crossq", ComplementaryCrossQ, parent="crossq", knobs=sample_complementary_knobs),
)


def zoo_algorithm(name: str) -> ZooAlgorithm | None:
    """
    :param name: An ``--algo`` name.
    :return: Our algorithm of that name, or None when it is not one of ours (e.g. rl-zoo3's ``dqn``).
    """
    return next((entry for entry in ZOO_ALGORITHMS if entry.name == name), None)


def register_algorithms() -> None:
    """
    Make rl-zoo3 know every algorithm of :data:`ZOO_ALGORITHMS` (idempotent).

    Inserts the class into ``rl_zoo3.utils.ALGOS``, a sampler (parent's search space plus our
    knobs) into ``HYPERPARAMS_SAMPLER`` and the parent's converter into ``HYPERPARAMS_CONVERTER``.
    A parent without an rl-zoo3 search space gets a sampler that refuses ``-optimize`` with a reason.

    :raises ValueError: if rl-zoo3 already has an algorithm of the same name that is not ours.
    """
    from rl_zoo3.hyperparams_opt import HYPERPARAMS_CONVERTER
    from rl_zoo3.hyperparams_opt import HYPERPARAMS_SAMPLER as _SAMPLERS
    from rl_zoo3.utils import ALGOS

    # rl-zoo3 declares no type for the dict: mypy would infer one of its functions' exact types.
    HYPERPARAMS_SAMPLER = cast("dict[str, ZooSampler]", _SAMPLERS)

    for entry in ZOO_ALGORITHMS:
        known = ALGOS.get(entry.name)
        if known is not None and not issubclass(known, entry.algorithm):
            raise ValueError(f"rl-zoo3 already has an algorithm named {entry.name!r} ({known.__name__})")
        ALGOS[entry.name] = entry.algorithm
        if entry.parent in HYPERPARAMS_SAMPLER and entry.parent in HYPERPARAMS_CONVERTER:
            HYPERPARAMS_SAMPLER[entry.name] = extend_sampler(HYPERPARAMS_SAMPLER[entry.parent], entry.knobs)
            HYPERPARAMS_CONVERTER[entry.name] = cast("Any", extend_converter(HYPERPARAMS_CONVERTER[entry.parent]))
        else:  # rl-zoo3 has no search space for the parent (crossq): train/enjoy work, -optimize says why not
            HYPERPARAMS_SAMPLER[entry.name] = _no_search_space(entry)


def _no_search_space(entry: ZooAlgorithm) -> ZooSampler:
    def sample(*args: object) -> dict:
        raise ValueError(
            f"-optimize is not available for {entry.name}: rl-zoo3 has no search space for its parent {entry.parent!r}"
        )

    return sample
