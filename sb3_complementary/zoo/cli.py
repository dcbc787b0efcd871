"""
``sb3-complementary`` / ``python -m sb3_complementary.zoo``: rl-zoo3's train, enjoy and record-video
with this package's algorithms registered.

    sb3-complementary train --algo complementary_dqn --env CartPole-v1
    sb3-complementary enjoy --algo complementary_dqn --env CartPole-v1 --no-render
    sb3-complementary record-video --algo complementary_dqn --env CartPole-v1 -n 500
    sb3-complementary train --algo complementary_dqn --env CartPole-v1 -optimize --n-trials 20 --storage tune.db
    sb3-complementary evaluate-multitask --model logs/model.zip --algo complementary_dqn --family cartpole

Each command is rl-zoo3's own script, run with its own argument parser, so every rl-zoo3 flag
works as documented there (``sb3-complementary train -h`` lists them). What this entry point adds:

- this package's algorithms are registered (:func:`~sb3_complementary.zoo.registry.register_algorithms`);
- ``--algo`` defaults to ``complementary_dqn`` (rl-zoo3's default is ``ppo``), and an unknown
  ``--algo`` is refused with the list of valid ones;
- ``train``: ``--conf-file`` defaults to our packaged ``hyperparams/<algo>.yml`` for our
  algorithms, hyperparameter files are checked first, ``--storage`` may be a plain SQLite file
  path (see :class:`~sb3_complementary.zoo.experiment.ZooExperimentManager`);
- ``enjoy`` / ``record-video``: ``-f`` defaults to ``logs`` (where ``train`` writes) for our
  algorithms, instead of rl-zoo3's ``rl-trained-agents`` download folder, and our models are
  loaded without a replay buffer (:mod:`~sb3_complementary.zoo.inference`).

rl-zoo3's own algorithms (``dqn``, ``ppo``, ...) keep rl-zoo3's files and defaults.

``evaluate-multitask`` is this package's own command (no rl-zoo3 involved): a saved model's per-task
scores on a family of task variants (:mod:`sb3_complementary.multitask.evaluate`).
"""

import contextlib
import difflib
import runpy
import sys
from collections.abc import Callable, Iterator, Sequence

from sb3_complementary.zoo.hyperparams import HyperparamsError
from sb3_complementary.zoo.registry import ZOO_ALGORITHMS, register_algorithms, zoo_algorithm

PROG = "sb3-complementary"
#: ``--algo`` when none is given.
DEFAULT_ALGO = "complementary_dqn"
#: Log folder ``train`` writes to by default, and ``enjoy``/``record-video`` read for our algorithms.
DEFAULT_LOG_FOLDER = "logs"

USAGE = f"""usage: {PROG} {{train,enjoy,record-video}} [rl-zoo3 options]
       {PROG} evaluate-multitask --model MODEL.zip [--algo ALGO] [--family FAMILY] [options]

rl-zoo3's train / enjoy / record_video with the algorithms of sb3-complementary registered:
  {", ".join(entry.name for entry in ZOO_ALGORITHMS)} (and all of rl-zoo3's own).

  {PROG} train --algo complementary_dqn --env CartPole-v1 [-n STEPS] [-f logs] [--conf-file FILE]
  {PROG} enjoy --algo complementary_dqn --env CartPole-v1 [-f logs] [--no-render]
  {PROG} record-video --algo complementary_dqn --env CartPole-v1 [-f logs] [-n STEPS]
  {PROG} train --algo complementary_dqn --env CartPole-v1 -optimize --n-trials 20 [--storage tune.db]
  {PROG} evaluate-multitask --model logs/model.zip --algo complementary_dqn --family cartpole [-n 10]

'{PROG} COMMAND -h' lists every option of that command (they are rl-zoo3's).
--algo defaults to {DEFAULT_ALGO}; for our algorithms --conf-file defaults to the packaged
hyperparameter file and enjoy/record-video read -f {DEFAULT_LOG_FOLDER} by default.
"""


def _train() -> None:
    import rl_zoo3.train

    from sb3_complementary.zoo.experiment import ZooExperimentManager

    # train() builds its ExperimentManager from this module attribute.
    with _patched(rl_zoo3.train, "ExperimentManager", ZooExperimentManager):
        rl_zoo3.train.train()


def _enjoy() -> None:
    from rl_zoo3.enjoy import enjoy

    from sb3_complementary.zoo.inference import inference_algorithms

    with inference_algorithms():
        enjoy()


def _record_video() -> None:
    from sb3_complementary.zoo.inference import inference_algorithms

    # rl-zoo3's record_video has no function: its code runs under `if __name__ == "__main__"`.
    with inference_algorithms():
        runpy.run_module("rl_zoo3.record_video", run_name="__main__")


COMMANDS: dict[str, Callable[[], None]] = {"train": _train, "enjoy": _enjoy, "record-video": _record_video}


def _evaluate_multitask(options: Sequence[str]) -> int:
    from sb3_complementary.multitask.evaluate import main as evaluate_main

    return evaluate_main(options, prog=f"{PROG} evaluate-multitask")


#: This package's own commands: they take the options directly and return an exit status.
OWN_COMMANDS: dict[str, Callable[[Sequence[str]], int]] = {"evaluate-multitask": _evaluate_multitask}


def valid_algorithms_message(algo: str) -> str:
    """
    :param algo: The unknown ``--algo`` value.
    :return: The message listing every valid algorithm, ours first, with close matches.
    """
    from rl_zoo3.utils import ALGOS

    ours = [entry.name for entry in ZOO_ALGORITHMS]
    theirs = sorted(name for name in ALGOS if name not in ours)
    close = difflib.get_close_matches(algo, [*ours, *theirs], n=2)
    hint = f" Did you mean {' or '.join(close)}?" if close else ""
    return (
        f"unknown --algo {algo!r}.{hint}\n"
        f"  algorithms of sb3-complementary: {', '.join(ours)}\n"
        f"  algorithms of rl-zoo3: {', '.join(theirs)}"
    )


def main(argv: Sequence[str] | None = None) -> int:
    """
    Run one command.

    :param argv: The arguments after the program name (``sys.argv[1:]`` when None): a command
        (``train``, ``enjoy``, ``record-video``) followed by rl-zoo3's options for it, or
        ``evaluate-multitask`` followed by its own options.
    :return: The exit status: 0 on success, 2 for bad input (unknown command or algorithm,
        unusable hyperparameter file). rl-zoo3's own argument errors exit through ``SystemExit``.
    """
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] in ("-h", "--help"):
        print(USAGE, end="")
        return 0 if args else 2
    command, options = args[0], args[1:]
    if command in OWN_COMMANDS:
        return OWN_COMMANDS[command](options)
    if command not in COMMANDS:
        print(
            f"{PROG}: unknown command {command!r}; choose from {', '.join([*COMMANDS, *OWN_COMMANDS])}", file=sys.stderr
        )
        return 2
    try:
        register_algorithms()
    except ImportError as exc:  # the zoo extra is missing
        print(f"{PROG}: {exc}. Install the zoo extra: pip install 'sb3-complementary[zoo]'", file=sys.stderr)
        return 2
    from rl_zoo3.utils import ALGOS

    # Defaults go in front: argparse keeps an option's last value, so the user's own always wins.
    algo = _option_value(options, "--algo")
    if algo is None:
        algo = DEFAULT_ALGO
        options = ["--algo", algo, *options]
    if algo not in ALGOS:
        print(f"{PROG} {command}: {valid_algorithms_message(algo)}", file=sys.stderr)
        return 2
    if command != "train" and zoo_algorithm(algo) is not None:
        options = ["-f", DEFAULT_LOG_FOLDER, *options]
    try:
        with _patched(sys, "argv", [f"{PROG} {command}", *options]):
            COMMANDS[command]()
    except HyperparamsError as exc:
        print(f"{PROG} {command}: error: {exc}", file=sys.stderr)
        return 2
    return 0


def _option_value(options: Sequence[str], flag: str) -> str | None:
    """The last value given to ``flag`` (``--flag value`` or ``--flag=value``), as argparse would keep it."""
    value = None
    for i, option in enumerate(options):
        if option == flag and i + 1 < len(options):
            value = options[i + 1]
        elif option.startswith(f"{flag}="):
            value = option.split("=", 1)[1]
    return value


@contextlib.contextmanager
def _patched(owner: object, name: str, value: object) -> Iterator[None]:
    saved = getattr(owner, name)
    setattr(owner, name, value)
    try:
        yield
    finally:
        setattr(owner, name, saved)
