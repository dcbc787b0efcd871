"""
Where an Optuna study lives: the ``--storage`` value, as rl-zoo3 hands it to Optuna.

rl-zoo3 passes ``--storage`` to ``optuna.create_study`` unchanged, except a path ending in
``.log`` (a journal file). Optuna wants a database URL, so a plain file path fails there. Here a
plain path means a SQLite file: ``--storage logs/tune.db`` works, as do ``sqlite:///...`` and any
other RDB URL (``postgresql://user:password@host/db``, ``mysql+pymysql://...``), which is how
workers on several machines share one study.
"""

from pathlib import Path


def optuna_storage(storage: str | None) -> str | None:
    """
    Normalise a ``--storage`` value.

    :param storage: None (in-memory study), a URL (``scheme://...``, passed through), a journal
        file ending in ``.log`` (passed through: rl-zoo3 opens it), or a file path (a SQLite file).
    :return: The value for rl-zoo3: a plain path becomes ``sqlite:///<absolute path>``, with its
        folder created.
    """
    if storage is None or "://" in storage or storage.endswith(".log"):
        return storage
    path = Path(storage).expanduser().resolve()
    path.parent.mkdir(parents=True, exist_ok=True)
    return f"sqlite:///{path}"


def default_study_name(algo: str, env_id: str) -> str:
    """
    :return: The study name used with ``--storage`` when ``--study-name`` is not given, so every
        worker started with the same command joins the same study (Optuna would invent a new
        random name per worker).
    """
    return f"{algo}_{env_id}"
