"""The callback that schedules the experience extractor's fits and re-scores inside SB3's loop."""

from typing import TYPE_CHECKING

from stable_baselines3.common.callbacks import BaseCallback

if TYPE_CHECKING:
    from sb3_complementary.common.complementary_mixin import ComplementaryMixin


class ExtractorTrainingCallback(BaseCallback):
    """
    Co-evolves the experience extractor with the policy: it only schedules, the model does the work.

    At the end of each rollout (never inside the per-sample hot loop):

    - every ``extractor_train_freq`` env steps it calls the model's ``fit_extractor()``;
    - every ``refresh_interval`` env steps it calls the model's ``refresh_scores()``, which
      re-scores the whole buffer with batched forward passes and rebuilds the sum tree.

    ``ComplementaryDQN.learn()`` adds one automatically unless the user passes their own. Used
    directly, its arguments override the model's knobs of the same name.

    :param extractor_train_freq: Env steps between extractor fits (model's knob if None).
    :param refresh_interval: Env steps between full re-scores (model's knob if None).
    :param coupling_coef: Weight of the KL-to-uniform term (model's knob if None).
    :param gradient_steps: Extractor gradient steps per fit (model's knob if None).
    :param batch_size: Extractor minibatch size (model's knob if None).
    :param verbose: Verbosity level.
    """

    model: "ComplementaryMixin"

    def __init__(
        self,
        extractor_train_freq: int | None = None,
        refresh_interval: int | None = None,
        coupling_coef: float | None = None,
        gradient_steps: int | None = None,
        batch_size: int | None = None,
        verbose: int = 0,
    ) -> None:
        super().__init__(verbose)
        self._intervals = {"extractor_train_freq": extractor_train_freq, "refresh_interval": refresh_interval}
        # Passed to fit_extractor(); None there means the model's own knob.
        self._gradient_steps, self._batch_size, self._coupling_coef = gradient_steps, batch_size, coupling_coef
        self.last_loss = float("nan")

    def _interval(self, name: str) -> int:
        value = self._intervals[name]
        return int(getattr(self.model, name) if value is None else value)

    def _init_callback(self) -> None:
        if not hasattr(self.model, "extractor"):
            raise ValueError(
                f"ExtractorTrainingCallback needs a Complementary algorithm (with an extractor), "
                f"got {type(self.model).__name__}"
            )
        model = self.model
        if model.last_fit_step > model.num_timesteps:  # learn(reset_num_timesteps=True): the clock restarted
            model.last_fit_step = model.last_refresh_step = model.num_timesteps

    def _on_step(self) -> bool:
        return True

    def _on_rollout_end(self) -> None:
        model = self.model
        steps = model.num_timesteps
        if steps - model.last_fit_step >= self._interval("extractor_train_freq"):
            model.last_fit_step = steps
            self.fit()
        if steps - model.last_refresh_step >= self._interval("refresh_interval") and model.replay_buffer.size() > 0:
            model.last_refresh_step = steps
            self.refresh()

    def fit(self) -> None:
        """Fit the extractor now (:meth:`~ComplementaryMixin.fit_extractor`), with this callback's overrides."""
        self.last_loss = self.model.fit_extractor(self._gradient_steps, self._batch_size, self._coupling_coef)

    def refresh(self) -> None:
        """Re-score the buffer now (:meth:`~ComplementaryMixin.refresh_scores`)."""
        self.model.refresh_scores()
