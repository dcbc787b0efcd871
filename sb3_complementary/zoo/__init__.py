"""
rl-baselines3-zoo integration: this package's algorithms in rl-zoo3's train / enjoy / record-video
and Optuna workflow, with packaged hyperparameter files.

- :mod:`~sb3_complementary.zoo.cli`: the ``sb3-complementary`` command (``python -m sb3_complementary.zoo``);
- :mod:`~sb3_complementary.zoo.registry`: which algorithms, and their registration into rl-zoo3;
- :mod:`~sb3_complementary.zoo.search_space`: the Optuna search space of our knobs;
- :mod:`~sb3_complementary.zoo.hyperparams`: entry lookup and key checks of hyperparameter files;
- :mod:`~sb3_complementary.zoo.experiment`: rl-zoo3's ExperimentManager with our defaults and checks;
- :mod:`~sb3_complementary.zoo.storage`: ``--storage`` values (SQLite path or any RDB URL);
- :mod:`~sb3_complementary.zoo.inference`: loading our models for enjoy/record-video;
- :mod:`~sb3_complementary.zoo.goal_envs`: Gymnasium ids of the HER entries' goal envs (registered on import).

Needs the ``zoo`` extra (``pip install "sb3-complementary[zoo]"``: rl_zoo3 and optuna).
"""

from sb3_complementary.zoo.goal_envs import BIT_FLIPPING_IDS, register_goal_envs
from sb3_complementary.zoo.registry import ZOO_ALGORITHMS, ZooAlgorithm, register_algorithms

register_goal_envs()

__all__ = ["BIT_FLIPPING_IDS", "ZOO_ALGORITHMS", "ZooAlgorithm", "register_algorithms", "register_goal_envs"]
