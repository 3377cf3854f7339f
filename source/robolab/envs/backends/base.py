"""The physics-backend interface the velocity MDP is written against.

A backend owns ``num_envs`` copies of one robot model and advances them together. Everything it hands
back is a torch tensor on ``device`` (float32), so the MDP never sees numpy, JAX or MuJoCo structs and a
GPU backend can replace the CPU one without touching the MDP.
"""

from __future__ import annotations

import contextlib
from abc import ABC, abstractmethod
from typing import ClassVar

import numpy as np
import torch

from robolab.assets import RobotModel

RANDOMISED_FIELDS = (
    "geom_friction",
    "body_mass",
    "body_inertia",
    "body_ipos",
    "dof_frictionloss",
    "dof_damping",
    "dof_armature",
    "actuator_gainprm",
    "actuator_biasprm",
    "actuator_forcerange",
)
"""The ``MjModel`` arrays events may set per physics variant (``set_model_field``): MuJoCo Warp keeps a copy of each
per world."""


def check_field(name: str) -> None:
    """Refuse a model field that cannot be randomised per variant, naming those that can."""
    if name not in RANDOMISED_FIELDS:
        raise ValueError(f"model field {name!r} cannot be set per variant; these can: {', '.join(RANDOMISED_FIELDS)}")


def variant_blocks(num_envs: int, num_variants: int | None) -> tuple[int, np.ndarray]:
    """How many physics variants there are and which one each env simulates (contiguous blocks of envs).

    Consecutive envs share a variant, like Isaac Lab's material buckets; ``None`` means one variant per env.
    """
    if num_variants is not None and num_variants <= 0:
        raise ValueError(f"env.backend.num_variants={num_variants}: must be positive (or null: one per env)")
    count = num_envs if num_variants is None else min(num_variants, num_envs)
    return count, np.arange(num_envs) * count // num_envs


def contact_sensor_adr(robot: RobotModel) -> np.ndarray:
    """Sensordata addresses of every contact sensor: the feet's, the undesired bodies', the termination bodies'."""
    return np.concatenate([robot.foot_sensor_adr, robot.undesired_sensor_adr, robot.termination_sensor_adr])


def contact_groups(robot: RobotModel) -> dict[str, slice]:
    """Each contact group's columns among ``contact_sensor_adr``'s sensors."""
    bounds = np.cumsum([0, len(robot.foot_sensor_adr), len(robot.undesired_sensor_adr)])
    total = len(contact_sensor_adr(robot))
    return {
        "foot": slice(int(bounds[0]), int(bounds[1])),
        "undesired": slice(int(bounds[1]), int(bounds[2])),
        "termination": slice(int(bounds[2]), total),
    }


class PhysicsBackend(ABC):
    """The physics a ``VelocityEnv`` steps: batched state as torch tensors, contact forces per body group, resets
    and model fields per variant. ``MujocoBackend`` and ``WarpBackend`` implement it."""

    num_envs: int
    device: torch.device
    robot: RobotModel
    variant_of_env: torch.Tensor
    """(num_envs,) index of the physics variant (randomised friction and mass) each env simulates."""
    num_variants: int

    def captured(self) -> contextlib.AbstractContextManager:
        """While torch captures the env's step into a CUDA graph (``env.cuda_graph``): the physics launches its work
        onto torch's capturing stream."""
        raise NotImplementedError(f"{type(self).__name__} cannot run inside a CUDA graph (env.cuda_graph=false)")

    @abstractmethod
    def step(self, controls: torch.Tensor, decimation: int, first_substep: bool = True) -> None:
        """Hold ``controls`` (num_envs, num_joints; policy order) for ``decimation`` physics steps: a servo's PD target,
        the torque of a joint an explicit actuator model drives.

        ``first_substep=False`` continues the control step the last call began (an explicit actuator's loop steps
        one physics step at a time): the contact-force peaks, the non-finite flags and the overflows then cover
        every physics step since that call, as they cover the steps of one call."""

    @property
    @abstractmethod
    def qpos(self) -> torch.Tensor:
        """Generalised positions (num_envs, nq): base position, base quaternion (w, x, y, z), joints."""

    @property
    @abstractmethod
    def qvel(self) -> torch.Tensor:
        """Generalised velocities (num_envs, nv): base linear (world), base angular (body), joints."""

    @abstractmethod
    def contact_forces(self, group: str) -> torch.Tensor:
        """Peak contact-force norm over the last control step, (num_envs, bodies in group).

        ``group`` is ``"foot"``, ``"undesired"`` or ``"termination"`` (the bodies named in ``RobotCfg``).
        """

    @abstractmethod
    def contact_force_vectors(self, group: str) -> torch.Tensor:
        """Net contact force on each body of ``group`` at the last physics step, world frame (num_envs, bodies, 3)."""

    overflow_settings: ClassVar[dict[int, str]] = {}
    """Overflow bit -> the setting that sizes that buffer; empty for a backend whose buffers grow as needed."""

    @property
    def overflow_flags(self) -> torch.Tensor:
        """(num_envs,) int bitmask of the buffers (``overflow_settings``' bits) that overflowed in each env during
        the last step: that env's physics left contacts or constraints out. Zero where nothing overflowed."""
        flags = getattr(self, "_no_overflow", None)
        if flags is None:
            flags = self._no_overflow = torch.zeros(self.num_envs, dtype=torch.int32, device=self.device)
        return flags

    def overflow_advice(self, bits: int) -> str:
        """What to raise after overflows of ``bits`` (one line)."""
        names = sorted({setting for flag, setting in self.overflow_settings.items() if bits & flag})
        return f"raise {' and '.join(names)}" if names else ""

    @property
    @abstractmethod
    def joint_torques(self) -> torch.Tensor:
        """Actuator torques at the last physics step (num_envs, num_joints; policy order)."""

    @property
    @abstractmethod
    def foot_positions(self) -> torch.Tensor:
        """Foot positions in the base frame at the last physics step (num_envs, feet, 3)."""

    @property
    @abstractmethod
    def foot_velocities(self) -> torch.Tensor:
        """Foot linear velocities in the world frame at the last physics step (num_envs, feet, 3)."""

    @property
    @abstractmethod
    def non_finite(self) -> torch.Tensor:
        """Bool mask (num_envs,) of envs whose state went non-finite during the last step."""

    @abstractmethod
    def reset(self, mask: torch.Tensor, qpos: torch.Tensor, qvel: torch.Tensor) -> None:
        """Set the state of the envs in ``mask`` (bool, num_envs) to their rows of ``qpos`` and ``qvel`` (num_envs
        rows each), and clear their sensor readings and non-finite flag.

        A mask with full-size rows, not a list of env ids: the MDP can then reset without asking the GPU which envs
        ended (a host synchronisation per step).
        """

    @abstractmethod
    def set_base_velocity(self, mask: torch.Tensor, lin_vel_xy: torch.Tensor) -> None:
        """Overwrite the world-frame horizontal base velocity of the envs in ``mask`` with their rows of
        ``lin_vel_xy`` (num_envs, 2) (pushes)."""

    @abstractmethod
    def set_model_field(self, name: str, rows: np.ndarray, values: torch.Tensor) -> None:
        """Overwrite the rows ``rows`` of the model array ``name`` (one of ``RANDOMISED_FIELDS``) with ``values``
        ``(num_variants, len(rows), *row_shape)`` (the field's row shape): one set of rows per physics variant; the
        envs of a variant simulate its values from their next physics step on."""

    def per_env(self, per_variant: torch.Tensor) -> torch.Tensor:
        """Rows of ``per_variant`` (num_variants, ...) repeated for the envs that simulate each variant, on the
        backend's device: (num_envs, ...)."""
        return per_variant.to(self.device)[self.variant_of_env]

    def set_friction(self, friction: torch.Tensor) -> None:
        """Set the sliding friction coefficient of every geom (ground and robot), one value per variant
        (num_variants,), or one per variant and geom (num_variants, ngeom)."""
        nominal = torch.as_tensor(self.robot.model.geom_friction, dtype=torch.float32)
        values = nominal.expand(self.num_variants, -1, -1).clone()
        friction = friction.cpu()
        values[:, :, 0] = friction[:, None] if friction.dim() == 1 else friction
        self.set_model_field("geom_friction", np.arange(self.robot.model.ngeom), values)

    def set_added_base_mass(self, added_mass: torch.Tensor) -> None:
        """Add ``added_mass`` kg to the nominal base mass, one value per variant."""
        base = self.robot.base_body_id
        nominal = float(self.robot.model.body_mass[base])
        self.set_model_field("body_mass", np.array([base]), (nominal + added_mass.cpu())[:, None])

    def cast_rays(self, origins: torch.Tensor, directions: torch.Tensor, max_distance: float) -> torch.Tensor:
        """Distance (m) along each ray to the first static geom it meets (``robolab.envs.backends.rays``: the
        terrain and the scene, never the robot), ``inf`` where none is within ``max_distance``; (num_envs, rays).

        ``origins`` is one point per env (num_envs, 3), ``directions`` unit vectors (num_envs, rays, 3), world
        frame: one origin per env is what MuJoCo C's ``mj_multiRay`` casts from, so both backends cast the same."""
        raise NotImplementedError(f"{type(self).__name__} casts no rays")

    def synchronize(self) -> None:
        """Wait for queued device work (timing); backends that step synchronously need not override."""

    def device_memory_bytes(self) -> int | None:
        """Peak accelerator memory the backend's own allocator used (outside torch's), if it has one."""
        return None

    def close(self) -> None:
        """Release threads and device memory."""
