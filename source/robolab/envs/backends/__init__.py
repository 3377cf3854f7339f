"""Physics backends behind one interface (``PhysicsBackend``)."""

import importlib.util
import warnings

from robolab.assets import RobotCfg, load_robot
from robolab.envs.backends.base import PhysicsBackend
from robolab.terrains.generator import TerrainMap

BACKENDS = ("mujoco", "warp")
AUTO = "auto"


def resolve_name(name: str, device: str) -> str:
    """``auto`` is MuJoCo Warp on a GPU (MuJoCo C when the warp extra is missing, with a warning) and MuJoCo C on
    the CPU; any other name is kept."""
    if name != AUTO:
        return name
    if not str(device).startswith("cuda"):
        return "mujoco"
    if importlib.util.find_spec("mujoco_warp") is None:
        warnings.warn(
            f"device={device!r}: the GPU physics backend (MuJoCo Warp) is not installed, so the physics runs on the "
            "CPU (env.backend=mujoco); pip install 'robolab[warp]'",
            stacklevel=2,
        )
        return "mujoco"
    return "warp"


def make_backend(
    cfg, robot_cfg: RobotCfg, sim_dt: float, num_envs: int, device: str, terrain: TerrainMap | None = None
) -> PhysicsBackend:
    """Build the backend named by ``env.backend.name`` (``cfg`` is the env's ``BackendCfg``) with its robot model,
    standing on ``terrain`` (a generated height field) or on the model's own floor."""
    name = resolve_name(cfg.name, device)
    if name == "mujoco":
        from robolab.envs.backends.mujoco_backend import MujocoBackend

        robot = load_robot(robot_cfg, timestep=sim_dt, terrain=terrain)
        return MujocoBackend(robot, num_envs, cfg.num_threads, device, cfg.num_variants)
    if name == "warp":
        try:
            from robolab.envs.backends.warp_backend import WarpBackend
        except ImportError as err:  # a user's choice without its extra: a one-line error, not a traceback
            message = f"env.backend.name='warp' needs MuJoCo Warp ({err}); pip install 'robolab[warp]'"
            raise ValueError(message) from None
        # The same sensor-equipped model as MuJoCo C's: MuJoCo Warp computes robolab's contact sensors itself.
        robot = load_robot(robot_cfg, timestep=sim_dt, terrain=terrain)
        return WarpBackend(
            robot,
            num_envs,
            device,
            cfg.num_variants,
            cfg.nconmax,
            cfg.njmax,
            compile_workers=cfg.compile_workers,
        )
    allowed = ", ".join(map(repr, (AUTO, *BACKENDS)))
    raise ValueError(f"env.backend.name={name!r} is not a known backend (allowed: {allowed})")


__all__ = ["AUTO", "BACKENDS", "PhysicsBackend", "make_backend", "resolve_name"]
