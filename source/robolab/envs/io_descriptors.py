"""What a deployment (or another simulator) must feed a policy and do with its actions, read from the term tables.

``--export_io_descriptors`` writes it to ``params/io_descriptors.yaml``; Sim2Sim maps one env's policy interface
onto another's from it. A term a user adds to a group appears here with no other edit.
"""

from __future__ import annotations


def io_descriptors(env) -> dict:
    """Every observation group's terms in order (width, noise, clip, scale, history), the action's joints, scale and
    offsets, the PD gains and the control rate."""
    groups, robot, cfg = env.observation_groups, env.cfg.robot, env.cfg
    observations = {}
    for name, widths in groups.widths.items():
        group = groups.group_cfg(name)
        terms = []
        for bound, width in zip(groups.terms(name), widths):
            term = bound.cfg
            entry = {
                "name": bound.name,
                "func": term.func if isinstance(term.func, str) else getattr(term.func, "__name__", repr(term.func)),
                "shape": [int(width)],
                "noise_half_width": float(term.noise) if group.enable_corruption else 0.0,
                "scale": float(term.scale),
            }
            if term.clip is not None:
                entry["clip"] = [float(v) for v in term.clip]
            if term.history_length > 1:
                entry["history_length"] = int(term.history_length)
            terms.append(entry)
        observations[name] = {"terms": terms, "history": group.history_length}
    stiffness, damping = robot.gains()
    return {
        "observations": observations,
        "actions": {
            "type": "joint_position",
            "joint_names": list(robot.joint_names),
            "scale": float(cfg.action_scale),
            "offset": [float(v) for v in robot.default_joint_pos],
        },
        "articulation": {
            "joint_names": list(robot.joint_names),
            # One number when every joint has the same gain (the form a deployment reads for a quadruped).
            "stiffness": _one_or_each(stiffness),
            "damping": _one_or_each(damping),
            "torque_limits": [float(v) for v in robot.torque_limits],
            # The simulated motors: explicit models by group (a DC motor's no-load speed ...); none: MuJoCo's servos.
            "actuators": {
                name: {"joints": [robot.joint_names[i] for i in ids], **_actuator_settings(robot.actuators[name])}
                for name, ids in env.robot.actuator_groups.items()
            },
        },
        "scene": {"physics_dt": float(cfg.sim_dt), "decimation": int(cfg.decimation), "dt": env.step_dt},
    }


def _actuator_settings(cfg) -> dict:
    """What a deployment or another simulator needs to know of an explicit actuator model."""
    if cfg.model == "dc_motor":
        return {"model": cfg.model, "saturation_effort": cfg.saturation_effort, "velocity_limit": cfg.velocity_limit}
    if cfg.model == "network":
        return {"model": cfg.model, "network_path": cfg.network_path, "input_idx": list(cfg.input_idx)}
    return {"model": cfg.model}


def _one_or_each(values: list[float]) -> float | list[float]:
    return values[0] if values and all(v == values[0] for v in values) else values
