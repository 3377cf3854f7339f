"""Physics backends behind one interface (``PhysicsBackend``)."""

from robolab.envs.backends.base import PhysicsBackend


def make_backend(cfg, robot, num_envs: int, device: str) -> PhysicsBackend:
    """Build the backend named by ``env.backend.name`` (``cfg`` is the env's ``BackendCfg``)."""
    name = cfg.name
    if name == "mujoco":
        from robolab.envs.backends.mujoco_backend import MujocoBackend

        return MujocoBackend(robot, num_envs, cfg.num_threads, device, cfg.num_variants)
    raise ValueError(f"env.backend.name={name!r} is not a known backend (allowed: 'mujoco')")


__all__ = ["PhysicsBackend", "make_backend"]
