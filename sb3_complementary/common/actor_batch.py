"""Which batch an actor-critic's actor learns from: the critic's (SB3's) or a uniform one of its own (LA3P's split)."""

from typing import Any

from sb3_complementary.common.replay_setup import ReplaySetupMixin
from sb3_complementary.common.samples import Samples
from sb3_complementary.common.validation import check_choice

#: ``actor_batch`` values: the critic's batch (SB3's update), or a second, uniform batch.
ACTOR_BATCHES = ("shared", "uniform")


class ActorBatchMixin(ReplaySetupMixin):
    """
    The actor's batch in an actor-critic train step (SAC, TD3, DDPG, TQC, CrossQ).

    With ``actor_batch="shared"`` (the default) the actor, and SAC's entropy coefficient, learn from
    the critic's batch: SB3's update, bit for bit. With ``"uniform"`` they learn from a second batch
    of the same size drawn uniformly from the buffer (SB3's ``sample``), and only the critic learns
    from the selection. Why: an actor trained on high-``|TD|`` transitions follows a wrong policy
    gradient, which is how PER can harm an actor-critic (LA3P, Saglam et al., JAIR 2023, whose
    actor learns from uniform and low-``|TD|`` samples). The split keeps the selection on the
    critic's regression and away from the policy gradient. Cost: one uniform gather per actor
    update. Where the critic's draws are uniform already (``alpha=0``), the actor's rows change but
    not their distribution.

    :param actor_batch: ``"shared"`` or ``"uniform"``.
    """

    def __init__(self, *args: Any, actor_batch: str = "shared", **kwargs: Any) -> None:
        check_choice("actor_batch", actor_batch, ACTOR_BATCHES)
        self.actor_batch = actor_batch
        super().__init__(*args, **kwargs)

    def _actor_samples(self, critic_samples: Samples, batch_size: int) -> Samples:
        """
        The batch the actor's loss (and SAC's entropy-coefficient loss) is taken on.

        :param critic_samples: The critic's batch of this gradient step.
        :param batch_size: Its size.
        :return: ``critic_samples`` itself (``"shared"``), or a uniform batch of ``batch_size`` rows.
        """
        if self.actor_batch == "shared":
            return critic_samples
        return self.replay_buffer.sample(batch_size, env=self._vec_normalize_env)
