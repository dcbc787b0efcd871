#!/usr/bin/env bash
# The rl-baselines3-zoo workflow with ComplementaryDQN on CartPole-v1: train -> enjoy -> tune.
#
#   bash examples/zoo_workflow.sh                 # small budgets: a few minutes on 2 cores
#   STEPS=50000 TRIALS=20 bash examples/zoo_workflow.sh
#
# Needs the zoo extra: pip install -e ".[zoo]" (provides the `sb3-complementary` command;
# `python -m sb3_complementary.zoo` is the same thing). Every rl-zoo3 flag works: see
# `sb3-complementary train -h`.
set -euo pipefail

LOGS=${LOGS:-logs/zoo-workflow}   # -f: where runs, evaluations and tuning reports go
STEPS=${STEPS:-10000}             # training budget (the packaged CartPole entry says 50000)
TRIALS=${TRIALS:-4}               # Optuna trials
TRIAL_STEPS=${TRIAL_STEPS:-3000}  # budget of one trial
THREADS=${THREADS:-1}             # torch threads: small MLPs run fastest on one (more thrash on a busy machine)

# 1. Train with the packaged hyperparameters (sb3_complementary/zoo/hyperparams/complementary_dqn.yml:
#    rl-zoo3's tuned DQN entry plus our knobs). -params overrides single values; evaluation every 5000 steps.
sb3-complementary train --algo complementary_dqn --env CartPole-v1 -f "$LOGS" -n "$STEPS" \
  --eval-freq 5000 --eval-episodes 5 --seed 0 --num-threads "$THREADS" -params learning_starts:500

# 2. Watch it: the latest run of that algo/env under $LOGS (--no-render: headless; drop it to see the cart).
sb3-complementary enjoy --algo complementary_dqn --env CartPole-v1 -f "$LOGS" -n 1000 --no-render --num-threads "$THREADS"

# 3. Tune: Optuna over rl-zoo3's DQN search space plus alpha, uniform_fraction, extractor_lr_ratio,
#    refresh_interval, coupling_coef and contribution. The study lives in a SQLite file, so running this
#    same command in a second terminal adds a second worker to the same study (for workers on several
#    machines, give --storage a database URL instead, e.g. postgresql://user:password@host/optuna).
sb3-complementary train --algo complementary_dqn --env CartPole-v1 -f "$LOGS" -optimize \
  --n-trials "$TRIALS" -n "$TRIAL_STEPS" --n-evaluations 2 --eval-episodes 5 \
  --storage "$LOGS/optuna.db" --study-name cdqn-cartpole --sampler tpe --pruner median --no-optim-plots \
  --num-threads "$THREADS"

# 4. Retrain with the best trial's hyperparameters: --trial-id loads a stored trial by its number
#    (the report CSV under $LOGS/complementary_dqn/ lists every trial with its value).
BEST=$(python -c "import optuna; print(optuna.load_study(study_name='cdqn-cartpole', \
  storage='sqlite:///$LOGS/optuna.db').best_trial.number)")
sb3-complementary train --algo complementary_dqn --env CartPole-v1 -f "$LOGS" -n "$STEPS" --eval-freq -1 \
  --storage "$LOGS/optuna.db" --study-name cdqn-cartpole --trial-id "$BEST" --num-threads "$THREADS"
