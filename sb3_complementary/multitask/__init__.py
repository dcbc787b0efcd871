"""
Multi-task and lifelong learning: families of task variants, ``MultiTaskEnv`` (the task changes
at reset by a schedule, ``info["task_id"]`` feeds the replay's task feature) and per-task
evaluation (``evaluate_multitask``). See docs/multitask.md.
"""

from typing import TYPE_CHECKING, Any

from sb3_complementary.multitask.multitask_env import SCHEDULES, MultiTaskEnv
from sb3_complementary.multitask.variants import (
    ParamSpec,
    TaskFamily,
    TaskVariant,
    get_family,
    list_families,
    register_family,
)

if TYPE_CHECKING:
    from sb3_complementary.multitask.evaluate import MultiTaskEvaluation, TaskScore, evaluate_multitask

#: Names served from the evaluate module on first use: importing it here would make
#: ``python -m sb3_complementary.multitask.evaluate`` load it twice (runpy warns about that).
_FROM_EVALUATE = ("MultiTaskEvaluation", "TaskScore", "evaluate_multitask")


def __getattr__(name: str) -> Any:
    if name in _FROM_EVALUATE:
        from sb3_complementary.multitask import evaluate

        return getattr(evaluate, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


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
