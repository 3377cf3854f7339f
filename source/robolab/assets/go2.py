"""A Go2-class quadruped built in code with ``mujoco.MjSpec``.

Dimensions and masses follow Unitree's published Go2 figures (trunk 0.376 x 0.094 x 0.114 m, 6.9 kg;
hip offsets +-0.1934 m / +-0.0465 m; thigh and calf links 0.213 m; 15 kg in all). Collision geometry is
made of primitives and the feet are spheres, which is all a flat-ground velocity task needs. No model
file is copied from anywhere: this module is the model.
"""

from __future__ import annotations

import mujoco

from robolab.assets.loader import add_pd_actuator
from robolab.assets.robot_cfg import RobotCfg
from robolab.assets.scene import FOOT_CONTACT, add_floor, collision, set_options

LEGS = ("FL", "FR", "RL", "RR")
HIP_OFFSET = {"FL": (0.1934, 0.0465), "FR": (0.1934, -0.0465), "RL": (-0.1934, 0.0465), "RR": (-0.1934, -0.0465)}
THIGH_Y = 0.0955  # lateral offset hip -> thigh
LINK = 0.213  # thigh and calf length
FOOT_RADIUS = 0.022
HIP_RANGE = (-1.0472, 1.0472)
THIGH_RANGE = {"F": (-1.5708, 3.4907), "R": (-0.5236, 4.5379)}
CALF_RANGE = (-2.7227, -0.83776)


def build_go2_spec(cfg: RobotCfg) -> mujoco.MjSpec:
    """Return the robot on a flat floor, with PD actuators, contact sensors, an IMU site and a home key."""
    spec = mujoco.MjSpec()
    spec.modelname = "robolab_go2"
    set_options(spec)
    add_floor(spec)

    base = spec.worldbody.add_body(name="base", pos=[0, 0, cfg.init_base_height])
    base.add_freejoint(name="root")
    base.add_geom(type=mujoco.mjtGeom.mjGEOM_BOX, size=[0.1881, 0.04675, 0.057], mass=6.921, rgba=[0.2, 0.2, 0.25, 1])
    base.add_geom(
        type=mujoco.mjtGeom.mjGEOM_SPHERE, size=[0.05], pos=[0.285, 0, 0.01], mass=0.0, rgba=[0.2, 0.2, 0.25, 1]
    )
    base.add_site(name="imu", pos=[-0.02557, 0, 0.04232])

    for leg in LEGS:
        _add_leg(base, leg)

    # By joint name: cfg.joint_names may list the joints in any order (it is the policy's order, not the model's).
    ranges = _joint_ranges()
    unknown = [joint for joint in cfg.joint_names if joint not in ranges]
    if unknown:
        raise ValueError(f"env.robot.joint_names: joint {unknown[0]!r} is not in the model (it has: {sorted(ranges)})")
    # (lengths that do not match are named by the loader's checks)
    for joint, limit, kp, kd in zip(cfg.joint_names, cfg.torque_limits, *cfg.gains()):
        add_pd_actuator(spec, joint, kp, kd, limit, ranges[joint])

    default = dict(zip(cfg.joint_names, cfg.default_joint_pos))
    home = [default.get(joint, 0.0) for joint in ranges]  # qpos follows the model's joint order
    spec.add_key(name="home", qpos=[0, 0, cfg.init_base_height, 1, 0, 0, 0, *home])
    return spec


def _add_leg(base: mujoco.MjsBody, leg: str) -> None:
    x, y = HIP_OFFSET[leg]
    side = 1.0 if y > 0 else -1.0
    hip = base.add_body(name=f"{leg}_hip", pos=[x, y, 0])
    hip.add_joint(name=f"{leg}_hip_joint", axis=[1, 0, 0], range=HIP_RANGE, armature=0.01)
    hip.add_geom(
        type=mujoco.mjtGeom.mjGEOM_CYLINDER,
        size=[0.046, 0.02],
        quat=[0.7071068, 0.7071068, 0, 0],
        pos=[0, side * 0.08, 0],
        mass=0.678,
        **collision(rgba=[0.3, 0.3, 0.3, 1]),
    )
    thigh = hip.add_body(name=f"{leg}_thigh", pos=[0, side * THIGH_Y, 0])
    thigh.add_joint(name=f"{leg}_thigh_joint", axis=[0, 1, 0], range=THIGH_RANGE[leg[0]], armature=0.01)
    thigh.add_geom(
        type=mujoco.mjtGeom.mjGEOM_CAPSULE,
        fromto=[0, 0, 0, 0, 0, -LINK * 0.9],
        size=[0.0245, 0, 0],
        mass=1.152,
        **collision(rgba=[0.8, 0.8, 0.8, 1]),
    )
    calf = thigh.add_body(name=f"{leg}_calf", pos=[0, 0, -LINK])
    calf.add_joint(name=f"{leg}_calf_joint", axis=[0, 1, 0], range=CALF_RANGE, armature=0.01)
    calf.add_geom(
        type=mujoco.mjtGeom.mjGEOM_CAPSULE,
        fromto=[0, 0, 0, 0, 0, -LINK + 0.03],
        size=[0.013, 0, 0],
        mass=0.154,
        **collision(rgba=[0.3, 0.3, 0.3, 1]),
    )
    foot = calf.add_body(name=f"{leg}_foot", pos=[0, 0, -LINK])
    foot.add_geom(
        type=mujoco.mjtGeom.mjGEOM_SPHERE,
        size=[FOOT_RADIUS, 0, 0],
        mass=0.04,
        **FOOT_CONTACT,
        **collision(rgba=[0.1, 0.1, 0.1, 1]),
    )
    foot.add_site(name=f"{leg}_foot_site", size=[FOOT_RADIUS * 1.1, 0, 0])


def _joint_ranges() -> dict[str, tuple[float, float]]:
    """Each joint's range, in the model's joint order."""
    return {
        f"{leg}_{part}_joint": r
        for leg in LEGS
        for part, r in (("hip", HIP_RANGE), ("thigh", THIGH_RANGE[leg[0]]), ("calf", CALF_RANGE))
    }
