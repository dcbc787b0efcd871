"""
Multi-task and lifelong learning: families of task variants, ``MultiTaskEnv`` (the task changes
at reset by a schedule, ``info["task_id"]`` feeds the replay's task feature) and per-task
evaluation (``evaluate_multitask``). See docs/multitask.md.
"""

from sb3_complementary.multitask.evaluation import evaluate_multitask
from sb3_complementary.multitask.multitask_env import SCHEDULES, MultiTaskEnv
from sb3_complementary.multitask.scores import MultiTaskEvaluation, TaskScore
from sb3_complementary.multitask.variants import (
    ParamSpec,
    TaskFamily,
    TaskVariant,
    get_family,
    list_families,
    register_family,
)

# The command line, ``python -m sb3_complementary.multitask.evaluate``, is not imported here: runpy
# warns when the module it runs was already imported with its package.


__all__ = [
    "SCHEDULES",
    "MultiTaskEnv",
    "MultiTaskEvaluation",
    "ParamSpec",
    "TaskFamily",
    "TaskScore",
    "TaskVariant",
    "evaluate_multitask",
    "get_family",
    "list_families",
    "register_family",
]
