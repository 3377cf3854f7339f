"""``scripts/sim2sim.py``: a checkpoint trained on one task, judged in its own env and in another task's env.

    python scripts/sim2sim.py --task RoboLab-Isaac-Velocity-Flat-Go2 --target RoboLab-Velocity-Flat-Go2-v0
    python scripts/sim2sim.py --target RoboLab-Velocity-Flat-Go2-v0 env.backend=warp   # MuJoCo C -> MuJoCo Warp

Both runs use the same env count, seed and number of steps, without observation noise or pushes. Arguments
without -- are Hydra overrides of the target env. The result is printed as a table and written as JSON
(``<run>/sim2sim/<checkpoint>_<target>[_<what differs>].json`` unless ``--output``).
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import os
import re
import sys

from robolab import evaluation, files, sim2sim, tasks
from robolab.cli import (
    ArgumentParser,
    add_checkpoint_selection,
    checkpoint_finder,
    one_line_errors,
    parse_policy_flags,
    positive_int,
)
from robolab.launch import DEFAULT_LOG_ROOT, DEFAULT_TASK, VideoOptions
from robolab.session import env_config, join, open_env, prepare_policy
from robolab.video import check_renderer


def build_parser() -> argparse.ArgumentParser:
    """The flags of ``scripts/sim2sim.py``."""
    p = ArgumentParser(description="Judge a trained policy in another simulator's env (Sim2Sim).")
    p.add_argument("--task", default=DEFAULT_TASK, help="the task the checkpoint was trained on")
    p.add_argument("--target", required=True, help="the task whose env judges it (another simulator)")
    add_checkpoint_selection(p, DEFAULT_LOG_ROOT)
    p.add_argument("--num_envs", type=int, default=64)
    p.add_argument("--steps", type=positive_int, default=None, help="control steps in each env (default: one episode)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--device", default=None, help="cpu, cuda or cuda:N (default: cuda if available)")
    p.add_argument(
        "--output",
        default=None,
        help="the JSON file (default: <run>/sim2sim/<checkpoint>_<target>[_<what differs>].json, see result_name)",
    )
    p.add_argument(
        "--video", action="store_true", help="record env 0 in both simulators (<run>/sim2sim/videos/<side>_<task>/)"
    )
    p.add_argument("--video_length", type=positive_int, default=250, help="control steps to record in each")
    perturb = p.add_argument_group("perturbations of the target env (an embedded one; the robustness table)")
    perturb.add_argument(
        "--latency_ms", type=float, default=None, help="action delay, a whole number of control periods"
    )
    perturb.add_argument("--kp_scale", type=float, default=None, help="every joint's stiffness scaled")
    perturb.add_argument("--kd_scale", type=float, default=None, help="every joint's damping scaled")
    perturb.add_argument("--strength_scale", type=float, default=None, help="every motor's torque (and limit) scaled")
    perturb.add_argument("--friction", type=float, default=None, help="every contact's friction coefficient")
    perturb.add_argument("--added_mass", type=float, default=None, help="kg added to the base")
    perturb.add_argument("--obs_noise_scale", type=float, default=None, help="the policy's observation noise, scaled")
    return p


def run(argv: list[str] | None = None) -> dict:
    """Judge a checkpoint in its own task's env and in the ``--target`` env; returns the comparison written as JSON."""
    args, target_overrides, device = parse_policy_flags(build_parser(), argv)
    if args.video:  # before MuJoCo is first imported: it picks its OpenGL backend then
        check_renderer()

    def video_dir(checkpoint_path: str, side: str, task: str) -> str:
        run_dir = os.path.dirname(os.path.abspath(checkpoint_path))
        return os.path.join(run_dir, "sim2sim", "videos", f"{side}_{task}")

    def isaaclab_video(side: str, task: str, checkpoint_path: str) -> VideoOptions | None:
        if not (args.video and tasks.kind_of(task).own_video_recorder):
            return None
        return VideoOptions(video_dir(checkpoint_path, side, task), args.video_length, args.video_length * 1000)

    # Every input is checked before the source run, which takes minutes: the target task (an Isaac Lab one needs
    # Isaac Lab installed), its overrides and its env config.
    user_overrides = list(target_overrides)
    target_eval = evaluation.eval_overrides(args.target, args.num_envs, args.seed)
    job = join(args.target, target_eval + target_overrides, device, False)
    target_cfg = env_config(args.target, job)
    perturbations = sim2sim.perturbation_overrides(vars(args), target_cfg, tasks.kind_of(args.target).name)
    if perturbations:  # the target env again, perturbed (its noise back on if asked)
        if args.obs_noise_scale is not None:
            target_eval = [o for o in target_eval if not o.startswith("env.observations.policy.enable_corruption=")]
        target_overrides = target_overrides + perturbations
        job = join(args.target, target_eval + target_overrides, device, False)
        target_cfg = env_config(args.target, job)
    source = prepare_policy(
        args.task,
        evaluation.eval_overrides(args.task, args.num_envs, args.seed),
        device,
        checkpoint_finder(args),
        video_for=lambda ckpt: isaaclab_video("source", args.task, ckpt),
    )
    # the gait patterns scored in both envs: the robolab side's (foot names are the same in both)
    gaits, feet = sim2sim.gait_patterns(getattr(source.env, "cfg", None), target_cfg)
    with source.closer:
        policy = source.runner.get_inference_policy(device=device)
        source_interface = sim2sim.interface_of(args.task, source.env)
        steps = args.steps or int(source.env.max_episode_length)
        env = recorded(source.env, args, args.task, video_dir(source.checkpoint, "source", args.task), source.closer)
        in_source = sim2sim.judge(env, policy, steps, gaits, feet, desc=f"source {args.task}")
    policy.reset()
    with contextlib.ExitStack() as closer:
        target_video = isaaclab_video("target", args.target, source.checkpoint)
        env, _ = open_env(args.target, target_cfg, job, closer, target_video)
        env = recorded(env, args, args.target, video_dir(source.checkpoint, "target", args.target), closer)
        target_interface = sim2sim.interface_of(args.target, env)
        mapped = sim2sim.MappedPolicy(policy, source_interface, target_interface, device)
        in_target = sim2sim.judge(env, mapped, steps, gaits, feet, desc=f"target {args.target}")
    result = {
        "checkpoint": source.checkpoint,
        "source": {"task": args.task, **in_source},
        "target": {
            "task": args.target,
            "overrides": target_overrides,
            "perturbations": {k: getattr(args, k) for k in sim2sim.PERTURBATIONS if getattr(args, k) is not None},
            **in_target,
        },
        "mapping": {
            "control_period_s": source_interface.dt,
            "source": sim2sim.describe(source_interface),
            "target": sim2sim.describe(target_interface),
        },
    }
    name = result_name(args, source.checkpoint, user_overrides)
    output = args.output or os.path.join(os.path.dirname(source.checkpoint), "sim2sim", name)
    files.write_text_atomic(output, json.dumps(result, indent=2) + "\n")
    print(table(result))
    print(f"[robolab] sim2sim: {output}")
    return result


def result_name(args: argparse.Namespace, checkpoint_path: str, overrides: list[str]) -> str:
    """The default JSON file name: the checkpoint, the target, and whatever else differs from the defaults (the
    target's overrides, perturbations, seed, env count, steps), so two different judgements never share a file.
    Characters a file name should not hold become ``_``; a name over 150 characters ends in a hash of the whole."""
    defaults = build_parser()
    parts = [os.path.splitext(os.path.basename(checkpoint_path))[0], args.target, *overrides]
    parts += [f"{k}={getattr(args, k)}" for k in sim2sim.PERTURBATIONS if getattr(args, k) is not None]
    parts += [
        f"{k}={getattr(args, k)}" for k in ("seed", "num_envs", "steps") if getattr(args, k) != defaults.get_default(k)
    ]
    if args.task != defaults.get_default("task"):
        parts.insert(1, f"from_{args.task}")
    name = re.sub(r"[^A-Za-z0-9._=+-]+", "_", "_".join(parts))
    if len(name) > 150:
        name = f"{name[:140]}_{hashlib.sha1(name.encode()).hexdigest()[:8]}"
    return f"{name}.json"


def recorded(env, args: argparse.Namespace, task: str, directory: str, closer: contextlib.ExitStack):
    """The env recording its first ``--video_length`` steps (a kind with its own recorder records through it)."""
    if not args.video or tasks.kind_of(task).own_video_recorder:
        return env
    from robolab.video import TrainingVideo

    recorder = TrainingVideo(env, directory, args.video_length, interval=10**9)
    closer.callback(recorder.finish)
    return recorder


def table(result: dict) -> str:
    """The comparison as a text table: tracking error, fall rate and gait scores of both sides."""
    rows = [("", "tracking error (m/s)", "fall rate", *(f"{g} score" for g in result["source"]["gait_scores"]))]
    for side in ("source", "target"):
        r = result[side]
        rows.append(
            (
                f"{side}: {r['task']} {' '.join(r.get('overrides', []))}".strip(),
                f"{r['lin_vel_tracking_error']:.3f}",
                f"{r['fall_rate']:.3f}",
                *(f"{v:.3f}" for v in r["gait_scores"].values()),
            )
        )
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return "\n".join("  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)) for row in rows)


def main(argv: list[str] | None = None) -> int:
    """``robolab-sim2sim``: the exit status, with bad input reported in one line."""
    # RuntimeError too: a missing OpenGL backend for --video is reported that way (robolab.video.check_renderer).
    return one_line_errors(lambda: run(argv), extra=(RuntimeError,))


if __name__ == "__main__":
    sys.exit(main())
