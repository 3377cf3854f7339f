"""Physics backends behind one interface (``PhysicsBackend``)."""

from robolab.assets import RobotCfg, load_robot
from robolab.envs.backends.base import PhysicsBackend

BACKENDS = ("mujoco", "mjx")


def make_backend(cfg, robot_cfg: RobotCfg, sim_dt: float, num_envs: int, device: str) -> PhysicsBackend:
    """Build the backend named by ``env.backend.name`` (``cfg`` is the env's ``BackendCfg``) with its robot model."""
    name = cfg.name
    if name == "mujoco":
        from robolab.envs.backends.mujoco_backend import MujocoBackend

        robot = load_robot(robot_cfg, timestep=sim_dt)
        return MujocoBackend(robot, num_envs, cfg.num_threads, device, cfg.num_variants)
    if name == "mjx":
        try:
            from robolab.envs.backends.mjx_backend import MjxBackend
        except ImportError as err:
            raise ImportError(
                f"env.backend.name='mjx' needs JAX and MuJoCo MJX ({err}); pip install 'robolab[mjx]'"
            ) from None
        # MJX has no body-matched contact sensors: the backend computes contact forces from its own data.
        robot = load_robot(robot_cfg, timestep=sim_dt, sensors=False)
        return MjxBackend(robot, num_envs, device, cfg.num_variants)
    raise ValueError(f"env.backend.name={name!r} is not a known backend (allowed: {', '.join(map(repr, BACKENDS))})")


__all__ = ["BACKENDS", "PhysicsBackend", "make_backend"]
