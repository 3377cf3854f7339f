"""Turn a ``RobotCfg`` into a compiled ``MjModel`` plus the indices the MDP reads.

The built-in robot and any user MJCF go through the same path: contact sensors are added here on the
bodies the config names, so a Menagerie model needs no edits to work with the task.
"""

from __future__ import annotations

import importlib
import os
from dataclasses import dataclass

import mujoco
import numpy as np

from robolab import console
from robolab.assets.robot_cfg import RobotCfg
from robolab.errors import all_lines
from robolab.terrains.generator import TerrainMap
from robolab.terrains.heightfield import replace_floor

# Contact sensor intprm: data = force (bit 1), reduce = net force, one slot.
_CONTACT_DATA_FORCE = 2
_CONTACT_REDUCE_NETFORCE = 3


@dataclass
class RobotModel:
    """A compiled model and the addresses of everything the velocity MDP touches."""

    model: mujoco.MjModel
    qpos_adr: np.ndarray  # (joints,) qpos address of each actuated joint, policy order
    dof_adr: np.ndarray  # (joints,) qvel address of each actuated joint
    actuator_ids: np.ndarray  # (joints,) actuator driving each joint, policy order
    base_body_id: int
    foot_sensor_adr: np.ndarray  # (n_feet,) sensordata address of each foot's 3-d contact force
    undesired_sensor_adr: np.ndarray
    termination_sensor_adr: np.ndarray
    torque_sensor_adr: np.ndarray  # (joints,) actuator force sensors, policy order
    foot_pos_sensor_adr: np.ndarray  # (n_feet,) sensordata address of each foot's 3-d position in the base frame
    foot_vel_sensor_adr: np.ndarray  # (n_feet,) sensordata address of each foot's 3-d linear velocity, world frame
    foot_body_ids: np.ndarray  # body ids of the same groups (gait features read the feet's poses)
    undesired_body_ids: np.ndarray
    termination_body_ids: np.ndarray
    joint_limits: np.ndarray  # (joints, 2); -inf, inf for a joint without limits
    effort_limits: np.ndarray  # (joints,) each joint's actuator torque limit (N m), inf where unlimited
    actuator_groups: dict[str, np.ndarray]  # explicit actuator group -> its joints (policy order); their actuators
    # take torques (``drive_by_torque``)


def load_robot(cfg: RobotCfg, timestep: float = 0.005, terrain: TerrainMap | None = None) -> RobotModel:
    """Compile the robot with robolab's sensors: net contact force per body, joint torques, foot positions; on a
    generated ``terrain`` (a height field in place of the floor plane) when one is given."""
    _check_values(cfg)
    console.route_mujoco_warnings()  # not to MUJOCO_LOG.TXT in the working directory
    spec = _load_spec(cfg)
    if terrain is not None:
        replace_floor(spec, terrain)
    spec.option.timestep = timestep
    spec.option.disableflags |= mujoco.mjtDisableBit.mjDSBL_AUTORESET
    _check_names(spec, cfg)
    if cfg.mjcf_path is not None and cfg.replace_actuators:
        for act in list(spec.actuators):
            spec.delete(act)
        for joint, limit, kp, kd in zip(cfg.joint_names, cfg.torque_limits, *cfg.gains()):
            rng = spec.joint(joint).range
            add_pd_actuator(spec, joint, kp, kd, limit, (rng[0], rng[1]))
    contact_sensors = {
        "foot": [_add_contact_sensor(spec, b) for b in cfg.foot_bodies],
        "undesired": [_add_contact_sensor(spec, b) for b in cfg.undesired_contact_bodies],
        "termination": [_add_contact_sensor(spec, b) for b in cfg.termination_contact_bodies],
    }
    torque_names = [_add_torque_sensor(spec, joint) for joint in cfg.joint_names]
    foot_pos_names = [_add_foot_position_sensor(spec, foot, cfg.base_body) for foot in cfg.foot_bodies]
    foot_vel_names = [_add_foot_velocity_sensor(spec, foot) for foot in cfg.foot_bodies]
    groups = cfg.actuator_groups()
    try:
        model = spec.compile()
    except ValueError as err:
        raise ValueError(f"robot model {cfg.mjcf_path or cfg.builder} does not compile: {err}") from None
    robot = _index(model, cfg, contact_sensors, torque_names, foot_pos_names, foot_vel_names)
    robot.actuator_groups = {name: np.array(ids, dtype=np.int64) for name, ids in groups.items()}
    explicit = np.concatenate([np.zeros(0, dtype=np.int64), *robot.actuator_groups.values()])
    drive_by_torque(model, robot.actuator_ids[explicit])
    return robot


def drive_by_torque(model: mujoco.MjModel, actuators: np.ndarray) -> None:
    """Make ``actuators`` pass their control through as joint torque (N m): an explicit actuator model computes the
    torque, its limit included, so MuJoCo neither adds its servo's bias nor clamps the control or the force."""
    for a in actuators:
        if model.actuator_trntype[a] != mujoco.mjtTrn.mjTRN_JOINT:
            raise ValueError(f"actuator {model.actuator(a).name!r}: an explicit actuator model drives a joint directly")
    model.actuator_dyntype[actuators] = mujoco.mjtDyn.mjDYN_NONE
    model.actuator_gaintype[actuators] = mujoco.mjtGain.mjGAIN_FIXED
    model.actuator_biastype[actuators] = mujoco.mjtBias.mjBIAS_NONE
    model.actuator_gainprm[actuators] = 0.0
    model.actuator_gainprm[actuators, 0] = 1.0
    model.actuator_biasprm[actuators] = 0.0
    model.actuator_gear[actuators] = 0.0
    model.actuator_gear[actuators, 0] = 1.0
    model.actuator_ctrllimited[actuators] = 0
    model.actuator_forcelimited[actuators] = 0


def _load_spec(cfg: RobotCfg) -> mujoco.MjSpec:
    if cfg.mjcf_path is None:
        if not cfg.builder:
            raise ValueError("robot: set robot.mjcf_path (an MJCF file) or robot.builder (module:function)")
        module, _, function = cfg.builder.partition(":")
        return getattr(importlib.import_module(module), function)(cfg)
    path = os.path.expanduser(cfg.mjcf_path)
    if not os.path.isfile(path):
        raise FileNotFoundError(f"env.robot.mjcf_path={cfg.mjcf_path!r}: no such file (give a readable MJCF file)")
    try:
        spec = mujoco.MjSpec.from_file(path)
    except Exception as err:  # mujoco raises ValueError for XML and schema errors alike
        # MuJoCo's message spans lines ("XML parse error 15:" then what and where): keep them all, on one line.
        detail = all_lines(err)
        raise ValueError(f"env.robot.mjcf_path={cfg.mjcf_path!r} is not a valid MJCF file: {detail}") from None
    name_unnamed_bodies(spec)
    if not any(g.type == mujoco.mjtGeom.mjGEOM_PLANE for g in spec.worldbody.geoms):
        spec.worldbody.add_geom(name="floor", type=mujoco.mjtGeom.mjGEOM_PLANE, size=[0, 0, 0.05])
    return spec


def name_unnamed_bodies(spec: mujoco.MjSpec) -> None:
    """Name the bodies an MJCF file leaves unnamed ``<parent>_body<k>`` (k counts that parent's unnamed children),
    so the config can map them: gymnasium's ant, for one, leaves its lower legs unnamed."""
    counts: dict[str, int] = {}
    for body in spec.bodies:
        if body.name or body.parent is None:
            continue
        parent = body.parent.name
        body.name = f"{parent}_body{counts.get(parent, 0)}"
        counts[parent] = counts.get(parent, 0) + 1


def _check_values(cfg: RobotCfg) -> None:
    """The robot's numbers: a start above the floor, PD gains and torque limits that are not negative."""
    if not cfg.init_base_height > 0:
        raise ValueError(
            f"env.robot.init_base_height={cfg.init_base_height}: must be > 0 m (the base starts above ground)"
        )
    for key in ("stiffness", "damping"):
        if not getattr(cfg, key) >= 0:
            raise ValueError(f"env.robot.{key}={getattr(cfg, key)}: a PD gain must be >= 0")
    for key in ("joint_stiffness", "joint_damping"):
        values = list(getattr(cfg, key))
        if not all(v >= 0 for v in values):
            raise ValueError(f"env.robot.{key}={values}: every PD gain must be >= 0")
        if values and len(values) != len(cfg.joint_names):
            raise ValueError(
                f"env.robot.{key} has {len(values)} entries: give one per joint ({len(cfg.joint_names)}) or none"
            )
    if not all(limit > 0 for limit in cfg.torque_limits):
        raise ValueError(f"env.robot.torque_limits={list(cfg.torque_limits)}: every limit must be > 0 N m")


def _check_names(spec: mujoco.MjSpec, cfg: RobotCfg) -> None:
    joints = {j.name for j in spec.joints}
    bodies = {b.name for b in spec.bodies}
    for name in cfg.joint_names:
        if name not in joints:
            raise ValueError(f"env.robot.joint_names: joint {name!r} is not in the model (it has: {sorted(joints)})")
    for key in ("foot_bodies", "undesired_contact_bodies", "termination_contact_bodies"):
        for name in getattr(cfg, key):
            if name not in bodies:
                raise ValueError(f"env.robot.{key}: body {name!r} is not in the model (it has: {sorted(bodies)})")
    if cfg.base_body not in bodies:
        raise ValueError(f"env.robot.base_body={cfg.base_body!r} is not in the model (it has: {sorted(bodies)})")
    if len(cfg.default_joint_pos) != len(cfg.joint_names) or len(cfg.torque_limits) != len(cfg.joint_names):
        raise ValueError(
            f"env.robot.default_joint_pos ({len(cfg.default_joint_pos)}) and env.robot.torque_limits "
            f"({len(cfg.torque_limits)}) must have one entry per joint ({len(cfg.joint_names)})"
        )


def _add_contact_sensor(spec: mujoco.MjSpec, body: str) -> str:
    name = f"robolab_contact_{body}"
    spec.add_sensor(
        name=name,
        type=mujoco.mjtSensor.mjSENS_CONTACT,
        objtype=mujoco.mjtObj.mjOBJ_BODY,
        objname=body,
        intprm=[_CONTACT_DATA_FORCE, _CONTACT_REDUCE_NETFORCE, 1],
    )
    return name


def _add_torque_sensor(spec: mujoco.MjSpec, joint: str) -> str:
    name = f"robolab_torque_{joint}"
    spec.add_sensor(
        name=name, type=mujoco.mjtSensor.mjSENS_JOINTACTFRC, objtype=mujoco.mjtObj.mjOBJ_JOINT, objname=joint
    )
    return name


def _add_foot_position_sensor(spec: mujoco.MjSpec, foot: str, base: str) -> str:
    name = f"robolab_foot_pos_{foot}"
    spec.add_sensor(
        name=name,
        type=mujoco.mjtSensor.mjSENS_FRAMEPOS,
        objtype=mujoco.mjtObj.mjOBJ_BODY,
        objname=foot,
        reftype=mujoco.mjtObj.mjOBJ_BODY,
        refname=base,
    )
    return name


def _add_foot_velocity_sensor(spec: mujoco.MjSpec, foot: str) -> str:
    name = f"robolab_foot_vel_{foot}"
    spec.add_sensor(name=name, type=mujoco.mjtSensor.mjSENS_FRAMELINVEL, objtype=mujoco.mjtObj.mjOBJ_BODY, objname=foot)
    return name


def _index(
    model: mujoco.MjModel,
    cfg: RobotCfg,
    sensors: dict[str, list[str]],
    torque_names: list[str],
    foot_pos_names: list[str],
    foot_vel_names: list[str],
) -> RobotModel:
    def joint_ids():
        return [mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_JOINT, j) for j in cfg.joint_names]

    def body_ids(names):
        return np.array([mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_BODY, b) for b in names], dtype=np.int64)

    def sensor_adr(names):
        ids = [mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_SENSOR, n) for n in names]
        return np.array([model.sensor_adr[i] for i in ids], dtype=np.int64)

    jids = joint_ids()
    actuator_of_joint = {int(model.actuator_trnid[a, 0]): a for a in range(model.nu)}
    missing = [cfg.joint_names[i] for i, j in enumerate(jids) if j not in actuator_of_joint]
    if missing:
        raise ValueError(
            f"env.robot.joint_names: joints {missing} have no actuator (set env.robot.replace_actuators=true)"
        )
    base_id = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_BODY, cfg.base_body)
    if model.body_jntnum[base_id] != 1 or model.jnt_type[model.body_jntadr[base_id]] != mujoco.mjtJoint.mjJNT_FREE:
        raise ValueError(f"env.robot.base_body={cfg.base_body!r} must carry exactly one free joint")
    if model.jnt_qposadr[model.body_jntadr[base_id]] != 0:
        raise ValueError(f"env.robot.base_body={cfg.base_body!r}: its free joint must be the model's first joint")
    return RobotModel(
        model=model,
        qpos_adr=np.array([model.jnt_qposadr[j] for j in jids], dtype=np.int64),
        dof_adr=np.array([model.jnt_dofadr[j] for j in jids], dtype=np.int64),
        actuator_ids=np.array([actuator_of_joint[j] for j in jids], dtype=np.int64),
        base_body_id=base_id,
        foot_sensor_adr=sensor_adr(sensors["foot"]),
        undesired_sensor_adr=sensor_adr(sensors["undesired"]),
        termination_sensor_adr=sensor_adr(sensors["termination"]),
        torque_sensor_adr=sensor_adr(torque_names),
        foot_pos_sensor_adr=sensor_adr(foot_pos_names),
        foot_vel_sensor_adr=sensor_adr(foot_vel_names),
        foot_body_ids=body_ids(cfg.foot_bodies),
        undesired_body_ids=body_ids(cfg.undesired_contact_bodies),
        termination_body_ids=body_ids(cfg.termination_contact_bodies),
        joint_limits=np.array(
            [model.jnt_range[j] if model.jnt_limited[j] else (-np.inf, np.inf) for j in jids], dtype=np.float64
        ),
        effort_limits=np.array([_effort_limit(model, actuator_of_joint[j]) for j in jids], dtype=np.float64),
        actuator_groups={},
    )


def _effort_limit(model: mujoco.MjModel, actuator: int) -> float:
    """The joint torque an actuator can give at most: its force limit through its gear (inf without one)."""
    if not model.actuator_forcelimited[actuator]:
        return float("inf")
    force = float(np.abs(model.actuator_forcerange[actuator]).max())
    return force * abs(float(model.actuator_gear[actuator, 0]))


def add_pd_actuator(
    spec: mujoco.MjSpec, joint: str, kp: float, kd: float, torque_limit: float, ctrl_range: tuple[float, float]
) -> None:
    """A position servo: torque = clip(kp (target - q) - kd qdot, +-limit)."""
    act = spec.add_actuator(name=joint.replace("_joint", ""), target=joint, trntype=mujoco.mjtTrn.mjTRN_JOINT)
    act.set_to_position(kp=kp, kv=kd)
    act.forcelimited = mujoco.mjtLimited.mjLIMITED_TRUE
    act.forcerange = np.array([-torque_limit, torque_limit])
    act.ctrllimited = mujoco.mjtLimited.mjLIMITED_TRUE
    act.ctrlrange = np.array(ctrl_range)
