"""
Migration: the knobs that commit 8cac570 still had (a clear error when one is passed), models and
replay buffers saved by older versions, and plain SB3 buffers loaded into a weighted one.

Mechanisms removed after 8cac570 (their measurements stay in docs/benchmarks/history.md; check
out 8cac570 to reproduce them): the label signals ``contribution="td" | "influence" | "outcome"``
(with the label store, the probe batch, the last-layer influence and ``coupling_coef``,
``probe_size``, ``label_capacity``, ``label_interval``, ``task_balanced_labels``), lowest-score
eviction (``eviction``), loss weighting (``weighting="loss"``), ReLo (``priority="relo"``) and the
features only the label signals read (``include_observation``). The extractor's settings moved
into ``extractor_kwargs``.
"""

from typing import Any

import numpy as np
from stable_baselines3.common.buffers import ReplayBuffer

#: The commit that last had the removed mechanisms.
LAST_COMMIT = "8cac570"

#: Constructor knob -> its key in ``extractor_kwargs``.
MOVED_TO_EXTRACTOR_KWARGS = {
    "extractor_net_arch": "net_arch",
    "extractor_lr_ratio": "lr_ratio",
    "extractor_train_freq": "train_freq",
    "extractor_gradient_steps": "gradient_steps",
    "extractor_batch_size": "batch_size",
    "refresh_interval": "refresh_interval",
    "fast_memory": "fast_memory",
    "ratio_temperature": "temperature",
    "ratio_cap": "cap",
    "ratio_is_exponent": "is_exponent",
}

#: Removed knob -> the value that behaves as the code does now (None: no value does; the knob did nothing).
REMOVED = {
    "coupling_coef": None,
    "probe_size": None,
    "label_capacity": None,
    "label_interval": None,
    "task_balanced_labels": False,
    "eviction": "fifo",
    "weighting": "sampling",
    "include_observation": False,
    "priority": "td",
    "initial_score": None,
}

#: Removed values of a knob that remains.
REMOVED_VALUES = {"contribution": ("td", "influence", "outcome")}

#: What the Complementary algorithms no longer take, with why.
COMPLEMENTARY_ONLY = {
    "beta": "the IS exponent of the draws is fixed by the kind (density_ratio: extractor_kwargs['is_exponent'], "
    "fresh_td: 0, laber: 1); beta was overwritten at every train() call",
}

#: Attributes of a saved model that only the removed mechanisms used.
_STALE_ATTRIBUTES = ("contribution_signal", "label_store", "needs_influence", "_n_feedback", "_train_probe")


def check_old_knobs(cls_name: str, kwargs: dict[str, Any], complementary: bool) -> None:
    """
    Raise a ``ValueError`` naming the first knob of 8cac570 in ``kwargs`` and where it went.

    :param cls_name: The algorithm's class name, for the message.
    :param kwargs: The constructor's keyword arguments beyond its own knobs.
    :param complementary: Whether the algorithm is a Complementary one (it also lost ``beta``).
    """
    for knob in kwargs:
        if knob in MOVED_TO_EXTRACTOR_KWARGS and complementary:
            raise ValueError(
                f"{cls_name}({knob}=...): moved into extractor_kwargs (commit after {LAST_COMMIT}); "
                f"pass extractor_kwargs={{{MOVED_TO_EXTRACTOR_KWARGS[knob]!r}: ...}}"
            )
        if knob in REMOVED:
            raise ValueError(
                f"{cls_name}({knob}=...): removed with the mechanism it tuned after commit {LAST_COMMIT} "
                "(docs/benchmarks/history.md has its measurements; check out that commit to use it)"
            )
        if knob in COMPLEMENTARY_ONLY and complementary:
            raise ValueError(f"{cls_name}({knob}=...): removed after commit {LAST_COMMIT}: {COMPLEMENTARY_ONLY[knob]}")


def check_contribution(contribution: str) -> None:
    """Raise a ``ValueError`` for a ``contribution`` that 8cac570 had and that is gone."""
    if contribution in REMOVED_VALUES["contribution"]:
        raise ValueError(
            f"contribution={contribution!r}: the label signals were removed after commit {LAST_COMMIT} "
            "(refuted: docs/benchmarks/history.md); use 'laber' (the DQN family's default), 'density_ratio' "
            "or 'fresh_td', "
            f"or check out {LAST_COMMIT}"
        )


def migrate_saved(data: dict[str, Any], complementary: bool) -> list[str]:
    """
    Bring the attributes of a model saved by 8cac570 (or before) up to now, in place.

    SB3's ``load`` sets the saved attributes on the model before ``_setup_model``; this folds the
    extractor's settings into ``extractor_kwargs``, drops what only removed mechanisms used, and
    raises a ``ValueError`` for a model that ran a removed mechanism (it cannot run now).

    :param data: The model's ``__dict__``.
    :param complementary: Whether the model is a Complementary one.
    :return: One line per change, for the log (empty for a current model).
    """
    check_contribution(data.get("contribution", "density_ratio"))
    for knob, value in REMOVED.items():
        if knob in data and value is not None and data[knob] != value:
            raise ValueError(
                f"This model was saved with {knob}={data[knob]!r}, removed after commit {LAST_COMMIT}: "
                f"load it with that commit, or load it here with {knob}={value!r} passed to load()"
            )
    changes = []
    if complementary and any(knob in data for knob in MOVED_TO_EXTRACTOR_KWARGS):
        moved = {new: data.pop(old) for old, new in MOVED_TO_EXTRACTOR_KWARGS.items() if old in data}
        data["extractor_kwargs"] = {**moved, **(data.get("extractor_kwargs") or {})}
        changes.append(f"extractor settings moved into extractor_kwargs: {sorted(moved)}")
    dropped = [k for k in (*REMOVED, *_STALE_ATTRIBUTES, *(COMPLEMENTARY_ONLY if complementary else ())) if k in data]
    for key in dropped:
        del data[key]
    if dropped:
        changes.append(f"attributes of removed mechanisms dropped: {dropped}")
    return changes


def load_rows(buffer: Any, old: ReplayBuffer) -> None:
    """
    Fill an empty weighted buffer with the transitions of a plain SB3 buffer (same shape), oldest
    first from row 0: the same data, terminal flags and initial scores as adding them one by one,
    in a few array copies (a migration of 1M rows takes seconds, not minutes).

    :param buffer: The empty ``ComplementaryReplayBuffer``.
    :param old: An SB3 ``ReplayBuffer`` or ``DictReplayBuffer`` with ``n_envs`` envs.
    """
    n = old.size()
    if n == 0:
        return
    order = (np.arange(n) + (old.pos if old.full else 0)) % old.buffer_size

    def copy(target: Any, source: Any) -> None:
        if isinstance(target, dict):
            for key in target:
                target[key][:n] = source[key][order]
        else:
            target[:n] = source[order]

    copy(buffer.observations, old.observations)
    if buffer.optimize_memory_usage:  # next_obs of row t is row t + 1's observation, as add() writes it
        buffer.observations[n % buffer.buffer_size] = old.observations[(order[-1] + 1) % old.buffer_size]
    else:
        copy(buffer.next_observations, old.next_observations)
    for name in ("actions", "rewards", "dones", "timeouts"):
        getattr(buffer, name)[:n] = getattr(old, name)[order]
    buffer.terminals[:n] = np.logical_and(buffer.dones[:n], np.logical_not(buffer.timeouts[:n]))
    buffer.pos, buffer.full = n % buffer.buffer_size, n == buffer.buffer_size
    buffer.n_added = n
    buffer._unscored_rows = list(range(n))
    buffer._flush_new()
