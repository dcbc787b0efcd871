"""MultiTaskEnv: schedules, task ids in info and observations, VecEnvs, pickling, bad input."""

import itertools
import pickle

import gymnasium as gym
import numpy as np
import pytest
from gymnasium import spaces
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.vec_env import DummyVecEnv, SubprocVecEnv

from sb3_complementary import MultiTaskEnv
from sb3_complementary.multitask import get_family


def episode_tasks(env, n_episodes, seed=0, action=0):
    """Task id of each of ``n_episodes`` episodes (always the same action), checking every step's info."""
    tasks = []
    _, info = env.reset(seed=seed)
    for _ in range(n_episodes):
        task = info["task_id"]
        done = False
        while not done:
            _, _, terminated, truncated, info = env.step(action)
            assert info["task_id"] == task and info["task_name"] == env.task_name
            done = terminated or truncated
        tasks.append(task)
        _, info = env.reset()
    return tasks


def test_round_robin_cycles_and_a_seeded_reset_restarts_it():
    env = MultiTaskEnv("cartpole", schedule="round_robin")
    assert episode_tasks(env, 7) == [0, 1, 2, 3, 4, 0, 1]
    assert episode_tasks(env, 3) == [0, 1, 2]


def test_uniform_draws_every_task_and_is_reproducible():
    env = MultiTaskEnv("cartpole", schedule="uniform")
    first = episode_tasks(env, 60, seed=5)
    assert set(first) == set(range(5))
    assert max(first.count(k) for k in range(5)) < 25  # no task hogs the draw
    assert episode_tasks(env, 60, seed=5) == first
    assert episode_tasks(env, 60, seed=6) != first


def test_sequential_curriculum_gives_task_k_for_block_k():
    curriculum = ["weak_force", "default", "short_pole"]
    env = MultiTaskEnv("cartpole", schedule="sequential", block_steps=50, variants=curriculum)
    env.reset(seed=0)
    per_step = []
    for t in range(400):
        _, _, terminated, truncated, info = env.step(t % 2)
        per_step.append(info["task_id"])
        if terminated or truncated:
            env.reset()
    # Order of the variants list, family ids reported; switches only at episode ends, never backwards or skipping.
    order = [4, 0, 1]
    positions = [order.index(task) for task in per_step]
    assert positions[0] == 0 and positions[-1] == 2
    assert all(b - a in (0, 1) for a, b in itertools.pairwise(positions))
    for k in range(3):
        steps_of_k = [t for t, p in enumerate(positions) if p == k]
        assert steps_of_k[0] <= 50 * k + 30  # a switch waits at most one (short) episode
    env.reset(seed=0)
    assert env.task_id == 4  # a seeded reset restarts the curriculum


def test_sequential_never_skips_a_task_when_episodes_outlast_blocks():
    env = MultiTaskEnv("cartpole", schedule="sequential", block_steps=3)
    seen = episode_tasks(env, 8, action=1)  # episodes of ~10 steps, blocks of 3
    assert seen[:5] == [0, 1, 2, 3, 4] and seen[5:] == [4, 4, 4]


def test_task_id_in_info_and_optional_one_hot_observation():
    env = MultiTaskEnv("mountaincar", schedule="round_robin", variants=[3, 1], task_id_in_obs=True)
    assert env.observation_space.shape == (2 + 5,)  # one column per task of the family
    assert env.observation_space.contains(env.reset(seed=0)[0])
    for expected in (3, 1, 3):
        obs, info = env.reset() if expected != 3 or env.task_id != 3 else env.reset(seed=0)
        assert info["task_id"] == env.task_id == expected
        assert np.array_equal(obs[2:], np.eye(5, dtype=np.float32)[expected])
        obs, *_, info = env.step(1)
        assert info["task_id"] == expected and obs[2 + expected] == 1.0


def test_same_variant_and_seed_as_the_plain_env():
    """Inside a MultiTaskEnv, a task's trajectory equals the plain variant env's with the same seed."""
    actions = [0, 1, 1, 0, 1, 0, 0, 1, 1, 1]
    env = MultiTaskEnv("cartpole", schedule="round_robin")
    env.set_task("high_gravity")
    plain = get_family("cartpole").make("high_gravity")
    ours = [env.reset(seed=11)[0]] + [env.step(a)[0] for a in actions]
    theirs = [plain.reset(seed=11)[0]] + [plain.step(a)[0] for a in actions]
    assert np.array_equal(np.array(ours), np.array(theirs))


def test_set_task_and_reset_option_override_the_schedule():
    env = MultiTaskEnv("cartpole", schedule="round_robin")
    assert env.reset(seed=0, options={"task": "weak_force"})[1]["task_id"] == 4
    env.set_task(2)
    assert {env.reset()[1]["task_id"] for _ in range(3)} == {2}
    env.set_task(None)
    assert env.reset(seed=0)[1]["task_id"] == 0


def test_explicit_envs_and_pickling():
    env = MultiTaskEnv(
        [lambda: gym.make("CartPole-v1"), lambda: get_family("cartpole").make("short_pole")],
        schedule="round_robin",
        task_names=["plain", "short"],
    )
    assert env.task_ids == (0, 1) and env.task_names == ("plain", "short")
    assert episode_tasks(env, 3) == [0, 1, 0]
    copy = pickle.loads(pickle.dumps(MultiTaskEnv("lunarlander", schedule="round_robin", task_id_in_obs=True)))
    assert list(copy.task_names) == get_family("lunarlander").names and copy.observation_space.shape == (8 + 5,)


def test_task_id_comes_through_vec_envs():
    """make_vec_env + DummyVecEnv, and SubprocVecEnv (its own process, factory pickled): step infos carry task ids."""
    for vec_env_cls in (DummyVecEnv, SubprocVecEnv):
        vec_env = make_vec_env(
            MultiTaskEnv,
            n_envs=2,
            seed=0,
            vec_env_cls=vec_env_cls,
            env_kwargs={"tasks": get_family("cartpole"), "schedule": "round_robin"},
        )
        try:
            vec_env.reset()
            assert [info["task_id"] for info in vec_env.reset_infos] == [0, 0]
            seen = set()
            for _ in range(150):
                _, _, _, infos = vec_env.step(np.zeros(2, dtype=np.int64))
                seen.update(info["task_id"] for info in infos)
            assert seen == set(range(5)), vec_env_cls.__name__
        finally:
            vec_env.close()


def test_mismatched_spaces_name_both():
    observation = r"observation space: task 'task_0' has Box\(.*\(4,\).*task 'task_1' has Box\(.*\(2,\)"
    with pytest.raises(ValueError, match=observation):
        MultiTaskEnv([lambda: gym.make("CartPole-v1"), lambda: gym.make("MountainCar-v0")])
    action = r"action space: task 'cartpole' has Discrete\(2\), task 'other' has Discrete\(3\)"
    with pytest.raises(ValueError, match=action):
        MultiTaskEnv([lambda: gym.make("CartPole-v1"), ThreeActionCartPole], task_names=["cartpole", "other"])


class ThreeActionCartPole(gym.Wrapper):
    """CartPole with an extra (no-op as push left) action: same observation space, another action space."""

    def __init__(self) -> None:
        super().__init__(gym.make("CartPole-v1"))
        self.action_space = spaces.Discrete(3)

    def step(self, action):
        return self.env.step(min(int(action), 1))


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"schedule": "random"}, r"schedule must be one of \['uniform', 'round_robin', 'sequential'\]"),
        ({"schedule": "sequential"}, "block_steps must be a positive int"),
        ({"schedule": "sequential", "block_steps": 0}, r"block_steps must be in \[1"),
        ({"schedule": "uniform", "block_steps": 10}, "block_steps only applies"),
        ({"variants": ["default", "nope"]}, r"unknown variant 'nope'; valid \(id=name\): 0=default"),
        ({"variants": [1, 1]}, "lists a task twice"),
        ({"tasks": "acrobot"}, "unknown task family 'acrobot'"),
        ({"tasks": []}, "non-empty sequence"),
        ({"tasks": ["CartPole-v1"]}, "must be a gymnasium Env or a zero-argument env factory"),
        ({"task_names": ["a"]}, "task_names is only for explicit envs"),
    ],
)
def test_bad_arguments(kwargs, message):
    with pytest.raises(ValueError, match=message):
        MultiTaskEnv(**{"tasks": "cartpole", **kwargs})


def test_one_hot_needs_a_flat_box():
    image = spaces.Box(0, 255, (4, 4, 1), np.uint8)

    def image_env():
        from tests.conftest import ObsSpaceEnv

        return ObsSpaceEnv(image)

    with pytest.raises(ValueError, match="task_id_in_obs=True needs a flat Box"):
        MultiTaskEnv([image_env], task_id_in_obs=True)
