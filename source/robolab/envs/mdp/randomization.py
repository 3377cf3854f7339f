"""Startup events that draw the robot's physics, one draw per physics variant (``env.backend.num_variants``; one
variant per env with ``env.backend.num_variants=null``), on both embedded backends: what differs between the
simulator and a robot (legged_gym's and Isaac Lab's domain randomisation, mjlab's and holosoma's actuator terms).

Each writes model arrays through ``env.backend.set_model_field`` from the robot's nominal values, so two events never
compound (a second draw replaces the first), and records what it drew per env in ``env.physics_params`` for the
``physics_param`` observation (the critic's, a teacher's). A range of ``(1, 1)`` (scales) or ``(0, 0)`` (offsets)
leaves that part nominal. Draws come from the env's seeded generator: the same seed draws the same robots.
"""

from __future__ import annotations

import mujoco
import numpy as np
import torch

from robolab.envs.mdp.rewards import joint_ids
from robolab.envs.terms import check_range
from robolab.names import matching_names


def randomize_actuators(
    env,
    mask: torch.Tensor,
    kp_scale: tuple[float, float] = (1.0, 1.0),
    kd_scale: tuple[float, float] = (1.0, 1.0),
    strength_scale: tuple[float, float] = (1.0, 1.0),
    effort_scale: tuple[float, float] = (1.0, 1.0),
    joints: list[str] | None = None,
) -> None:
    """Startup: per variant and joint, the PD gains scaled (``kp_scale``, ``kd_scale``: Isaac Lab's
    ``randomize_actuator_gains``), the motor's strength scaled (the whole torque, its limit included: legged_gym's
    motor strength) and the torque limit alone scaled (``effort_scale``). The joint's torque is then
    ``strength * clip(kp' (target - q) - kd' qdot, +-effort * limit)``: on a servo through its model arrays, on a
    joint an explicit actuator model drives (``env.robot.actuators``) through that model's scales (a DC motor's
    torque-speed line, a network's output, alike). Recorded per env and joint as ``kp_scale``, ``kd_scale``,
    ``strength_scale``, ``effort_scale`` (only those whose range is not ``(1, 1)``)."""
    ranges = {
        "kp_scale": check_range("kp_scale", kp_scale, low_bound=0.0),
        "kd_scale": check_range("kd_scale", kd_scale, low_bound=0.0),
        "strength_scale": check_range("strength_scale", strength_scale, low_bound=0.0),
        "effort_scale": check_range("effort_scale", effort_scale, low_bound=0.0),
    }
    ids = _joint_index(env, joints)
    draws = {name: env.uniform(*bounds, env.backend.num_variants, len(ids)).cpu() for name, bounds in ranges.items()}
    explicit = env.explicit_actuators
    by_model = np.isin(ids, explicit.joints) if explicit is not None else np.zeros(len(ids), dtype=bool)
    if (~by_model).any():
        _scale_servos(env, ids[~by_model], {name: value[:, ~by_model] for name, value in draws.items()})
    if by_model.any():
        assert explicit is not None
        gains = [name for name in ("kp_scale", "kd_scale") if ranges[name] != (1.0, 1.0)]
        networks = [env.cfg.robot.joint_names[i] for i in ids[by_model] if explicit.model_of(i) == "network"]
        if gains and networks:
            raise ValueError(
                f"randomize_actuators: {' and '.join(gains)} cannot scale the network-driven joints "
                f"{networks} (a network has no gains): leave them out with `joints`"
            )
        for name, value in draws.items():
            explicit.set_scale(name, ids[by_model], env.backend.per_env(value[:, by_model]))
    _record(env, draws, ranges, neutral=1.0)


def _scale_servos(env, ids: np.ndarray, draws: dict[str, torch.Tensor]) -> None:
    """``randomize_actuators``' draws (per variant, per joint of ``ids``) written into the servos' model arrays."""
    robot = env.robot
    acts = robot.actuator_ids[ids]
    model = robot.model
    servo = (model.actuator_gaintype[acts] == mujoco.mjtGain.mjGAIN_FIXED) & (
        model.actuator_biastype[acts] == mujoco.mjtBias.mjBIAS_AFFINE
    )
    if not servo.all():
        names = [env.cfg.robot.joint_names[i] for i in ids[~servo]]
        raise ValueError(
            f"randomize_actuators: joints {names} are not driven by position servos (gain kp, bias -kp q -kd qdot)"
        )
    variants = env.backend.num_variants
    kp = draws["kp_scale"] * draws["strength_scale"]
    kd = draws["kd_scale"] * draws["strength_scale"]
    gain = _nominal(model.actuator_gainprm, acts, variants)
    bias = _nominal(model.actuator_biasprm, acts, variants)
    force = _nominal(model.actuator_forcerange, acts, variants)
    gain[:, :, 0] *= kp
    bias[:, :, 1] *= kp
    bias[:, :, 2] *= kd
    force *= (draws["strength_scale"] * draws["effort_scale"])[:, :, None]
    env.backend.set_model_field("actuator_gainprm", acts, gain)
    env.backend.set_model_field("actuator_biasprm", acts, bias)
    env.backend.set_model_field("actuator_forcerange", acts, force)


def randomize_joint_dynamics(
    env,
    mask: torch.Tensor,
    friction_range: tuple[float, float] = (0.0, 0.0),
    damping_range: tuple[float, float] = (0.0, 0.0),
    armature_scale: tuple[float, float] = (1.0, 1.0),
    joints: list[str] | None = None,
) -> None:
    """Startup: per variant and joint, dry friction (N m) and viscous damping (N m s/rad) added to the model's, and
    the reflected rotor inertia (armature) scaled. Recorded per env and joint as ``joint_friction``,
    ``joint_damping``, ``armature_scale`` (those whose range is not neutral)."""
    added = {
        "joint_friction": check_range("friction_range", friction_range, low_bound=0.0),
        "joint_damping": check_range("damping_range", damping_range, low_bound=0.0),
    }
    scale = check_range("armature_scale", armature_scale, low_bound=0.0)
    robot, ids = env.robot, _joint_index(env, joints)
    dofs, variants = robot.dof_adr[ids], env.backend.num_variants
    draws = {name: env.uniform(*bounds, variants, len(ids)).cpu() for name, bounds in added.items()}
    draws["armature_scale"] = env.uniform(*scale, variants, len(ids)).cpu()
    model = robot.model
    env.backend.set_model_field(
        "dof_frictionloss", dofs, _nominal(model.dof_frictionloss, dofs, variants) + draws["joint_friction"]
    )
    env.backend.set_model_field(
        "dof_damping", dofs, _nominal(model.dof_damping, dofs, variants) + draws["joint_damping"]
    )
    env.backend.set_model_field(
        "dof_armature", dofs, _nominal(model.dof_armature, dofs, variants) * draws["armature_scale"]
    )
    _record(env, {k: draws[k] for k in added}, added, neutral=0.0)
    _record(env, {"armature_scale": draws["armature_scale"]}, {"armature_scale": scale}, neutral=1.0)


def randomize_base_com(
    env,
    mask: torch.Tensor,
    x_range: tuple[float, float] = (0.0, 0.0),
    y_range: tuple[float, float] = (0.0, 0.0),
    z_range: tuple[float, float] = (0.0, 0.0),
) -> None:
    """Startup: the base body's centre of mass moved by an offset (m, base frame) per variant (Isaac Lab's
    ``randomize_rigid_body_com`` on the base); recorded per env as ``base_com_offset`` (x, y, z)."""
    bounds = [
        check_range(key, value) for key, value in (("x_range", x_range), ("y_range", y_range), ("z_range", z_range))
    ]
    variants, base = env.backend.num_variants, env.robot.base_body_id
    offset = torch.stack([env.uniform(low, high, variants).cpu() for low, high in bounds], dim=1)
    rows = np.array([base])
    env.backend.set_model_field(
        "body_ipos", rows, _nominal(env.robot.model.body_ipos, rows, variants) + offset[:, None]
    )
    env.physics_params["base_com_offset"] = env.backend.per_env(offset)


def randomize_link_masses(
    env, mask: torch.Tensor, scale_range: tuple[float, float], bodies: list[str] | None = None
) -> None:
    """Startup: the mass and rotational inertia of each of the robot's bodies but its base (``randomize_base_mass``
    adds to the base) scaled together per variant, or of the bodies whose names fully match ``bodies``; recorded per
    env and body as ``link_mass_scale``."""
    low, high = check_range("scale_range", scale_range)
    if low <= 0:
        raise ValueError(f"scale_range={[low, high]}: the low end must be > 0 (a body needs mass)")
    rows = _body_index(env, bodies)
    variants, model = env.backend.num_variants, env.robot.model
    scale = env.uniform(low, high, variants, len(rows)).cpu()
    env.backend.set_model_field("body_mass", rows, _nominal(model.body_mass, rows, variants) * scale)
    env.backend.set_model_field("body_inertia", rows, _nominal(model.body_inertia, rows, variants) * scale[:, :, None])
    env.physics_params["link_mass_scale"] = env.backend.per_env(scale)


def _joint_index(env, joints: list[str] | None) -> np.ndarray:
    ids = joint_ids(env, joints or [".*"])
    return ids.cpu().numpy()


def _body_index(env, bodies: list[str] | None) -> np.ndarray:
    """The robot's body ids (its subtree under the base, the base itself excluded unless named)."""
    model, base = env.robot.model, env.robot.base_body_id
    subtree = [b for b in range(model.nbody) if b != base and _descends(model, b, base)]
    if bodies is None:
        return np.array(subtree, dtype=np.int64)
    ids = [base, *subtree]
    chosen = matching_names([model.body(b).name for b in ids], bodies, "bodies", "the robot's bodies")
    return np.array([ids[i] for i in chosen], dtype=np.int64)


def _descends(model, body: int, ancestor: int) -> bool:
    while body > 0:
        if body == ancestor:
            return True
        body = int(model.body_parentid[body])
    return False


def _nominal(field: np.ndarray, rows: np.ndarray, variants: int) -> torch.Tensor:
    """The model's nominal rows of ``field``, one copy per variant (float32)."""
    values = torch.as_tensor(np.asarray(field[rows]), dtype=torch.float32)
    return values.expand(variants, *values.shape).clone()


def _record(env, draws: dict[str, torch.Tensor], ranges: dict[str, tuple[float, float]], neutral: float) -> None:
    """Per-env copies of the draws whose range is not the neutral ``(neutral, neutral)``."""
    for name, value in draws.items():
        if ranges[name] != (neutral, neutral):
            env.physics_params[name] = env.backend.per_env(value)
