"""``scripts/play.py``: run a trained policy, report tracking error and fall rate, watch it live, export ONNX and
TorchScript."""

from __future__ import annotations

import argparse
import json
import os
import sys

from robolab import evaluation, export, tasks, viewer
from robolab.cli import (
    add_checkpoint_selection,
    add_window_flags,
    one_line_errors,
    open_policy,
    parse_policy_flags,
    parser_with_isaaclab_launch_flags,
    port,
    positive_float,
    positive_int,
)
from robolab.config import ConfigError
from robolab.launch import DEFAULT_AGENT, DEFAULT_LOG_ROOT, DEFAULT_TASK, VideoOptions
from robolab.terrain_evaluation import EVAL_FRICTION, evaluate_on_terrain, markdown, terrain_eval_overrides
from robolab.video import record_policy


def build_parser() -> argparse.ArgumentParser:
    """The flags of ``scripts/play.py`` (Isaac Lab's play flags, the viewers and the terrain evaluation)."""
    p = parser_with_isaaclab_launch_flags(
        description="Evaluate, watch and export a trained policy. Arguments without -- are Hydra overrides "
        "(and Isaac Lab's preset tokens: physics=NAME, presets=A,B)."
    )
    p.add_argument("--task", default=DEFAULT_TASK)
    p.add_argument("--agent", default=DEFAULT_AGENT, help="the task's agent config entry point")
    add_checkpoint_selection(p, DEFAULT_LOG_ROOT).add_argument("--run", dest="load_run", help="same as --load_run")
    p.add_argument("--num_envs", type=int, default=64)
    p.add_argument(
        "--steps",
        type=positive_int,
        default=None,
        help="control steps (default: one episode; --viewer: until Ctrl-C; --terrain_eval: its episodes' length)",
    )
    p.add_argument("--seed", type=int, default=None)
    p.add_argument("--device", default=None, help="cpu, cuda or cuda:N (default: cuda if available)")
    p.add_argument("--real-time", "--real_time", dest="real_time", action="store_true", help="run at the control rate")
    p.add_argument("--video", action="store_true", help="record a clip to <run>/videos/play/")
    p.add_argument("--video_length", type=positive_int, default=250, help="env steps to record")
    p.add_argument(
        "--viewer",
        nargs="?",
        const="auto",
        default=None,
        choices=("auto", "native", "web"),
        help="watch live: MuJoCo's window (native), a web page (web; for headless nodes), auto: native with a display",
    )
    p.add_argument("--viewer_port", type=port, default=8080, help="web viewer: the HTTP port")
    p.add_argument(
        "--viewer_host",
        default="127.0.0.1",
        help="web viewer: the address it listens on (default: this machine only; 0.0.0.0 lets anyone who can reach "
        "the node watch, with no login)",
    )
    p.add_argument("--viewer_envs", type=positive_int, default=4, help="web viewer: how many envs to show")
    p.add_argument("--no_export", action="store_true", help="skip writing exported/policy.onnx and policy.pt")
    p.add_argument(
        "--terrain_eval",
        action="store_true",
        help="judge the policy on the fixed evaluation terrain: success, falls and tracking error per type and level",
    )
    p.add_argument(
        "--terrain_eval_speed", type=positive_float, default=1.0, help="--terrain_eval: the command's speed (m/s)"
    )
    p.add_argument(
        "--terrain_eval_direction",
        type=float,
        default=0.0,
        help="--terrain_eval: the command's direction in the body frame, degrees counter-clockwise from straight "
        "ahead (180: backwards, 90: to the left)",
    )
    p.add_argument(
        "--terrain_eval_friction",
        type=_friction,
        default=EVAL_FRICTION,
        help=f"--terrain_eval: every contact's sliding friction (default {EVAL_FRICTION}), or 'task' for the task's "
        "own randomised draws",
    )
    add_window_flags(p)
    return p


def _friction(text: str) -> float | None:
    return None if text == "task" else positive_float(text)


def play(argv: list[str] | None = None) -> dict:
    """Evaluate a checkpoint (or judge it per terrain type, watch it, record it) and export its policy; returns the
    result printed as JSON."""
    args, overrides, device = parse_policy_flags(build_parser(), argv)
    kind = tasks.kind_of(args.task)
    if args.viewer and not kind.viewer:
        raise ConfigError(f"--viewer: shows the embedded MuJoCo tasks; {args.task} plays in its own visualiser")
    viewer_kind = viewer.pick_viewer(args.viewer) if args.viewer else None
    if args.video:
        kind.check_video()
    own_recorder = args.video and kind.own_video_recorder
    video_for = _own_recorder_video(args) if own_recorder else None
    if args.terrain_eval:
        if args.viewer:
            raise ConfigError("--terrain_eval runs its own episodes: leave out --viewer")
        overrides = [*terrain_eval_overrides(args.terrain_eval_speed, args.terrain_eval_direction), *overrides]
    session = open_policy(args, overrides, device, video_for)
    with session.closer:
        runner, env = session.runner, session.env
        policy = runner.get_inference_policy(device=device)
        run_dir = os.path.dirname(os.path.abspath(session.checkpoint))
        result: dict = {"checkpoint": os.path.abspath(session.checkpoint)}
        if not args.no_export:
            metadata = export.policy_metadata(env, runner.alg.get_policy(), args.task)
            result["exported"] = export.export_policy(runner, os.path.join(run_dir, "exported"), metadata)
        steps = args.steps or (None if viewer_kind else int(env.max_episode_length))
        if args.terrain_eval:
            result["terrain_eval"] = evaluate_on_terrain(env, policy, args.terrain_eval_friction, args.steps)
            result["terrain_eval_friction"] = args.terrain_eval_friction or "task"
            result["terrain_eval_command"] = {
                "speed": args.terrain_eval_speed,
                "direction": args.terrain_eval_direction,
            }
            print(markdown(result["terrain_eval"]))
        elif viewer_kind is not None:
            result.update(_watch(env, policy, viewer_kind, args, steps))
        else:
            result.update(evaluation.evaluate(env, policy, steps, real_time=args.real_time))
        if args.video and not own_recorder:
            video = os.path.join(run_dir, "videos", "play", "play.mp4")
            policy.reset()  # a fresh memory for the clip's own rollout
            result["video"] = record_policy(env, policy, video, args.video_length)
    print(json.dumps(result, indent=2))
    return result


def _watch(env, policy, kind: str, args: argparse.Namespace, steps: int | None) -> dict:
    if kind == "native":
        shown = viewer.NativeViewer(env)
    else:
        shown = viewer.WebViewer(env, args.viewer_port, host=args.viewer_host, num_shown=args.viewer_envs)
        print(
            f"[robolab] web viewer: {shown.url} (on a remote node: ssh -L {args.viewer_port}:localhost:"
            f"{args.viewer_port} <node>, then open http://localhost:{args.viewer_port})",
            flush=True,
        )
        if args.viewer_host not in ("127.0.0.1", "localhost", "::1"):
            print(
                f"[robolab] the viewer listens on {args.viewer_host}: anyone who can reach port {args.viewer_port} "
                "can open it (no login)",
                flush=True,
            )
    try:
        result = evaluation.evaluate(
            env, policy, steps, real_time=True, on_step=lambda e, errors: shown.update(e.commands, errors)
        )
    finally:
        shown.close()
    return {**result, "viewer": kind, "viewer_frames": shown.frames}


def _own_recorder_video(args: argparse.Namespace):
    def video_for(checkpoint_path: str) -> VideoOptions:
        run_dir = os.path.dirname(os.path.abspath(checkpoint_path))
        return VideoOptions(os.path.join(run_dir, "videos", "play"), args.video_length, args.video_length * 1000)

    return video_for


def main(argv: list[str] | None = None) -> int:
    """``robolab-play``: the exit status, with bad input reported in one line."""
    # RuntimeError too: a missing OpenGL backend for --video is reported that way (robolab.video.check_renderer).
    return one_line_errors(lambda: play(argv), extra=(RuntimeError,))


if __name__ == "__main__":
    sys.exit(main())
