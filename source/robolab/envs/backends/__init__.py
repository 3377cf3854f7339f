"""Physics backends behind one interface (``PhysicsBackend``)."""

from robolab.envs.backends.base import PhysicsBackend


def make_backend(name: str, robot, num_envs: int, device: str, num_threads: int | None) -> PhysicsBackend:
    """Build the backend named by ``env.backend.name``."""
    if name == "mujoco":
        from robolab.envs.backends.mujoco_backend import MujocoBackend

        return MujocoBackend(robot, num_envs, num_threads=num_threads, device=device)
    raise ValueError(f"env.backend.name={name!r} is not a known backend (allowed: 'mujoco')")


__all__ = ["PhysicsBackend", "make_backend"]
