"""``scripts/play.py``: run a trained policy, report tracking error and fall rate, export ONNX and TorchScript."""

from __future__ import annotations

import argparse
import json
import os
import sys

from robolab import checkpoint, evaluation, tasks
from robolab.cli import one_line_errors
from robolab.config import ConfigError
from robolab.session import DEFAULT_LOG_ROOT, DEFAULT_TASK, prepare_policy


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        description="Evaluate and export a trained policy. Unknown arguments are Hydra overrides."
    )
    p.add_argument("--task", default=DEFAULT_TASK)
    source = p.add_mutually_exclusive_group()
    source.add_argument("--checkpoint", default=None, help="a model_<it>.pt file")
    source.add_argument("--run", default=None, help="a run directory (its newest checkpoint is used)")
    p.add_argument("--log_root", default=DEFAULT_LOG_ROOT, help="where to look for the newest run")
    p.add_argument("--num_envs", type=int, default=64)
    p.add_argument("--steps", type=int, default=None, help="control steps to run (default: one episode)")
    p.add_argument("--seed", type=int, default=None)
    p.add_argument("--device", default="cpu")
    p.add_argument(
        "--video", action="store_true", help="render env 0 to <run>/videos/play.mp4 (needs an OpenGL backend)"
    )
    p.add_argument("--video_length", type=int, default=250, help="frames to record")
    p.add_argument("--no_export", action="store_true", help="skip writing exported/policy.onnx and policy.pt")
    return p


def checkpoint_finder(args: argparse.Namespace):
    """``agent -> checkpoint path``: the given file, or the newest checkpoint of the run or experiment."""

    def find(agent: dict) -> str:
        if args.checkpoint:
            if not os.path.isfile(args.checkpoint):
                raise FileNotFoundError(f"--checkpoint={args.checkpoint!r}: no such file")
            return args.checkpoint
        where = args.run or os.path.join(args.log_root, agent["experiment_name"])
        run_dir = args.run or checkpoint.latest_run(where)
        found = checkpoint.latest_checkpoint(run_dir) if run_dir else None
        if found is None:
            raise FileNotFoundError(f"no checkpoint found in {where!r} (train first, or pass --checkpoint)")
        return found

    return find


def play(argv: list[str] | None = None) -> dict:
    args, overrides = build_parser().parse_known_args(argv)
    if args.num_envs <= 0:
        raise ConfigError(f"--num_envs={args.num_envs}: must be a positive integer")
    isaaclab_task = tasks.is_isaaclab_task(args.task)
    if args.video and isaaclab_task:
        raise ConfigError(f"--video: renders the embedded MuJoCo tasks only, not {args.task}")
    if args.video:
        evaluation.check_renderer()
    eval_overrides = evaluation.ISAACLAB_EVAL_OVERRIDES if isaaclab_task else evaluation.EVAL_OVERRIDES
    extra = [f"env.num_envs={args.num_envs}"] + ([f"seed={args.seed}"] if args.seed is not None else [])
    session = prepare_policy(args.task, eval_overrides + extra + overrides, args.device, checkpoint_finder(args))
    with session.closer:
        runner, env = session.runner, session.env
        policy = runner.get_inference_policy(device=args.device)
        run_dir = os.path.dirname(os.path.abspath(session.checkpoint))
        result: dict = {"checkpoint": os.path.abspath(session.checkpoint)}
        if not args.no_export:
            result["exported"] = evaluation.export_policy(runner, os.path.join(run_dir, "exported"))
        result.update(evaluation.evaluate(env, policy, args.steps or int(env.max_episode_length)))
        if args.video:
            video = os.path.join(run_dir, "videos", "play.mp4")
            result["video"] = evaluation.record_video(env, policy, video, args.video_length)
    print(json.dumps(result, indent=2))
    return result


def main(argv: list[str] | None = None) -> int:
    # RuntimeError too: a missing OpenGL backend for --video is reported that way (evaluation.check_renderer).
    return one_line_errors(lambda: play(argv), extra=(RuntimeError,))


if __name__ == "__main__":
    sys.exit(main())
