"""Evaluating a trained policy: tracking error and falls over fresh episodes, and a rendered video."""

from __future__ import annotations

import os

import torch

from robolab import checkpoint

# Evaluation conditions: no observation noise and no pushes, one full episode per env.
EVAL_OVERRIDES = ["env.noise.enabled=false", "env.events.push_interval_s=[1e9,1e9]"]
# Isaac Lab tasks: Isaac Lab's own play settings (no observation noise, no pushes).
ISAACLAB_EVAL_OVERRIDES = ["env.observations.policy.enable_corruption=false", "env.events.push_robot=null"]


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

        model = mujoco.MjModel.from_xml_string(
            "<mujoco><worldbody><geom size='1 1 1' type='plane'/></worldbody></mujoco>"
        )
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


def export_policy(runner, export_dir: str) -> list[str]:
    """``policy.onnx`` (one self-contained file: rsl_rl's export may leave the weights in a ``.data`` sidecar,
    which a copy of the ``.onnx`` alone would lose) and ``policy.pt`` (TorchScript) in ``export_dir``."""
    import onnx

    onnx_path, jit_path = os.path.join(export_dir, "policy.onnx"), os.path.join(export_dir, "policy.pt")
    runner.export_policy_to_onnx(export_dir, "policy.onnx")
    model = onnx.load(onnx_path)  # reads any external data beside it

    def write(f) -> None:
        f.write(model.SerializeToString())

    checkpoint.atomic_write(onnx_path, write)
    sidecar = onnx_path + ".data"
    if os.path.exists(sidecar):
        os.remove(sidecar)
    runner.export_policy_to_jit(export_dir, "policy.pt")
    return [onnx_path, jit_path]
