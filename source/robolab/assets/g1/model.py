"""The G1-class humanoid as data (links, joints, motors) and the builder that turns it into an ``MjSpec``.

Kinematics, joint ranges, link masses and inertias are Unitree's published G1 29-DoF description (revision 1.0), as
MuJoCo Menagerie's ``unitree_g1`` carries them; motors (torque, speed, reflected rotor inertia) are Unitree's motor
figures. ``SOURCES.md`` beside this file says which number comes from where. Only the left limbs are written out:
the right ones are their mirror images through the sagittal (x-z) plane, as Unitree's description is.

Collision geometry is primitives: a capsule pelvis, box torso, sphere head, capsule thighs, shins and arms, and
feet of two capsules each (heel and toe, across the sole) whose contact points are where the description puts its
four sole points. Every geom collides with the floor only (``robolab.assets.scene``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import mujoco

from robolab.assets.loader import add_pd_actuator
from robolab.assets.robot_cfg import RobotCfg
from robolab.assets.scene import FOOT_CONTACT, add_floor, collision, set_options

Vec = tuple[float, float, float]
Quat = tuple[float, float, float, float]


@dataclass(frozen=True)
class Motor:
    """A G1 motor class: peak torque, no-load speed and armature at the joint."""

    effort: float
    """Peak torque at the joint (N m)."""
    velocity: float
    """No-load speed at the joint (rad/s)."""
    armature: float
    """Rotor inertia reflected through the gearbox (kg m^2)."""


MOTORS = {
    "7520-14": Motor(effort=88.0, velocity=32.0, armature=0.010177520),
    "7520-22": Motor(effort=139.0, velocity=20.0, armature=0.025101925),
    "5020": Motor(effort=25.0, velocity=37.0, armature=0.003609725),
    "2x5020": Motor(effort=50.0, velocity=37.0, armature=0.00721945),  # ankles and waist roll/pitch: two in parallel
    "4010": Motor(effort=5.0, velocity=22.0, armature=0.00425),
}
"""Unitree's G1 joint motors by type."""


@dataclass(frozen=True)
class Geom:
    """A collision primitive: a capsule (``fromto``, radius ``size[0]``), or a box, sphere or cylinder (``pos``,
    ``size``, ``quat``)."""

    kind: str
    size: tuple[float, ...]
    pos: Vec = (0.0, 0.0, 0.0)
    fromto: tuple[float, float, float, float, float, float] | None = None
    quat: Quat = (1.0, 0.0, 0.0, 0.0)
    foot: bool = False


@dataclass(frozen=True)
class Link:
    """A body, the joint that moves it relative to its parent, its inertia and its collision geoms."""

    name: str
    parent: str
    pos: Vec
    mass: float
    com: Vec
    inertia: Vec
    """Principal moments (kg m^2) in the frame ``inertia_quat`` turns the body frame to."""
    inertia_quat: Quat
    quat: Quat = (1.0, 0.0, 0.0, 0.0)
    joint: str | None = None
    axis: str = "y"
    range: tuple[float, float] = (0.0, 0.0)
    motor: str = ""
    geoms: tuple[Geom, ...] = field(default_factory=tuple)


_CAPSULE, _BOX, _SPHERE, _CYLINDER = "capsule", "box", "sphere", "cylinder"
SOLE_Z = -0.035
"""The sole's height below the ankle-roll joint (the description's sole points: 5 mm spheres at -0.03)."""
FOOT_RADIUS = 0.012


def _sole(x: float, half_width: float) -> Geom:
    z = SOLE_Z + FOOT_RADIUS
    return Geom(_CAPSULE, (FOOT_RADIUS,), fromto=(x, -half_width, z, x, half_width, z), foot=True)


# Bodies whose names start with "left_" are the left limbs; the right ones are made from them by ``_mirror``.
PELVIS = Link(
    name="pelvis",
    parent="world",
    pos=(0.0, 0.0, 0.0),
    mass=3.813,
    com=(0.0, 0.0, -0.07605),
    inertia=(0.010549, 0.0093089, 0.0079184),
    inertia_quat=(1.0, 0.0, -0.000399148, 0.0),
    geoms=(Geom(_CAPSULE, (0.07,), fromto=(0.0, -0.05, -0.07, 0.0, 0.05, -0.07)),),
)
WAIST = (
    Link(
        name="waist_yaw_link",
        parent="pelvis",
        pos=(0.0, 0.0, 0.0),
        mass=0.214,
        com=(0.003494, 0.000233, 0.018034),
        inertia=(0.000163531, 0.000107714, 0.000102205),
        inertia_quat=(0.289697, 0.591001, -0.337795, 0.672821),
        joint="waist_yaw_joint",
        axis="z",
        range=(-2.618, 2.618),
        motor="7520-14",
    ),
    Link(
        name="waist_roll_link",
        parent="waist_yaw_link",
        pos=(-0.0039635, 0.0, 0.044),
        mass=0.086,
        com=(0.0, 2.3e-05, 0.0),
        inertia=(8.245e-06, 7.079e-06, 6.339e-06),
        inertia_quat=(0.5, 0.5, -0.5, 0.5),
        joint="waist_roll_joint",
        axis="x",
        range=(-0.52, 0.52),
        motor="2x5020",
    ),
    Link(
        name="torso_link",
        parent="waist_roll_link",
        pos=(0.0, 0.0, 0.0),
        mass=7.818,
        com=(0.00203158, 0.000339683, 0.184568),
        inertia=(0.121847, 0.109825, 0.0273735),
        inertia_quat=(0.999803, -6.03319e-05, 0.0198256, 0.00131986),
        joint="waist_pitch_joint",
        axis="y",
        range=(-0.52, 0.52),
        motor="2x5020",
        geoms=(Geom(_BOX, (0.07, 0.09, 0.13), pos=(0.0, 0.0, 0.17)), Geom(_SPHERE, (0.075,), pos=(0.01, 0.0, 0.41))),
    ),
)
LEFT_LEG = (
    Link(
        name="left_hip_pitch_link",
        parent="pelvis",
        pos=(0.0, 0.064452, -0.1027),
        mass=1.35,
        com=(0.002741, 0.047791, -0.02606),
        inertia=(0.00181517, 0.00153422, 0.00116212),
        inertia_quat=(0.954862, 0.293964, 0.0302556, 0.030122),
        joint="left_hip_pitch_joint",
        axis="y",
        range=(-2.5307, 2.8798),
        motor="7520-14",
    ),
    Link(
        name="left_hip_roll_link",
        parent="left_hip_pitch_link",
        pos=(0.0, 0.052, -0.030465),
        mass=1.52,
        com=(0.029812, -0.001045, -0.087934),
        inertia=(0.00254986, 0.00241169, 0.00148755),
        inertia_quat=(0.977808, -1.97119e-05, 0.205576, -0.0403793),
        quat=(0.996179, 0.0, -0.0873386, 0.0),
        joint="left_hip_roll_joint",
        axis="x",
        range=(-0.5236, 2.9671),
        motor="7520-22",
    ),
    Link(
        name="left_hip_yaw_link",
        parent="left_hip_roll_link",
        pos=(0.025001, 0.0, -0.12412),
        mass=1.702,
        com=(-0.057709, -0.010981, -0.15078),
        inertia=(0.00776166, 0.00717575, 0.00160139),
        inertia_quat=(0.600598, 0.15832, 0.223482, 0.751181),
        joint="left_hip_yaw_joint",
        axis="z",
        range=(-2.7576, 2.7576),
        motor="7520-14",
        geoms=(Geom(_CAPSULE, (0.05,), fromto=(-0.01, 0.0, -0.04, -0.065, 0.0, -0.15)),),
    ),
    Link(
        name="left_knee_link",
        parent="left_hip_yaw_link",
        pos=(-0.078273, 0.0021489, -0.17734),
        mass=1.932,
        com=(0.005457, 0.003964, -0.12074),
        inertia=(0.0113804, 0.0112778, 0.00146458),
        inertia_quat=(0.923418, -0.0327699, 0.0158246, 0.382067),
        quat=(0.996179, 0.0, 0.0873386, 0.0),
        joint="left_knee_joint",
        axis="y",
        range=(-0.087267, 2.8798),
        motor="7520-22",
        geoms=(Geom(_CAPSULE, (0.04,), fromto=(0.005, 0.0, -0.04, 0.0, 0.0, -0.25)),),
    ),
    Link(
        name="left_ankle_pitch_link",
        parent="left_knee_link",
        pos=(0.0, -9.4445e-05, -0.30001),
        mass=0.074,
        com=(-0.007269, 0.0, 0.011137),
        inertia=(1.89e-05, 1.40805e-05, 6.9195e-06),
        inertia_quat=(0.603053, 0.369225, 0.369225, 0.603053),
        joint="left_ankle_pitch_joint",
        axis="y",
        range=(-0.87267, 0.5236),
        motor="2x5020",
    ),
    Link(
        name="left_ankle_roll_link",
        parent="left_ankle_pitch_link",
        pos=(0.0, 0.0, -0.017558),
        mass=0.608,
        com=(0.026505, 0.0, -0.016425),
        inertia=(0.00167218, 0.0016161, 0.000217621),
        inertia_quat=(-0.000481092, 0.728482, -0.000618967, 0.685065),
        joint="left_ankle_roll_joint",
        axis="x",
        range=(-0.2618, 0.2618),
        motor="2x5020",
        geoms=(_sole(-0.05, 0.025), _sole(0.12, 0.03)),
    ),
)
LEFT_ARM = (
    Link(
        "left_shoulder_pitch_link",
        "torso_link",
        (0.0039563, 0.10022, 0.24778),
        0.718,
        (0.0, 0.035892, -0.011628),
        (0.000465864, 0.000432842, 0.000406394),
        (0.654152, 0.0130458, -0.326267, 0.68225),
        quat=(0.990264, 0.139201, 1.38722e-05, -9.86868e-05),
        joint="left_shoulder_pitch_joint",
        axis="y",
        range=(-3.0892, 2.6704),
        motor="5020",
        geoms=(Geom(_CYLINDER, (0.03, 0.025), pos=(0.0, 0.04, -0.01), quat=(0.707107, 0.0, 0.707107, 0.0)),),
    ),
    Link(
        "left_shoulder_roll_link",
        "left_shoulder_pitch_link",
        (0.0, 0.038, -0.013831),
        0.643,
        (-0.000227, 0.00727, -0.063243),
        (0.000691311, 0.000618011, 0.000388977),
        (0.701256, -0.0196223, -0.00710317, 0.712604),
        quat=(0.990268, -0.139172, 0.0, 0.0),
        joint="left_shoulder_roll_joint",
        axis="x",
        range=(-1.5882, 2.2515),
        motor="5020",
        geoms=(Geom(_CYLINDER, (0.03, 0.015), pos=(-0.004, 0.006, -0.053)),),
    ),
    Link(
        "left_shoulder_yaw_link",
        "left_shoulder_roll_link",
        (0.0, 0.00624, -0.1032),
        0.734,
        (0.010773, -0.002949, -0.072009),
        (0.00106187, 0.00103217, 0.000400661),
        (0.716879, -0.0964829, -0.0679942, 0.687134),
        joint="left_shoulder_yaw_joint",
        axis="z",
        range=(-2.618, 2.618),
        motor="5020",
        geoms=(Geom(_CAPSULE, (0.03,), fromto=(0.0, 0.0, -0.01, 0.01, 0.0, -0.075)),),
    ),
    Link(
        "left_elbow_link",
        "left_shoulder_yaw_link",
        (0.015783, 0.0, -0.080518),
        0.6,
        (0.064956, 0.004454, -0.010062),
        (0.000443035, 0.000421612, 0.000259353),
        (0.541765, 0.636132, 0.388821, 0.388129),
        joint="left_elbow_joint",
        axis="y",
        range=(-1.0472, 2.0944),
        motor="5020",
        geoms=(Geom(_CAPSULE, (0.025,), fromto=(0.01, 0.0, -0.005, 0.095, 0.0, -0.01)),),
    ),
    Link(
        "left_wrist_roll_link",
        "left_elbow_link",
        (0.1, 0.00188791, -0.01),
        0.085445,
        (0.0171394, 0.000537591, 4.8864e-07),
        (5.48211e-05, 4.96646e-05, 3.57798e-05),
        (0.575338, 0.411667, -0.574906, 0.411094),
        joint="left_wrist_roll_joint",
        axis="x",
        range=(-1.97222, 1.97222),
        motor="5020",
    ),
    Link(
        "left_wrist_pitch_link",
        "left_wrist_roll_link",
        (0.038, 0.0, 0.0),
        0.48405,
        (0.0229999, -0.00111685, -0.00111658),
        (0.000430353, 0.000429873, 0.000164648),
        (0.249998, 0.661363, 0.293036, 0.643608),
        joint="left_wrist_pitch_joint",
        axis="y",
        range=(-1.61443, 1.61443),
        motor="4010",
    ),
    Link(
        "left_wrist_yaw_link",
        "left_wrist_pitch_link",
        (0.046, 0.0, 0.0),
        0.254576,
        (0.0708244, 0.000191745, 0.00161742),
        (0.000646113, 0.000559993, 0.000147566),
        (0.510571, 0.526295, 0.468078, 0.493188),
        joint="left_wrist_yaw_joint",
        axis="z",
        range=(-1.61443, 1.61443),
        motor="4010",
        geoms=(Geom(_CAPSULE, (0.025,), fromto=(0.03, 0.0, 0.0, 0.1, 0.0, 0.0)),),
    ),
)


def _mirror_vec(v: Vec) -> Vec:
    return (v[0], -v[1], v[2])


def _mirror_quat(q: Quat) -> Quat:
    """The rotation mirrored through the x-z plane: (w, x, y, z) -> (w, -x, y, -z)."""
    return (q[0], -q[1], q[2], -q[3])


def _mirror_geom(g: Geom) -> Geom:
    fromto = None if g.fromto is None else (*_mirror_vec(g.fromto[:3]), *_mirror_vec(g.fromto[3:]))
    return Geom(g.kind, g.size, _mirror_vec(g.pos), fromto, _mirror_quat(g.quat), g.foot)


def _mirror(link: Link) -> Link:
    """The right-side twin of a left link. A roll (x) or yaw (z) joint's range flips sign; a pitch (y) joint's
    does not (the mirror reverses rotations about x and z, not about y)."""
    right = lambda name: name.replace("left_", "right_")
    lo, hi = link.range
    return Link(
        name=right(link.name),
        parent=right(link.parent),
        pos=_mirror_vec(link.pos),
        mass=link.mass,
        com=_mirror_vec(link.com),
        inertia=link.inertia,
        inertia_quat=_mirror_quat(link.inertia_quat),
        quat=_mirror_quat(link.quat),
        joint=link.joint and right(link.joint),
        axis=link.axis,
        range=(lo, hi) if link.axis == "y" else (-hi, -lo),
        motor=link.motor,
        geoms=tuple(_mirror_geom(g) for g in link.geoms),
    )


LINKS = (
    PELVIS,
    *LEFT_LEG,
    *(_mirror(link) for link in LEFT_LEG),
    *WAIST,
    *LEFT_ARM,
    *(_mirror(link) for link in LEFT_ARM),
)
"""Every body, in the depth-first order MuJoCo numbers them by (each chain whole before the next): the model's
joints then come in ``JOINTS``' order."""
_BY_JOINT = {link.joint: link for link in LINKS if link.joint}


def _both_sides(limb: tuple[Link, ...]) -> list[str]:
    return [str(link.joint).replace("left_", f"{side}_") for side in ("left", "right") for link in limb]


LEG_JOINTS = _both_sides(LEFT_LEG)
WAIST_JOINTS = [str(link.joint) for link in WAIST]
ARM_JOINTS = _both_sides(LEFT_ARM)
JOINTS = [*LEG_JOINTS, *WAIST_JOINTS, *ARM_JOINTS]
"""All 29 actuated joints: legs (left, right), waist, arms (left, right); the order of Unitree's SDK."""


def motor(joint: str) -> Motor:
    """The motor driving ``joint``."""
    return MOTORS[_BY_JOINT[joint].motor]


def joint_range(joint: str) -> tuple[float, float]:
    """The built-in G1's position range of ``joint`` (rad)."""
    return _BY_JOINT[joint].range


def build_g1_spec(cfg: RobotCfg) -> mujoco.MjSpec:
    """Return the humanoid on a flat floor, with PD actuators on ``cfg.joint_names``, IMU sites and a home key."""
    unknown = [joint for joint in cfg.joint_names if joint not in _BY_JOINT]
    if unknown:
        raise ValueError(f"env.robot.joint_names: joint {unknown[0]!r} is not in the model (it has: {JOINTS})")
    spec = mujoco.MjSpec()
    spec.modelname = "robolab_g1"
    set_options(spec)
    add_floor(spec)
    bodies = {"world": spec.worldbody}
    for link in LINKS:
        bodies[link.name] = _add_link(bodies[link.parent], link)
    bodies["pelvis"].pos = [0.0, 0.0, cfg.init_base_height]
    bodies["pelvis"].add_freejoint(name="root")
    bodies["pelvis"].add_site(name="imu_in_pelvis", pos=[0.04525, 0.0, -0.08339])
    bodies["torso_link"].add_site(name="imu_in_torso", pos=[-0.03959, -0.00224, 0.14792])
    # (lengths that do not match are named by the loader's checks)
    for joint, limit, kp, kd in zip(cfg.joint_names, cfg.torque_limits, *cfg.gains()):
        add_pd_actuator(spec, joint, kp, kd, limit, joint_range(joint))
    default = dict(zip(cfg.joint_names, cfg.default_joint_pos))
    home = [default.get(link.joint, 0.0) for link in LINKS if link.joint]  # qpos follows the model's joint order
    spec.add_key(name="home", qpos=[0, 0, cfg.init_base_height, 1, 0, 0, 0, *home])
    return spec


def _add_link(parent: mujoco.MjsBody, link: Link) -> mujoco.MjsBody:
    body = parent.add_body(name=link.name, pos=list(link.pos), quat=list(link.quat))
    body.explicitinertial = True
    body.mass, body.ipos, body.iquat = link.mass, list(link.com), list(link.inertia_quat)
    body.inertia = list(link.inertia)
    if link.joint:
        axis = {"x": [1, 0, 0], "y": [0, 1, 0], "z": [0, 0, 1]}[link.axis]
        body.add_joint(name=link.joint, axis=axis, range=list(link.range), armature=MOTORS[link.motor].armature)
    for geom in link.geoms:
        kind = getattr(mujoco.mjtGeom, f"mjGEOM_{geom.kind.upper()}")
        shape = {"fromto": list(geom.fromto)} if geom.fromto else {"pos": list(geom.pos), "quat": list(geom.quat)}
        size = [*geom.size, 0.0, 0.0, 0.0][:3]
        rgba = [0.1, 0.1, 0.1, 1] if geom.foot else [0.7, 0.7, 0.72, 1]
        body.add_geom(
            type=kind, size=size, mass=0.0, **shape, **(FOOT_CONTACT if geom.foot else {}), **collision(rgba=rgba)
        )
    return body
