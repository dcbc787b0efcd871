"""
Can the train step reuse the candidate pool's target pass bit for bit?

The pool measures ``|TD|`` on ``4B`` rows with the target network; the train step recomputes the
target on the ``B`` rows it picked. Reusing the pool's values keeps the parent's curves only if the
network's forward over ``4B`` rows, indexed to the picks, equals its forward over the picked rows,
bit for bit. This checks that for SB3's DQN ``MlpPolicy`` (CartPole-sized) and ``CnnPolicy``
(84×84×4 frames, Atari's network) at each torch thread count given, on random inputs.

    python benchmarks/pool_target_bits.py --threads 1 2
"""

import argparse

import gymnasium as gym
import numpy as np
import torch as th
from stable_baselines3.dqn.policies import CnnPolicy, MlpPolicy


def same_bits(policy: MlpPolicy, space: gym.spaces.Box, batch_size: int, trials: int) -> bool:
    """Whether every trial's ``4B``-row target forward, indexed to ``B`` random picks, equals the ``B``-row forward."""
    for _ in range(trials):
        pool = th.as_tensor(np.stack([space.sample() for _ in range(4 * batch_size)])).float()
        picks = th.as_tensor(np.random.randint(0, 4 * batch_size, batch_size))
        with th.no_grad():
            if not th.equal(policy.q_net_target(pool)[picks], policy.q_net_target(pool[picks])):
                return False
    return True


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[1])
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--batch-sizes", type=int, nargs="+", default=[32, 64, 128, 256])
    parser.add_argument("--trials", type=int, default=3)
    args = parser.parse_args()
    th.manual_seed(0)
    np.random.seed(0)
    policies: dict[str, tuple[type[MlpPolicy], gym.spaces.Box]] = {
        "MlpPolicy": (MlpPolicy, gym.spaces.Box(-1, 1, (4,), np.float32)),
        "CnnPolicy": (CnnPolicy, gym.spaces.Box(0, 255, (4, 84, 84), np.uint8)),
    }
    print(f"torch {th.__version__}; equal = the 4B-row forward, indexed, is the B-row forward bit for bit")
    for threads in args.threads:
        th.set_num_threads(threads)
        for name, (policy_class, space) in policies.items():
            space.seed(0)
            policy = policy_class(space, gym.spaces.Discrete(6), lambda _: 1e-4)
            for batch_size in args.batch_sizes:
                equal = same_bits(policy, space, batch_size, args.trials)
                print(f"threads {threads}  {name:9s}  B {batch_size:3d}  {'equal' if equal else 'DIFFERENT'}")


if __name__ == "__main__":
    main()
