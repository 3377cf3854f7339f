"""``scripts/play.py``: run a trained policy, report tracking error and fall rate, export ONNX and TorchScript."""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys

import torch

from robolab import checkpoint, tasks
from robolab.cli.train import embedded_env_cfg, open_env
from robolab.config import ConfigError, agent_dict, compose

# Evaluation conditions: no observation noise and no pushes, one full episode per env.
EVAL_OVERRIDES = ["env.noise.enabled=false", "env.events.push_interval_s=[1e9,1e9]"]
# Isaac Lab tasks: Isaac Lab's own play settings (no observation noise, no pushes).
ISAACLAB_EVAL_OVERRIDES = ["env.observations.policy.enable_corruption=false", "env.events.push_robot=null"]


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description="Evaluate and export a trained policy. Unknown arguments are Hydra overrides.")
    p.add_argument("--task", default="RoboLab-Velocity-Flat-Go2-v0")
    source = p.add_mutually_exclusive_group()
    source.add_argument("--checkpoint", default=None, help="a model_<it>.pt file")
    source.add_argument("--run", default=None, help="a run directory (its newest checkpoint is used)")
    p.add_argument("--log_root", default=os.path.join("logs", "robolab"), help="where to look for the newest run")
    p.add_argument("--num_envs", type=int, default=64)
    p.add_argument("--steps", type=int, default=None, help="control steps to run (default: one episode)")
    p.add_argument("--seed", type=int, default=None)
    p.add_argument("--device", default="cpu")
    p.add_argument("--video", action="store_true", help="render env 0 to <run>/videos/play.mp4 (needs an OpenGL backend)")
    p.add_argument("--video_length", type=int, default=250, help="frames to record")
    p.add_argument("--no_export", action="store_true", help="skip writing exported/policy.onnx and policy.pt")
    return p


def resolve_checkpoint(args: argparse.Namespace, experiment: str) -> str:
    if args.checkpoint:
        if not os.path.isfile(args.checkpoint):
            raise FileNotFoundError(f"--checkpoint={args.checkpoint!r}: no such file")
        return args.checkpoint
    run_dir = args.run or checkpoint.latest_run(os.path.join(args.log_root, experiment))
    found = checkpoint.latest_checkpoint(run_dir) if run_dir else None
    if found is None:
        where = args.run or os.path.join(args.log_root, experiment)
        raise FileNotFoundError(f"no checkpoint found in {where!r} (train first, or pass --checkpoint)")
    return found


def tracking_error(env) -> torch.Tensor:
    """Per-env horizontal velocity tracking error (m/s) of the state the last step reached."""
    if hasattr(env, "last_tracking_error"):  # the embedded env keeps it from before its resets
        return env.last_tracking_error.clone()
    # An Isaac Lab env has already reset terminated envs here: their first-state error is counted instead.
    base_env = env.unwrapped
    lin_vel = base_env.scene["robot"].data.root_lin_vel_b.torch[:, :2]
    command = base_env.command_manager.get_command("base_velocity")[:, :2]
    return torch.linalg.norm(lin_vel - command, dim=-1)


def evaluate(env, policy, steps: int) -> dict:
    """Roll out the deterministic policy; tracking error over all env steps, falls per env."""
    obs = env.get_observations()
    fell = torch.zeros(env.num_envs, dtype=torch.bool, device=env.device)
    errors = []
    with torch.inference_mode():
        for _ in range(steps):
            obs, _, dones, extras = env.step(policy(obs))
            # The error of the state just reached, before any reset of this step overwrote it.
            errors.append(tracking_error(env))
            fell |= dones.bool() & ~extras["time_outs"].bool()
    return {
        "num_envs": env.num_envs,
        "steps": steps,
        "lin_vel_tracking_error": float(torch.stack(errors).mean()),
        "fall_rate": float(fell.float().mean()),
    }


def check_renderer() -> None:
    """Fail before any work when frames cannot be rendered or written, saying what to install or set."""
    # MuJoCo picks its GL backend when first imported; EGL renders headless (on a GPU, or Mesa on the CPU).
    os.environ.setdefault("MUJOCO_GL", "egl")
    try:
        import imageio.v2  # noqa: F401
        import imageio_ffmpeg  # noqa: F401
    except ImportError:
        raise RuntimeError("--video needs imageio with ffmpeg: pip install 'imageio[ffmpeg]'") from None
    try:
        import mujoco

        model = mujoco.MjModel.from_xml_string("<mujoco><worldbody><geom size='1 1 1' type='plane'/></worldbody></mujoco>")
        mujoco.Renderer(model, height=8, width=8).close()
    except Exception as err:  # the GL stack raises anything from ImportError to AttributeError
        raise RuntimeError(
            f"--video: no OpenGL backend for MuJoCo's offscreen renderer with MUJOCO_GL={os.environ['MUJOCO_GL']} "
            f"({type(err).__name__}: {str(err).splitlines()[0] if str(err) else ''}); "
            "use MUJOCO_GL=egl (GPU driver or Mesa's libegl-mesa0) or MUJOCO_GL=osmesa (libosmesa6)"
        ) from None


def record_video(env, policy, path: str, frames: int) -> str:
    import imageio.v2 as imageio
    import mujoco

    model, data = env.backend.render_data(0)
    renderer = mujoco.Renderer(model, height=480, width=640)
    camera = mujoco.MjvCamera()
    camera.distance, camera.elevation, camera.azimuth = 1.5, -20.0, 135.0
    os.makedirs(os.path.dirname(path), exist_ok=True)
    obs = env.get_observations()
    with imageio.get_writer(path, fps=round(1.0 / env.step_dt)) as writer, torch.inference_mode():
        for _ in range(frames):
            obs, *_ = env.step(policy(obs))
            model, data = env.backend.render_data(0)
            camera.lookat[:] = data.qpos[:3]
            renderer.update_scene(data, camera)
            writer.append_data(renderer.render())
    renderer.close()
    return path


def play(argv: list[str] | None = None) -> dict:
    args, overrides = build_parser().parse_known_args(argv)
    if args.num_envs <= 0:
        raise ConfigError(f"--num_envs={args.num_envs}: must be a positive integer")
    isaaclab_task = tasks.is_isaaclab_task(args.task)
    if args.video and isaaclab_task:
        raise ConfigError(f"--video: renders the embedded MuJoCo tasks only, not {args.task}")
    if args.video:
        check_renderer()
    extra = [f"env.num_envs={args.num_envs}"] + ([f"seed={args.seed}"] if args.seed is not None else [])
    cfg = compose(args.task, (ISAACLAB_EVAL_OVERRIDES if isaaclab_task else EVAL_OVERRIDES) + extra + overrides)
    agent = agent_dict(cfg)
    ckpt = resolve_checkpoint(args, agent["experiment_name"])

    from rsl_rl.utils import resolve_callable

    closer = contextlib.ExitStack()
    env_cfg = embedded_env_cfg(args.task, cfg.env, int(cfg.seed), args.device)
    env, _ = open_env(args.task, env_cfg, cfg.env, args.device, int(cfg.seed), closer)
    runner = resolve_callable(agent["runner_class_name"])(env, agent, log_dir=None, device=args.device)
    runner.load(ckpt, map_location=args.device)
    policy = runner.get_inference_policy(device=args.device)

    result = {"checkpoint": os.path.abspath(ckpt)}
    if not args.no_export:
        export_dir = os.path.join(os.path.dirname(os.path.abspath(ckpt)), "exported")
        runner.export_policy_to_onnx(export_dir, "policy.onnx")
        runner.export_policy_to_jit(export_dir, "policy.pt")
        result["exported"] = [os.path.join(export_dir, "policy.onnx"), os.path.join(export_dir, "policy.pt")]
    result.update(evaluate(env, policy, args.steps or int(env.max_episode_length)))
    if args.video:
        video = os.path.join(os.path.dirname(os.path.abspath(ckpt)), "videos", "play.mp4")
        result["video"] = record_video(env, policy, video, args.video_length)
    closer.close()
    print(json.dumps(result, indent=2))
    return result


def main(argv: list[str] | None = None) -> int:
    try:
        play(argv)
    except (ConfigError, FileNotFoundError, ValueError, RuntimeError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    return 0
