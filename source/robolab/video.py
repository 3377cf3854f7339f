"""Videos of the embedded MuJoCo tasks: frames of env 0 from MuJoCo's offscreen renderer, written with imageio.

``TrainingVideo`` records during training the way Isaac Lab's ``--video`` does: a clip of ``length`` env steps
every ``interval`` env steps, each clip ``<dir>/rl-video-step-<step>.mp4``. A clip is written under a temporary
name and renamed when complete, so whoever watches the directory (rsl_rl's wandb writer uploads every ``*.mp4``
it finds in the run) never sees half a file.
"""

from __future__ import annotations

import os

import numpy as np


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
        from robolab.errors import first_line

        raise RuntimeError(
            f"--video: no OpenGL backend for MuJoCo's offscreen renderer with MUJOCO_GL={os.environ['MUJOCO_GL']} "
            f"({type(err).__name__}: {first_line(err)}); "
            "use MUJOCO_GL=egl (GPU driver or Mesa's libegl-mesa0) or MUJOCO_GL=osmesa (libosmesa6)"
        ) from None


class FrameRenderer:
    """RGB frames of one env of a batch, the camera following its base."""

    def __init__(self, env, env_id: int = 0, height: int = 480, width: int = 640):
        import mujoco

        self.env, self.env_id = env, env_id
        model, _ = env.backend.render_data(env_id)
        self.renderer = mujoco.Renderer(model, height=height, width=width)
        self.camera = mujoco.MjvCamera()
        self.camera.distance, self.camera.elevation, self.camera.azimuth = 1.5, -20.0, 135.0

    def frame(self) -> np.ndarray:
        _, data = self.env.backend.render_data(self.env_id)
        self.camera.lookat[:] = data.qpos[:3]
        self.renderer.update_scene(data, self.camera)
        return self.renderer.render()

    def close(self) -> None:
        self.renderer.close()


class ClipWriter:
    """One mp4 file, visible under its name only once closed."""

    def __init__(self, path: str, fps: int):
        import imageio.v2 as imageio

        os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
        # Hidden until complete: watchers of the run (rsl_rl's W&B upload) skip names starting with a dot.
        self.path = path
        self.partial = os.path.join(os.path.dirname(path), f".{os.path.basename(path)}.partial.mp4")
        self.writer = imageio.get_writer(self.partial, fps=fps, macro_block_size=1)

    def append(self, frame: np.ndarray) -> None:
        self.writer.append_data(frame)

    def close(self) -> str:
        self.writer.close()
        os.replace(self.partial, self.path)
        return self.path


class TrainingVideo:
    """The env as the runner sees it, recording env 0 every ``interval`` steps for ``length`` steps.

    Everything else (attributes read and set, methods) goes to the wrapped env, so a runner cannot tell the
    difference. Only rank 0 wraps its env.
    """

    _OWN = frozenset({"env", "directory", "length", "interval", "step_count", "_renderer", "_clip", "_clip_frames"})

    def __init__(self, env, directory: str, length: int, interval: int):
        if length <= 0 or interval <= 0:
            raise ValueError(f"--video_length={length}, --video_interval={interval}: both must be positive integers")
        self.env, self.directory, self.length, self.interval = env, directory, length, interval
        self.step_count = 0
        self._renderer: FrameRenderer | None = None
        self._clip: ClipWriter | None = None
        self._clip_frames = 0

    def __getattr__(self, name: str):
        return getattr(self.env, name)

    def __setattr__(self, name: str, value) -> None:
        if name in self._OWN:
            object.__setattr__(self, name, value)
        else:
            setattr(self.env, name, value)

    def step(self, actions):
        result = self.env.step(actions)
        if self._clip is None and self.step_count % self.interval == 0:
            if self._renderer is None:
                self._renderer = FrameRenderer(self.env)
            path = os.path.join(self.directory, f"rl-video-step-{self.step_count}.mp4")
            self._clip, self._clip_frames = ClipWriter(path, fps=round(1.0 / self.env.step_dt)), 0
        if self._clip is not None:
            assert self._renderer is not None
            self._clip.append(self._renderer.frame())
            self._clip_frames += 1
            if self._clip_frames >= self.length:
                print(f"[robolab] video: {self._clip.close()}")
                self._clip = None
        self.step_count += 1
        return result

    def finish(self) -> None:
        """End recording (the env itself is closed by whoever opened it)."""
        if self._clip is not None:  # a clip cut short by the end of training is still a playable file
            print(f"[robolab] video: {self._clip.close()}")
            self._clip = None
        if self._renderer is not None:
            self._renderer.close()
            self._renderer = None


def record_policy(env, policy, path: str, frames: int) -> str:
    """``frames`` steps of ``policy`` in ``env``, env 0 rendered into the clip ``path``."""
    import torch

    renderer, clip = FrameRenderer(env), ClipWriter(path, fps=round(1.0 / env.step_dt))
    obs = env.get_observations()
    with torch.inference_mode():
        for _ in range(frames):
            obs, *_ = env.step(policy(obs))
            clip.append(renderer.frame())
    renderer.close()
    return clip.close()
