"""Command-line programs behind ``scripts/``: they parse arguments, call the library and print.

``one_line_errors`` is how every program reports a bad input: one ``error: ...`` line on stderr and exit code 2.
``ROBOLAB_DEBUG=1`` shows the traceback instead.
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import difflib
import math
import os
import sys
from collections.abc import Callable

from robolab import console, distributed, files, runs, tasks
from robolab.config import is_number

# What a bad input, a bad file or a full or read-only disk raises (robolab's own errors are ValueErrors).
USER_ERRORS: tuple[type[BaseException], ...] = (ValueError, OSError, distributed.DistributedConfigError)


def one_line_errors(program: Callable[[], object], extra: tuple[type[BaseException], ...] = ()) -> int:
    """Run ``program``; a user error becomes one line on stderr and exit code 2 (0 otherwise)."""
    try:
        program()
    except BrokenPipeError:  # the reader went away (`| head`): no error line, the exit status a shell gives SIGPIPE
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # nothing left to flush at exit
        return 128 + 13
    except USER_ERRORS + extra as err:
        if os.environ.get("ROBOLAB_DEBUG"):
            raise
        message = " ".join(str(err).split()) or type(err).__name__
        print(f"error: {message}", file=sys.stderr)
        return 2
    except (MemoryError, RuntimeError) as err:  # torch reports a failed allocation as a RuntimeError
        message = out_of_memory(err) or distributed.lost_peer(err)
        if message is None or os.environ.get("ROBOLAB_DEBUG"):
            raise
        print(f"error: {message}", file=sys.stderr)
        return 2
    finally:
        with contextlib.suppress(RuntimeError):  # a group whose peers are gone cannot be torn down cleanly
            distributed.shutdown()
    return 0


class DefaultsHelpFormatter(argparse.HelpFormatter):
    """``--help`` shows each flag's default where it has one; a flag whose default is None (the task's own value,
    or off) says nothing more, rather than "(default: None)"."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        text = action.help or ""
        return f"{text} (default: %(default)s)" if self._shows_default(action) and text.strip() else text

    def _format_action(self, action: argparse.Action) -> str:
        if not (action.help and action.help.strip()) and self._shows_default(action):
            action = copy.copy(action)  # a flag without help still shows its default
            action.help = "(default: %(default)s)"
        return super()._format_action(action)

    @staticmethod
    def _shows_default(action: argparse.Action) -> bool:
        return (
            bool(action.option_strings)
            and action.default not in (None, False, argparse.SUPPRESS)
            and "%(default)" not in (action.help or "")
        )


class ArgumentParser(argparse.ArgumentParser):
    """argparse's parser, whose errors (a missing or malformed flag value) are ``ValueError``s: one line and exit code
    2 through ``one_line_errors``, as every other bad input, instead of argparse's usage block. ``--help`` shows the
    defaults (``DefaultsHelpFormatter``)."""

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("formatter_class", DefaultsHelpFormatter)
        super().__init__(*args, **kwargs)
        self.add_argument(
            "--verbose", action="store_true", help="print everything (rsl_rl's iteration block, the networks, warp)"
        )

    def parse_known_args(self, args=None, namespace=None):  # type: ignore[override]
        parsed, rest = super().parse_known_args(args, namespace)
        console.set_verbose(getattr(parsed, "verbose", False))  # before any library is set up
        return parsed, rest

    def error(self, message: str):  # type: ignore[override]
        raise ValueError(f"{self.prog}: {message}")


def positive_int(text: str) -> int:
    """An argparse type: an integer >= 1."""
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text}: must be an integer >= 1")
    return value


def non_negative_int(text: str) -> int:
    """An argparse type: an integer >= 0."""
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"{text}: must be an integer >= 0")
    return value


def positive_float(text: str) -> float:
    """An argparse type: a finite number > 0."""
    value = float(text)
    if not (math.isfinite(value) and value > 0):
        raise argparse.ArgumentTypeError(f"{text}: must be a finite number > 0")
    return value


def non_negative_float(text: str) -> float:
    """An argparse type: a finite number >= 0."""
    value = float(text)
    if not (math.isfinite(value) and value >= 0):
        raise argparse.ArgumentTypeError(f"{text}: must be a finite number >= 0")
    return value


def port(text: str) -> int:
    """An argparse type: a TCP port, 1-65535."""
    value = int(text)
    if not 1 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"{text}: a TCP port is in 1-65535")
    return value


def out_of_memory(err: BaseException) -> str | None:
    """The one line for a failed allocation (NumPy's ``MemoryError``, torch's CPU or CUDA allocator), else None."""
    text = " ".join(str(err).split())
    if not (isinstance(err, MemoryError) or "can't allocate memory" in text or "out of memory" in text.lower()):
        return None
    detail = text.split("DefaultCPUAllocator: ")[-1][:160] or "an allocation failed"
    return f"out of memory ({detail}): fewer envs per process (--num_envs), or a smaller setting"


def check_unknown(parser: argparse.ArgumentParser, rest: list[str]) -> list[str]:
    """``rest`` (what argparse did not know) as Hydra overrides; a ``-flag`` among them is a one-line error naming
    the closest known flag, never a Hydra lexer trace."""
    for arg in rest:
        if arg.startswith("-") and not is_number(arg):
            flag = arg.split("=", 1)[0]
            known = [o for action in parser._actions for o in action.option_strings]
            close = difflib.get_close_matches(flag, known, n=1, cutoff=0.5)
            hint = f"; did you mean {close[0]}?" if close else "; see --help"
            raise ValueError(f"unknown flag {flag}{hint} (arguments without -- are Hydra overrides: key=value)")
    return rest


def bare_resume(argv: list[str]) -> list[str]:
    """Isaac Lab's ``--resume`` takes no value: when a flag or a Hydra override follows it, it means ``latest``
    (argparse would take the override for the run to resume)."""
    out = []
    for i, arg in enumerate(argv):
        out.append(arg)
        following = argv[i + 1] if i + 1 < len(argv) else None
        takes_it = following is not None and ("=" in following or following.startswith("-"))
        if arg == "--resume" and takes_it and not os.path.exists(str(following)):
            out.append("latest")
    return out


def parse(parser: argparse.ArgumentParser, argv: list[str] | None) -> tuple[argparse.Namespace, list[str]]:
    """The flags, and the rest as Hydra overrides (an unknown ``--flag`` among them is a one-line error)."""
    argv = sys.argv[1:] if argv is None else argv
    if tasks.isaaclab_installed():
        from isaaclab.app.sim_launcher import fuse_kit_args

        argv = fuse_kit_args(argv)  # --kit_args "--flag" (a value that looks like a flag), as Isaac Lab takes it
    args, rest = parser.parse_known_args(argv)
    return args, check_unknown(parser, rest)


# --- Isaac Lab's launch flags -------------------------------------------------------------------------------
def parser_with_isaaclab_launch_flags(**kwargs) -> argparse.ArgumentParser:
    """An argument parser that also takes Isaac Lab's launcher flags (``add_launcher_args``: ``--visualizer``,
    ``--kit_args``, ``--livestream``, ...) where Isaac Lab is installed; robolab's own flags of the same name
    (``--device``: cpu, cuda, cuda:N, or the rank's GPU) replace Isaac Lab's."""
    launcher = None
    if tasks.isaaclab_installed():
        from isaaclab.app import add_launcher_args

        launcher = argparse.ArgumentParser(add_help=False)
        add_launcher_args(launcher)
    p = ArgumentParser(parents=[launcher] if launcher else [], conflict_handler="resolve", **kwargs)
    flags = {a.dest: a.default for a in launcher._actions if a.option_strings} if launcher else {}
    # --verbose is robolab's own (every program has it), and reaches Isaac Lab's launcher too
    own = ("help", "device", "verbose")
    p.set_defaults(isaaclab_launcher_flags={k: v for k, v in flags.items() if k not in own})
    return p


def add_window_flags(parser: argparse.ArgumentParser) -> None:
    """Isaac Lab's window and rendering flags (``--headless``, ``--enable_cameras``, ...), accepted by every program."""
    parser.add_argument("--headless", action="store_true", help="no window (the embedded sim never opens one)")
    parser.add_argument(
        "--enable_cameras", action="store_true", help="Isaac Lab tasks: render camera sensors (Kit) without a window"
    )


def isaaclab_launcher_args(args: argparse.Namespace) -> dict[str, object]:
    """What Isaac Lab's ``launch_simulation`` reads: ``--headless``, ``--enable_cameras`` and the launcher flags
    given on the command line (the rest keep Isaac Lab's defaults). An embedded task refuses launcher flags."""
    given = {
        dest: getattr(args, dest)
        for dest, default in args.isaaclab_launcher_flags.items()
        if hasattr(args, dest) and getattr(args, dest) != default
    }
    if given and not tasks.kind_of(args.task).launcher_flags:
        raise ValueError(f"--{next(iter(given))}: an Isaac Lab launch flag; {args.task} is not an Isaac Lab task")
    if args.verbose and tasks.kind_of(args.task).launcher_flags:
        given["verbose"] = True
    return {"headless": args.headless, "enable_cameras": args.enable_cameras, **given}


def parse_policy_flags(
    parser: argparse.ArgumentParser, argv: list[str] | None
) -> tuple[argparse.Namespace, list[str], str]:
    """``parse`` for the programs that run a policy in envs: ``--num_envs`` must be positive, and the device is
    ``--device`` or CUDA when there is one."""
    args, overrides = parse(parser, argv)
    if args.num_envs <= 0:
        raise ValueError(f"--num_envs={args.num_envs}: must be a positive integer")
    return args, overrides, default_device(args.device)


def default_device(device: str | None) -> str:
    """``--device``, else CUDA when there is one."""
    import torch

    return device or ("cuda" if torch.cuda.is_available() else "cpu")


def add_checkpoint_selection(parser: argparse.ArgumentParser, default_log_root: str) -> argparse._ArgumentGroup:
    """Isaac Lab's checkpoint selection flags, as ``play.py`` and ``sim2sim.py`` take them."""
    select = parser.add_argument_group("which checkpoint (Isaac Lab's flags; default: the newest of the experiment)")
    select.add_argument("--log_root", default=default_log_root, help="root of all experiment directories")
    select.add_argument("--experiment_name", default=None, help="experiment directory (default: the task's)")
    select.add_argument("--load_run", default=None, help="a run directory, or a regex over run names (newest match)")
    select.add_argument(
        "--checkpoint", default=None, help="a model_<it>.pt file, or a regex over checkpoint names (highest iteration)"
    )
    return select


def checkpoint_finder(args: argparse.Namespace):
    """``agent -> checkpoint path``: Isaac Lab's selection (``runs.select_checkpoint``) in the experiment."""

    def find(agent: dict) -> str:
        experiment = args.experiment_name or agent["experiment_name"]
        files.check_dir_name("--experiment_name", experiment)
        return runs.select_checkpoint(os.path.join(args.log_root, experiment), args.load_run, args.checkpoint)

    return find


def open_policy(args: argparse.Namespace, overrides: list[str], device: str, video_for=None):
    """The selected checkpoint's policy in ``args.num_envs`` envs of ``args.task`` under evaluation conditions
    (``robolab.session.PolicySession``), as ``play.py`` and ``time_to_walk.py`` judge a policy."""
    from robolab import evaluation
    from robolab.session import prepare_policy

    overrides = evaluation.eval_overrides(args.task, args.num_envs, args.seed) + overrides
    launcher = isaaclab_launcher_args(args) if hasattr(args, "isaaclab_launcher_flags") else None
    return prepare_policy(args.task, overrides, device, checkpoint_finder(args), args.agent, video_for, launcher)
