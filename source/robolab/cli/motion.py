"""``scripts/motion.py``: generate, inspect and convert AMP reference clips."""

from __future__ import annotations

import json
import os

import numpy as np

from robolab.amp.motion import MAX_FPS, MotionClip, clip_from_arrays, load_clip, read_arrays
from robolab.assets import RobotCfg
from robolab.cli import ArgumentParser, one_line_errors, positive_float

GAITS = {"go2": ("trot", "pace"), "g1": ("walk",)}
"""The scripted gaits of each built-in robot (``--robot``); the first is the default."""


def robot_cfg(robot: str) -> RobotCfg:
    """The robot config of a built-in robot by name (``go2`` or ``g1``), for generating its clips."""
    if robot == "g1":
        from robolab.tasks.velocity.g1.env_cfgs import g1_robot_cfg

        return g1_robot_cfg()
    from robolab.tasks.velocity.go2.env_cfgs import go2_robot_cfg

    return go2_robot_cfg()


def _generate(args) -> dict:
    gait = args.gait or GAITS[args.robot][0]
    if gait not in GAITS[args.robot]:
        raise ValueError(f"--gait={gait}: the {args.robot} has {', '.join(GAITS[args.robot])}")
    given = {"speed": args.speed, "period": args.period, "duty": args.duty, "step_height": args.step_height}
    common = {k: v for k, v in given.items() if v is not None}  # (each gait keeps its own defaults)
    if args.robot == "g1":
        from robolab.amp.biped import BipedGaitCfg, generate_walk

        clip = generate_walk(BipedGaitCfg(**common, duration=args.duration, fps=args.fps))
    else:
        from robolab.amp.gait import GaitCfg, generate_clip

        clip = generate_clip(GaitCfg(gait=gait, **common, duration=args.duration, fps=args.fps))
    robot = robot_cfg(args.robot)
    clip.save(args.output, robot.joint_names, robot.foot_bodies)
    written = os.path.abspath(args.output)
    return {"written": written, "frames": clip.num_frames, "fps": clip.fps, "duration_s": clip.duration}


def _inspect(args) -> dict:
    robot = robot_cfg(args.robot)
    clip = load_clip(args.file, robot.joint_names, robot.foot_bodies)
    return {
        "file": args.file,
        "frames": clip.num_frames,
        "fps": clip.fps,
        "duration_s": round(clip.duration, 4),
        "joint_pos_range": [float(clip.joint_pos.min()), float(clip.joint_pos.max())],
        "max_joint_vel": float(np.abs(clip.joint_vel).max()),
        "mean_base_lin_vel": clip.base_lin_vel.mean(axis=0).round(4).tolist(),
        "foot_height_range": [float(clip.foot_pos[..., 2].min()), float(clip.foot_pos[..., 2].max())],
    }


def _convert(args) -> dict:
    """Resample to another frame rate and/or rename joints (``--rename old=new``) into the robot's order."""
    robot = robot_cfg(args.robot)
    data = read_arrays(args.file)
    bad = [pair for pair in args.rename if pair.count("=") != 1 or not all(pair.split("="))]
    if bad:
        raise ValueError(f"--rename {bad[0]}: expected OLD=NEW (a joint name of the clip, then the robot's)")
    renames = dict(pair.split("=", 1) for pair in args.rename)
    data["joint_names"] = np.array([renames.get(str(n), str(n)) for n in data.get("joint_names", [])])
    clip = clip_from_arrays(data, args.file, robot.joint_names, robot.foot_bodies)
    if args.fps is not None:
        if not args.fps <= MAX_FPS:
            raise ValueError(f"--fps={args.fps}: at most {MAX_FPS:g} frames per second")
        times = np.arange(0.0, clip.duration + 1e-9, 1.0 / args.fps)
        if len(times) < 2:
            raise ValueError(
                f"--fps={args.fps}: makes {len(times)} frame of the clip's {clip.duration:g} s; a clip needs at least 2"
            )
        src = np.arange(clip.num_frames) / clip.fps
        interp = lambda a: np.stack(
            [np.interp(times, src, col) for col in a.reshape(a.shape[0], -1).T], axis=-1
        ).reshape(len(times), *a.shape[1:])
        clip = MotionClip(
            clip.name,
            float(args.fps),
            interp(clip.joint_pos),
            interp(clip.joint_vel),
            interp(clip.base_lin_vel),
            interp(clip.base_ang_vel),
            interp(clip.foot_pos),
        )
    clip.save(args.output, robot.joint_names, robot.foot_bodies)
    return {"written": os.path.abspath(args.output), "frames": clip.num_frames, "fps": clip.fps}


def build_parser() -> ArgumentParser:
    """The flags of ``scripts/motion.py`` and its ``generate``, ``inspect`` and ``convert`` commands."""
    p = ArgumentParser(description="AMP reference clips (format: see robolab.amp.motion).")
    sub = p.add_subparsers(dest="command", required=True)
    g = sub.add_parser("generate", help="a scripted gait of a built-in robot: the Go2's trot or pace, the G1's walk")
    _robot_flag(g)
    g.add_argument("--gait", default=None, help="go2: trot (default) or pace; g1: walk")
    g.add_argument("--speed", type=float, default=None, help="forward speed (m/s; go2 0.6, g1 0.5)")
    g.add_argument("--period", type=float, default=None, help="gait cycle (s; go2 0.5, g1 0.8)")
    g.add_argument("--duty", type=float, default=None, help="share of the cycle a foot is down (go2 0.5, g1 0.6)")
    g.add_argument("--step_height", type=float, default=None, help="m (0.08)")
    g.add_argument("--duration", type=float, default=4.0, help="s")
    g.add_argument("--fps", type=float, default=50.0, help="frames per second")
    g.add_argument("--output", required=True, help="the .npz file to write (exactly this path)")
    i = sub.add_parser("inspect", help="validate a clip and print its figures")
    _robot_flag(i)
    i.add_argument("file")
    c = sub.add_parser("convert", help="resample and/or rename joints into the robot's order")
    _robot_flag(c)
    c.add_argument("file")
    c.add_argument("--output", required=True, help="the .npz file to write (exactly this path)")
    c.add_argument("--fps", type=positive_float, default=None, help=f"resample to this rate (at most {MAX_FPS:g})")
    c.add_argument("--rename", nargs="*", default=[], metavar="OLD=NEW")
    return p


def _robot_flag(parser) -> None:
    parser.add_argument("--robot", default="go2", choices=sorted(GAITS), help="the built-in robot the clip is for")


def motion(argv: list[str] | None = None) -> dict:
    """Run one ``scripts/motion.py`` command; its result is printed as JSON and returned."""
    args = build_parser().parse_args(argv)
    result = {"generate": _generate, "inspect": _inspect, "convert": _convert}[args.command](args)
    print(json.dumps(result, indent=2))
    return result


def main(argv: list[str] | None = None) -> int:
    """``robolab-motion``: the exit status, with bad input reported in one line."""
    return one_line_errors(lambda: motion(argv))
