"""Export a model of this package to a save file that its SB3 parent loads without this package installed."""

import base64
import copy
import inspect
import io
import json
import pathlib
from typing import Any

from sb3_contrib.crossq.policies import CrossQPolicy
from stable_baselines3.common.base_class import BaseAlgorithm
from stable_baselines3.common.buffers import ReplayBuffer
from stable_baselines3.common.off_policy_algorithm import OffPolicyAlgorithm
from stable_baselines3.common.policies import BasePolicy
from stable_baselines3.common.save_util import data_to_json, recursive_getattr, save_to_zip_file
from stable_baselines3.common.torch_layers import CombinedExtractor
from stable_baselines3.her import HerReplayBuffer

from sb3_complementary.common.persistence import atomic_write
from sb3_complementary.common.weighted_algorithm import WeightedAlgorithm, preserved_rng
from sb3_complementary.crossq.policies import MultiInputPolicy as CrossQMultiInputPolicy

#: The name no exported file may mention: a class pickled from it fails to load where it is not installed.
PACKAGE = "sb3_complementary"
#: Where the parents live.
SB3_PACKAGES = ("stable_baselines3.", "sb3_contrib.")


def export_to_sb3(model: WeightedAlgorithm, path: str | pathlib.Path) -> pathlib.Path:
    """
    Write ``model`` as its SB3 parent would have saved it: ``DQN.load``, ``SAC.load``,
    ``sb3_contrib.CrossQ.load`` (...) read the file without this package installed, and the
    loaded model acts as ``model`` does (same policy class, same weights, same optimizer states).

    The file holds the parent's data keys and state dicts only. Dropped: the experience
    extractor and its optimizer, the replay knobs (``alpha``, ``candidate_pool``, ...), the label
    store and contribution signal, the replay's random generator, and this package's replay
    buffer class (the parent's default buffer, or SB3's ``HerReplayBuffer``, stands in; its
    keyword arguments are kept where that class takes them). CrossQ's ``MultiInputPolicy`` (this
    package's, for ``Dict`` observations) is written as sb3-contrib's ``CrossQPolicy`` with SB3's
    ``CombinedExtractor``: the same modules and the same state dict. Training can resume from the
    file with the parent's uniform replay; resuming with Complementary replay needs ``model.save``.

    The file is written to a temporary file then renamed, as ``model.save`` is.

    :param model: A trained model of one of this package's algorithms (``ComplementaryDQN``,
        ``PrioritizedSAC``, ...), on any device.
    :param path: Destination; ``.zip`` is appended when it has no suffix, as SB3 does.
    :return: The path written.
    :raises ValueError: ``model`` is not one of this package's algorithms, its policy is not an SB3
        policy, or a kept entry would still need this package to load (each named).
    """
    if not isinstance(model, WeightedAlgorithm):
        raise ValueError(
            f"export_to_sb3 exports the algorithms of {PACKAGE} (ComplementaryDQN, PrioritizedSAC, ...), "
            f"got {type(model).__name__}: save it with its own save()"
        )
    parent = sb3_parent(type(model))
    policy_class, policy_kwargs = _parent_policy(model)
    state_dicts, variables = parent._get_torch_save_params(model)
    data = _parent_data(model, parent, policy_class, policy_kwargs, [*state_dicts, *variables])
    serialized = data_to_json(data)
    leaking = package_references(serialized)
    if leaking:
        raise ValueError(
            f"Cannot export {type(model).__name__} to {parent.__name__}: the entries {leaking} hold objects of "
            f"{PACKAGE}, which {parent.__name__}.load could not unpickle without it"
        )
    params = {name: recursive_getattr(model, name).state_dict() for name in state_dicts}
    pytorch_variables = {name: recursive_getattr(model, name) for name in variables}
    target = pathlib.Path(path)
    if target.suffix == "":
        target = pathlib.Path(f"{target}.zip")

    def write(file: io.BufferedWriter) -> None:
        save_to_zip_file(file, data=data, params=params, pytorch_variables=pytorch_variables)

    atomic_write(target, write)
    return target


def sb3_parent(algorithm_class: type) -> type[OffPolicyAlgorithm]:
    """
    The SB3 or sb3-contrib algorithm a class of this package extends (``DQN`` for
    ``ComplementaryDQN``, ``DDPG`` for ``ComplementaryDDPG``): the first one in its MRO.

    :raises ValueError: naming the class, when it extends none.
    """
    for base in algorithm_class.__mro__:
        if (
            base.__module__.startswith(SB3_PACKAGES)
            and issubclass(base, OffPolicyAlgorithm)
            and base is not OffPolicyAlgorithm
        ):
            return base
    raise ValueError(f"{algorithm_class.__name__} extends no SB3 or sb3-contrib off-policy algorithm")


def package_references(data_json: str) -> list[str]:
    """
    The keys of a save file's ``data`` JSON whose entry mentions this package, in its readable
    text or inside its cloudpickled bytes (base64 in the JSON, so a plain grep misses them).

    :param data_json: The ``data`` member of an SB3 save file, as ``data_to_json`` writes it.
    """
    found = []
    for key, value in json.loads(data_json).items():
        blob = b""
        if isinstance(value, dict) and ":serialized:" in value:
            blob = base64.b64decode(value[":serialized:"].encode())
        if PACKAGE in json.dumps(value) or PACKAGE.encode() in blob:
            found.append(key)
    return found


def _parent_policy(model: WeightedAlgorithm) -> tuple[type[BasePolicy], dict[str, Any]]:
    """The policy class and keyword arguments the parent rebuilds the policy from (CrossQ's ``Dict`` one mapped)."""
    policy_class = model.policy_class
    policy_kwargs = copy.copy(model.policy_kwargs)
    if isinstance(policy_class, type) and issubclass(policy_class, CrossQMultiInputPolicy):
        if policy_class is not CrossQMultiInputPolicy:
            raise ValueError(
                f"Cannot export {policy_class.__name__}: a subclass of {PACKAGE}'s CrossQ MultiInputPolicy"
            )
        policy_class = CrossQPolicy  # the same modules: ours only changes the extractor's default
        policy_kwargs.setdefault("features_extractor_class", CombinedExtractor)
    if not (isinstance(policy_class, type) and issubclass(policy_class, BasePolicy)):
        raise ValueError(
            f"Cannot export a policy of class {getattr(policy_class, '__name__', policy_class)}: not an SB3 policy"
        )
    if policy_class.__module__.startswith(PACKAGE) or not isinstance(model.policy, BasePolicy):
        raise ValueError(
            f"Cannot export a policy of class {type(model.policy).__name__}: not an SB3 policy "
            f"(plain SB3 could not rebuild it)"
        )
    return policy_class, policy_kwargs


def _parent_buffer(model: WeightedAlgorithm) -> tuple[type[ReplayBuffer] | None, dict[str, Any]]:
    """
    The replay buffer class the parent is told to build on resume, and its keyword arguments:
    SB3's ``HerReplayBuffer`` for this package's HER buffers, else ``None`` (the parent's default,
    which follows the observation space and ``n_steps``). Keyword arguments the class does not take are dropped.
    """
    buffer_class = model.replay_buffer_class
    target = HerReplayBuffer if buffer_class is not None and issubclass(buffer_class, HerReplayBuffer) else None
    accepted = inspect.signature((target or ReplayBuffer).__init__).parameters
    return target, {k: v for k, v in (model.replay_buffer_kwargs or {}).items() if k in accepted}


def _parent_data(
    model: WeightedAlgorithm,
    parent: type[OffPolicyAlgorithm],
    policy_class: type[BasePolicy],
    policy_kwargs: dict[str, Any],
    torch_names: list[str],
) -> dict[str, Any]:
    """
    The ``data`` entries the parent's ``save`` would write for ``model``: its attributes that a
    plain parent model also has (:func:`_parent_keys`), less the parent's exclusions and the
    attributes saved as state dicts or torch variables (as SB3's ``BaseAlgorithm.save`` drops them).
    """
    excluded = set(parent._excluded_save_params(model)) | {name.split(".")[0] for name in torch_names}
    replay_buffer_class, replay_buffer_kwargs = _parent_buffer(model)
    overrides = {
        "policy_class": policy_class,
        "policy_kwargs": policy_kwargs,
        "replay_buffer_class": replay_buffer_class,
        "replay_buffer_kwargs": replay_buffer_kwargs,
    }
    keys = _parent_keys(model, parent, overrides, excluded) - excluded
    data = {key: value for key, value in model.__dict__.items() if key in keys}
    return {**data, **overrides}


def _parent_keys(
    model: WeightedAlgorithm, parent: type[OffPolicyAlgorithm], overrides: dict[str, Any], excluded: set[str]
) -> set[str]:
    """
    The attribute names of a plain ``parent`` model rebuilt from ``model`` as SB3's ``load``
    rebuilds one: constructed without an env, given the saved attributes the constructor
    set, then ``_setup_model`` (with a one-row buffer, on the CPU, on a fork of torch's RNG).
    SB3 sets every attribute that training changes in the constructor, so these are the keys
    a trained parent saves, and no list kept here can fall behind SB3's.

    :param overrides: The entries the export writes in place of ``model``'s (policy, buffer).
    :param excluded: The entries the parent does not save.
    """
    reference: BaseAlgorithm = parent(
        policy=overrides["policy_class"],
        env=None,  # type: ignore[arg-type]  # as SB3's load: the spaces are set below
        device="cpu",
        _init_setup_model=False,  # type: ignore[call-arg]  # every concrete parent takes it
    )
    saved = (set(reference.__dict__) - excluded) & set(model.__dict__)
    reference.__dict__.update({key: model.__dict__[key] for key in saved})
    reference.__dict__.update(copy.deepcopy(overrides))
    reference.observation_space = model.observation_space
    reference.action_space = model.action_space
    reference.n_envs = model.n_envs
    reference.buffer_size = 1  # type: ignore[attr-defined]
    # Any buffer gives the same keys; SB3's HER buffer would want the env, which load() does not have.
    reference.replay_buffer_class, reference.replay_buffer_kwargs = None, {}  # type: ignore[attr-defined]
    with preserved_rng("cpu"):
        reference._setup_model()
    return set(reference.__dict__)
