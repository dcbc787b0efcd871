"""PrioritizedDQN on LunarLander-v3 (seed 0, zoo hyperparameters): Q-values of ~2k stored transitions every 2.5k steps.

python -m benchmarks.diagnostics.per_q_values
"""

import numpy as np
import torch as th
from stable_baselines3.common.callbacks import BaseCallback

from benchmarks.harness.hyperparams import constructor_kwargs, zoo_hyperparams
from sb3_complementary import PrioritizedDQN


class QValueProbe(BaseCallback):
    def _on_step(self) -> bool:
        if self.num_timesteps % 2500 == 0:
            buffer = self.model.replay_buffer
            indices = np.arange(0, buffer.size(), max(1, buffer.size() // 2000))
            with th.no_grad():
                q = self.model.q_net(buffer.get_samples_at(indices).observations)
            print(f"{self.num_timesteps:6d} q mean {q.mean():7.1f} max {q.max():7.1f} min {q.min():7.1f}", flush=True)
        return True


if __name__ == "__main__":
    th.set_num_threads(1)
    kwargs = constructor_kwargs(zoo_hyperparams("LunarLander-v3"))
    PrioritizedDQN("MlpPolicy", "LunarLander-v3", seed=0, device="cpu", **kwargs).learn(25_000, callback=QValueProbe())
