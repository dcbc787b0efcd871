"""Files that are never half-written, save files checked before loading, and the replay's save/load."""

import io
import os
import pathlib
import pickle
import tempfile
import warnings
import zipfile
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from stable_baselines3.common.buffers import ReplayBuffer
from stable_baselines3.common.save_util import load_from_pkl, save_to_pkl
from stable_baselines3.her import HerReplayBuffer

from sb3_complementary.common.buffers import ComplementaryReplayBuffer
from sb3_complementary.common.her_replay_buffer import ComplementaryHerReplayBuffer

if TYPE_CHECKING:
    from stable_baselines3.common.off_policy_algorithm import OffPolicyAlgorithm

    _Base = OffPolicyAlgorithm
else:
    _Base = object


def atomic_write(path: str | pathlib.Path, write: Callable[[io.BufferedWriter], object]) -> None:
    """
    Write through ``write(file)`` into a temporary file, then rename it onto ``path``.

    A crash or an exception mid-write leaves the previous file (if any) untouched, never a
    half-written one.

    :param path: Destination.
    :param write: Callable that writes the content into the open binary file it is given.
    """
    path = pathlib.Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    os.close(fd)
    os.chmod(tmp, 0o666 & ~_umask())  # mkstemp makes 0600; a plain open() (as SB3's save) honours the umask
    try:
        with open(tmp, "wb") as file:
            write(file)
            file.flush()
            os.fsync(file.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.remove(tmp)
        raise


def check_save_file(path: str | pathlib.Path) -> None:
    """
    Raise a ``ValueError`` naming ``path`` unless it is a readable SB3 save file (a zip archive
    whose members pass their CRC check, with the ``data`` member SB3 writes). SB3 appends
    ``.zip`` to a path without a suffix, and so does this check.
    """
    target = pathlib.Path(path)
    if not target.exists() and target.suffix == "":
        target = target.with_name(f"{target.name}.zip")
    if not target.exists():
        return  # SB3 raises its own FileNotFoundError
    try:
        with zipfile.ZipFile(target) as archive:
            bad = archive.testzip()
            names = archive.namelist()
    except (zipfile.BadZipFile, EOFError, OSError) as exc:
        raise ValueError(f"{target} is not a readable SB3 save file: truncated or corrupted ({exc})") from exc
    if bad is not None:
        raise ValueError(f"{target} is corrupted: its member {bad!r} fails its CRC check")
    if "data" not in names:
        raise ValueError(f"{target} is not an SB3 save file: it has no 'data' member (members: {names})")


def _umask() -> int:
    """The process umask (reading it means setting it: put it straight back)."""
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


class ReplayPersistenceMixin(_Base):
    """
    ``save``/``load`` of a weighted-replay algorithm: atomic writes, save files checked before
    loading, and replay buffers that are migrated (a plain SB3 buffer) or brought up to the
    model's knobs (:meth:`_adopt_buffer`) when loaded. The model provides ``_buffer_knobs()``.
    """

    replay_buffer: ComplementaryReplayBuffer

    def _buffer_knobs(self) -> dict[str, Any]:
        raise NotImplementedError

    @classmethod
    def load(cls, path: str | pathlib.Path | io.BufferedIOBase, *args: Any, **kwargs: Any) -> Any:
        """
        SB3's ``load``, after checking that ``path`` is a whole SB3 save file: a truncated or
        corrupted file raises a ``ValueError`` naming the file and what is wrong, instead of an
        error from deep inside ``zipfile`` or torch.
        """
        if not isinstance(path, io.IOBase):
            check_save_file(path)
        try:
            return super().load(path, *args, **kwargs)
        except ModuleNotFoundError as exc:  # pickled objects of a module removed after 8cac570
            if not (exc.name or "").startswith("sb3_complementary."):
                raise
            raise ValueError(
                f"{path} holds objects of {exc.name}, a module of a mechanism removed after commit 8cac570 "
                "(the label signals): load it with that commit"
            ) from exc

    def save(self, path: str | pathlib.Path | io.BufferedIOBase, *args: Any, **kwargs: Any) -> None:
        """SB3 ``save``, written to a temporary file then renamed, so a crash never leaves a half-written zip."""
        if isinstance(path, io.BufferedIOBase):
            super().save(path, *args, **kwargs)
            return
        target = pathlib.Path(path)
        if target.suffix == "":
            target = pathlib.Path(f"{target}.zip")  # as SB3 does: only a missing suffix is added
        parent_save = super().save
        atomic_write(target, lambda file: parent_save(file, *args, **kwargs))

    def save_replay_buffer(self, path: str | pathlib.Path | io.BufferedIOBase) -> None:
        """Pickle the buffer (data, scores and tree) atomically."""
        if isinstance(path, io.BufferedIOBase):
            save_to_pkl(path, self.replay_buffer, self.verbose)
            return
        target = pathlib.Path(path)
        if target.suffix == "":
            target = pathlib.Path(f"{target}.pkl")
        atomic_write(target, lambda file: save_to_pkl(file, self.replay_buffer, self.verbose))

    def load_replay_buffer(self, path: str | pathlib.Path | io.BufferedIOBase, truncate_last_traj: bool = True) -> None:
        """
        Load a pickled buffer. A plain SB3 buffer (saved without scores) is migrated
        into a :class:`ComplementaryReplayBuffer` with initial scores, and the
        migration is logged as a warning.
        """
        try:
            loaded = load_from_pkl(path, self.verbose)
        except ModuleNotFoundError as exc:  # a weighted buffer pickled with its feature table (8cac570 or before)
            if not (exc.name or "").startswith("sb3_complementary."):
                raise
            raise ValueError(
                f"{path} holds a replay buffer pickled with {exc.name}, a module removed after commit 8cac570: "
                "load it with that commit, or collect a new buffer"
            ) from exc
        except (pickle.UnpicklingError, EOFError, ValueError) as exc:
            raise ValueError(
                f"Cannot load a replay buffer from {path}: the file is truncated or corrupted "
                f"({type(exc).__name__}: {exc})"
            ) from exc
        if not isinstance(loaded, ReplayBuffer):
            raise ValueError(f"{path} does not hold an SB3 ReplayBuffer (got {type(loaded).__name__})")
        if isinstance(loaded, HerReplayBuffer) != issubclass(self.replay_buffer_class or ReplayBuffer, HerReplayBuffer):
            raise ValueError(
                f"{path} holds a {type(loaded).__name__}, and {type(self).__name__} replays through "
                f"{getattr(self.replay_buffer_class, '__name__', None)}: a HER buffer and a plain one cannot stand in "
                "for each other (HER keeps episode boundaries that a plain buffer does not have)"
            )
        if isinstance(loaded, HerReplayBuffer):
            if not isinstance(loaded, ComplementaryHerReplayBuffer):
                raise ValueError(
                    f"{path} holds SB3's HerReplayBuffer, without scores or features; {type(self).__name__} "
                    "cannot migrate it (its episode bookkeeping would need rebuilding): collect a new buffer"
                )
            if self.env is None:
                raise ValueError(
                    f"Cannot load the HER replay buffer {path} into a model without an env: HER computes the "
                    "rewards of relabelled goals with it. Call model.set_env(env) first, or pass env to load()."
                )
            loaded.set_env(self.env)
        if not isinstance(loaded, ComplementaryReplayBuffer) or not hasattr(loaded, "terminals"):
            warnings.warn(
                f"Replay buffer {path} has no complementary scores ({type(loaded).__name__}); "
                "migrating it: terminal flags are rebuilt from dones/timeouts and every transition gets the "
                "initial score.",
                stacklevel=2,
            )
            loaded = self._migrate_buffer(loaded)
        loaded.device = self.device
        self._adopt_buffer(loaded)
        self.replay_buffer = loaded
        if isinstance(loaded, HerReplayBuffer) and truncate_last_traj:
            loaded.truncate_last_trajectory()  # as SB3: the episode running at save time ends here

    def _adopt_buffer(self, buffer: ComplementaryReplayBuffer) -> None:
        """
        Bring a loaded buffer up to this model: the model's replay knobs win over the ones pickled
        with the buffer (``load(..., alpha=0.1)`` then ``load_replay_buffer`` replays at 0.1), and
        the tree's priorities are rebuilt from the stored scores when the priority map changed.
        """
        # beta is the buffer's live value: train() sets it from the model's schedule.
        knobs = {k: v for k, v in self._buffer_knobs().items() if k != "beta"}
        changed = [k for k, v in knobs.items() if getattr(buffer, k, None) != v]
        for knob in changed:
            setattr(buffer, knob, knobs[knob])
        if {"alpha", "epsilon", "score_floor"} & set(changed):
            buffer.rebuild_priorities()

    def _migrate_buffer(self, old: ReplayBuffer) -> ComplementaryReplayBuffer:
        assert self.replay_buffer_class is not None
        kwargs = {
            **{k: v for k, v in self.replay_buffer_kwargs.items() if k not in self._buffer_knobs()},
            **self._buffer_knobs(),
            "device": self.device,
            "n_envs": old.n_envs,
            "optimize_memory_usage": old.optimize_memory_usage,
            "handle_timeout_termination": getattr(old, "handle_timeout_termination", True),
        }
        new = self.replay_buffer_class(
            old.buffer_size * old.n_envs, self.observation_space, self.action_space, **kwargs
        )
        assert isinstance(new, ComplementaryReplayBuffer)
        new.load_rows(old)
        return new
