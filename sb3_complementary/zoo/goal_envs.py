"""
Gymnasium ids for the goal-conditioned envs of the packaged HER entries.

SB3's ``BitFlippingEnv`` has no Gymnasium id, and rl-zoo3 builds envs by id: importing
:mod:`sb3_complementary.zoo` registers ``BitFlipping-15-v0`` and ``BitFlipping-20-v0`` (discrete
actions, ``n_bits`` 15 and 20, episodes of ``n_bits`` steps). They are the DQN + HER entries of the
packaged hyperparameter files.
"""

import gymnasium as gym

#: Registered id -> number of bits.
BIT_FLIPPING_IDS = {"BitFlipping-15-v0": 15, "BitFlipping-20-v0": 20}


def register_goal_envs() -> None:
    """Register :data:`BIT_FLIPPING_IDS` with Gymnasium (idempotent)."""
    for env_id, n_bits in BIT_FLIPPING_IDS.items():
        if env_id not in gym.registry:
            gym.register(env_id, entry_point="stable_baselines3.common.envs:BitFlippingEnv", kwargs={"n_bits": n_bits})
