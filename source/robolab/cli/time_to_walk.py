"""``scripts/time_to_walk.py``: how long after launch a run first walked, judged on its saved checkpoints.

Every checkpoint of the run, in iteration order, is judged as ``play.py`` judges a policy (no observation noise,
no pushes, one full episode per env from a fresh reset); the first whose tracking error is at most ``--max_error``
and whose fall rate is at most ``--max_fall_rate`` walks. Its time to walk runs from ``--launched_at`` (the unix time
the training command started, e.g. ``date +%s.%N`` before it) to when that checkpoint file was written.
"""

from __future__ import annotations

import argparse
import json
import os
import sys

import torch

from robolab import checkpoint, console, evaluation
from robolab.cli import (
    ArgumentParser,
    add_checkpoint_selection,
    non_negative_float,
    one_line_errors,
    open_policy,
    parse_policy_flags,
)
from robolab.files import write_text_atomic
from robolab.launch import DEFAULT_AGENT, DEFAULT_LOG_ROOT, DEFAULT_TASK


def build_parser() -> argparse.ArgumentParser:
    """The flags of ``scripts/time_to_walk.py``."""
    p = ArgumentParser(description="Time from launch to the first checkpoint that walks (JSON output).")
    p.add_argument("--task", default=DEFAULT_TASK)
    p.add_argument("--agent", default=DEFAULT_AGENT, help="the task's agent config entry point")
    add_checkpoint_selection(p, DEFAULT_LOG_ROOT)
    p.add_argument("--launched_at", type=float, required=True, help="unix time the training was launched")
    p.add_argument(
        "--max_error", type=non_negative_float, default=0.25, help="walks: tracking error at most this (m/s)"
    )
    p.add_argument("--max_fall_rate", type=float, default=0.05, help="walks: share of envs that fell at most this")
    p.add_argument("--num_envs", type=int, default=1024)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--device", default=None, help="cpu, cuda or cuda:N (default: cuda if available)")
    p.add_argument("--output", default=None, help="write the JSON here too")
    return p


def time_to_walk(argv: list[str] | None = None) -> dict:
    """Judge a run's checkpoints in order and return the time from launch to the first that walks."""
    args, overrides, device = parse_policy_flags(build_parser(), argv)
    session = open_policy(args, overrides, device)
    run_dir = os.path.dirname(os.path.abspath(session.checkpoint))
    judged, first = [], None
    with session.closer:
        runner, env = session.runner, session.env
        paths = checkpoint.all_checkpoints(run_dir)
        for path in console.progress_over(paths, "checkpoints", unit="checkpoint"):
            runner.load(path, map_location=device, resume=False)
            with torch.inference_mode():  # the env's buffers are inference tensors after an evaluation
                env.reset()  # each checkpoint starts from fresh episodes
            policy = runner.get_inference_policy(device=device)
            result = evaluation.evaluate(env, policy, int(env.max_episode_length), desc=os.path.basename(path))
            walks = result["lin_vel_tracking_error"] <= args.max_error and result["fall_rate"] <= args.max_fall_rate
            row = {
                "iteration": checkpoint.checkpoint_iteration(path),
                "saved_after_s": round(os.path.getmtime(path) - args.launched_at, 2),
                **result,
                "walks": walks,
            }
            judged.append(row)
            print(json.dumps(row), flush=True)
            if walks:
                first = row
                break
    out = {
        "run": run_dir,
        "thresholds": {"tracking_error": args.max_error, "fall_rate": args.max_fall_rate},
        "time_to_walk_s": first["saved_after_s"] if first else None,
        "first_walking": first,
        "judged": judged,
        "command": " ".join(sys.argv),
    }
    if args.output:
        write_text_atomic(os.path.abspath(args.output), json.dumps(out, indent=2) + "\n")
    return out


def main(argv: list[str] | None = None) -> int:
    """``robolab-time-to-walk``: the exit status, with bad input reported in one line."""
    return one_line_errors(lambda: print(json.dumps(time_to_walk(argv)["time_to_walk_s"])))


if __name__ == "__main__":
    sys.exit(main())
