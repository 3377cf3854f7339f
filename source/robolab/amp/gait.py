"""Reference gaits for the built-in Go2-class robot: scripted foot trajectories solved with leg IK.

Each foot follows a stance/swing cycle in the base frame (backwards on the ground during stance, a raised
forward arc during swing); the legs are phased as a trot (diagonal pairs together) or a pace (lateral pairs
together). Joint angles come from the closed-form inverse kinematics of the 3-DoF leg (hip abduction about x,
thigh and calf about y); joint velocities by central differences; foot positions by MuJoCo forward kinematics
of the same model the env simulates, so expert and policy AMP states are measured the same way.
"""

from __future__ import annotations

from dataclasses import dataclass

import mujoco
import numpy as np

from robolab.amp.motion import MAX_FPS, MotionClip
from robolab.assets import RobotCfg, RobotModel, load_robot
from robolab.assets.go2 import LEGS
from robolab.tasks.velocity.go2.env_cfgs import go2_robot_cfg

PHASE_OFFSETS = {
    "trot": {"FL": 0.0, "RR": 0.0, "FR": 0.5, "RL": 0.5},
    "pace": {"FL": 0.0, "RL": 0.0, "FR": 0.5, "RR": 0.5},
}


@dataclass
class GaitCfg:
    """A scripted quadruped gait: the foot pattern, speed, cycle, duty factor, foot clearance and clip length."""

    gait: str = "trot"
    """The foot pattern: ``trot`` (diagonal pairs) or ``pace`` (same-side pairs)."""
    speed: float = 0.6
    """Forward base speed (m/s)."""
    period: float = 0.5
    """Gait cycle (s)."""
    duty: float = 0.5
    """Share of the cycle a foot is on the ground."""
    step_height: float = 0.08
    """Peak height of a swinging foot above its stance height (m)."""
    duration: float = 4.0
    """Length of the generated clip (s)."""
    fps: float = 50.0
    """Frames per second of the clip."""

    def __post_init__(self) -> None:
        if self.gait not in PHASE_OFFSETS:
            raise ValueError(f"gait={self.gait!r}: allowed: {', '.join(PHASE_OFFSETS)}")
        check_clip_settings(
            self,
            ("speed", abs(self.speed) <= 5.0, "a finite speed within +-5 m/s"),
            ("period", 0.05 <= self.period <= 5.0, "in [0.05, 5] s"),
            ("duty", 0.0 < self.duty < 1.0, "in (0, 1)"),
            ("step_height", 0.0 <= self.step_height <= 0.3, "in [0, 0.3] m"),
        )


def check_clip_settings(cfg, *rules: tuple[str, bool, str]) -> None:
    """Refuse, in one line naming the flag, a setting of a scripted clip's config whose rule (name, holds, allowed)
    fails, or a duration and frame rate that make under 2 frames (the rules of ``duration`` and ``fps`` are added)."""
    common = (
        ("duration", 0.0 < cfg.duration <= 600.0, "in (0, 600] s"),
        ("fps", 1.0 <= cfg.fps <= MAX_FPS, f"in [1, {MAX_FPS:g}] frames per second"),
    )
    for name, ok, allowed in (*rules, *common):
        if not ok:  # (NaN compares false: refused too)
            raise ValueError(f"--{name}={getattr(cfg, name)}: {allowed}")
    if cfg.duration * cfg.fps < 1:
        raise ValueError(f"--duration={cfg.duration} at --fps={cfg.fps}: under 2 frames; a clip needs at least 2")


@dataclass
class LegGeometry:
    """One leg's hip position and segment lengths in the base frame, read from the robot model (for the leg IK)."""

    hip: np.ndarray  # (3,) hip joint in the base frame
    lateral: float  # hip -> thigh joint offset along y (signed)
    thigh: float
    calf: float


def leg_geometry(model: mujoco.MjModel, leg: str) -> LegGeometry:
    """The geometry of ``leg`` (``FL``, ``FR``, ``RL``, ``RR``) read from the compiled robot model."""
    body = lambda name: mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_BODY, name)
    return LegGeometry(
        hip=model.body_pos[body(f"{leg}_hip")].copy(),
        lateral=float(model.body_pos[body(f"{leg}_thigh")][1]),
        thigh=float(-model.body_pos[body(f"{leg}_calf")][2]),
        calf=float(-model.body_pos[body(f"{leg}_foot")][2]),
    )


def leg_ik(foot: np.ndarray, geo: LegGeometry) -> np.ndarray:
    """Joint angles (hip, thigh, calf) that put the foot at ``foot`` (..., 3, base frame); knee bent backwards."""
    x, y, z = np.moveaxis(foot - geo.hip, -1, 0)
    d = geo.lateral
    length = np.sqrt(np.maximum(y**2 + z**2 - d**2, 1e-12))  # hip-to-foot distance in the leg's plane
    q_hip = np.arctan2(z, y) - np.arctan2(-length, d)
    cos_knee = (x**2 + length**2 - geo.thigh**2 - geo.calf**2) / (2 * geo.thigh * geo.calf)
    q_calf = -np.arccos(np.clip(cos_knee, -1.0, 1.0))
    q_thigh = np.arctan2(-x, length) - np.arctan2(geo.calf * np.sin(q_calf), geo.thigh + geo.calf * np.cos(q_calf))
    return np.stack([q_hip, q_thigh, q_calf], axis=-1)


def foot_positions(model: mujoco.MjModel, robot: RobotModel, joint_pos: np.ndarray) -> np.ndarray:
    """Forward kinematics: ``robot``'s feet in the base frame (T, F, 3) for joint angles (T, J), policy order."""
    data = mujoco.MjData(model)
    feet = robot.foot_body_ids
    out = np.empty((joint_pos.shape[0], len(feet), 3))
    for t, q in enumerate(joint_pos):
        data.qpos[:] = 0.0
        data.qpos[3] = 1.0  # base at the origin, identity orientation: world frame == base frame
        data.qpos[robot.qpos_adr] = q
        mujoco.mj_kinematics(model, data)
        out[t] = data.xpos[feet]
    return out


def generate_clip(cfg: GaitCfg, robot_cfg: RobotCfg | None = None) -> MotionClip:
    """A reference clip of the scripted gait ``cfg`` for the quadruped ``robot_cfg`` (the built-in Go2 by default):
    foot trajectories solved into joint angles by leg inverse kinematics."""
    if cfg.gait not in PHASE_OFFSETS:
        raise ValueError(f"gait={cfg.gait!r}: allowed are {sorted(PHASE_OFFSETS)}")
    if not 0 < cfg.duty < 1 or cfg.period <= 0 or cfg.fps <= 0 or cfg.duration <= 0:
        raise ValueError(f"gait parameters out of range: {cfg}")
    robot_cfg = robot_cfg or go2_robot_cfg()
    robot = load_robot(robot_cfg)
    model = robot.model
    nominal = foot_positions(model, robot, np.array([robot_cfg.default_joint_pos]))[0]  # (4, 3)
    times = np.arange(round(cfg.duration * cfg.fps) + 1) / cfg.fps
    stride = cfg.speed * cfg.duty * cfg.period  # distance the body travels while a foot is planted
    joint_pos = np.empty((len(times), len(robot_cfg.joint_names)))
    for i, leg in enumerate(LEGS):
        phase = (times / cfg.period + PHASE_OFFSETS[cfg.gait][leg]) % 1.0
        stance = phase < cfg.duty
        s_stance = phase / cfg.duty
        s_swing = (phase - cfg.duty) / (1 - cfg.duty)
        smooth = 0.5 * (1 - np.cos(np.pi * s_swing))
        dx = np.where(stance, stride / 2 - stride * s_stance, -stride / 2 + stride * smooth)
        dz = np.where(stance, 0.0, cfg.step_height * np.sin(np.pi * s_swing))
        foot = nominal[i] + np.stack([dx, np.zeros_like(dx), dz], axis=-1)
        joint_pos[:, 3 * i : 3 * i + 3] = leg_ik(foot, leg_geometry(model, leg))
    joint_vel = np.asarray(np.gradient(joint_pos, 1.0 / cfg.fps, axis=0))
    frames = len(times)
    return MotionClip(
        name=f"go2_{cfg.gait}",
        fps=cfg.fps,
        joint_pos=joint_pos,
        joint_vel=joint_vel,
        base_lin_vel=np.tile([cfg.speed, 0.0, 0.0], (frames, 1)),
        base_ang_vel=np.zeros((frames, 3)),
        foot_pos=foot_positions(model, robot, joint_pos),
    )
