"""
rl-zoo3's ExperimentManager, with our defaults and our checks of the hyperparameter file.

``rl_zoo3.train.train()`` parses the command line and builds an ``ExperimentManager`` from it;
the CLI (:mod:`sb3_complementary.zoo.cli`) has it build this subclass instead, so every flag is
still parsed by rl-zoo3 itself. The subclass changes only:

- ``--conf-file`` defaults to our packaged ``hyperparams/<algo>.yml`` for our algorithms
  (rl-zoo3 would look for the file inside its own package);
- the entry is checked before rl-zoo3 reads it (:mod:`sb3_complementary.zoo.hyperparams`): an
  env without an entry and a key the constructor does not accept get a clear message;
- ``--storage`` may be a plain file path (a SQLite study) and ``--study-name`` defaults to
  ``<algo>_<env>`` when a storage is given (:mod:`sb3_complementary.zoo.storage`);
- ``--trial-id 0`` loads trial 0 (rl-zoo3 2.9 tests ``if self.trial_id``, which skips it).
"""

from typing import Any

from rl_zoo3.exp_manager import ExperimentManager
from rl_zoo3.utils import ALGOS

from sb3_complementary.zoo.hyperparams import check_keys, load_hyperparams_file, select_entry
from sb3_complementary.zoo.registry import zoo_algorithm
from sb3_complementary.zoo.storage import default_study_name, optuna_storage


class _TrialZero(int):
    """Trial id 0 that is truthy, so rl-zoo3's ``if ... and self.trial_id`` loads it."""

    def __bool__(self) -> bool:
        return True


class ZooExperimentManager(ExperimentManager):
    """
    rl-zoo3's ``ExperimentManager`` for this package's CLI; takes exactly its arguments.

    See the module docstring for what differs; everything else is rl-zoo3's behaviour.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        ours = zoo_algorithm(self.algo)
        if kwargs.get("config") is None and ours is not None:
            self.config = str(ours.hyperparams_file)
            if hasattr(self.args, "conf_file"):
                self.args.conf_file = self.config  # args.yml of the run records the file actually used
        self.storage = optuna_storage(self.storage)
        if self.storage is not None and self.study_name is None:
            self.study_name = default_study_name(self.algo, self.env_name.gym_id)
        if self.trial_id == 0:
            self.trial_id = _TrialZero(0)

    def read_hyperparameters(self) -> tuple[dict[str, Any], dict[str, Any]]:
        """
        Check the entry for this env, then read it as rl-zoo3 does.

        :return: rl-zoo3's ``(hyperparams, saved_hyperparams)``.
        :raises HyperparamsError: (a ``ValueError``) for an env without entry or fallback, or an unknown key.
        """
        table = load_hyperparams_file(self.config)
        key = select_entry(table, self.env_name.gym_id, self._is_atari, self.config)
        algorithm = ALGOS[self.algo]
        check_keys(algorithm, table[key], where=f"entry {key!r} of {self.config}")
        if self.custom_hyperparams:
            check_keys(algorithm, self.custom_hyperparams, where="-params")
        return super().read_hyperparameters()
