"""A reference walk for the built-in G1-class humanoid: scripted foot trajectories solved with numerical leg IK.

Each foot follows a stance/swing cycle in the pelvis frame (backwards on the ground during stance, a raised forward
arc during swing), the legs half a cycle apart; each sole stays level (the foot keeps its home orientation). Each
leg's six joints come from damped least squares on MuJoCo's Jacobians of the foot body (position and orientation),
solved on the same model the env simulates; the arms swing against the opposite leg. Joint velocities by central
differences; foot positions by forward kinematics (``robolab.amp.gait.foot_positions``), so expert and policy AMP
states are measured the same way.
"""

from __future__ import annotations

from dataclasses import dataclass

import mujoco
import numpy as np

from robolab.amp.gait import check_clip_settings, foot_positions
from robolab.amp.motion import MotionClip
from robolab.assets import RobotCfg, load_robot

SIDES = ("left", "right")


@dataclass
class BipedGaitCfg:
    """A scripted walk of a biped (the built-in G1): speed, cycle, foot clearance, arm swing and clip length."""

    speed: float = 0.5
    """Forward pelvis speed (m/s)."""
    period: float = 0.8
    """Gait cycle (s): two steps."""
    duty: float = 0.6
    """Share of the cycle a foot is on the ground (over 0.5: both feet are down for a while each step)."""
    step_height: float = 0.08
    """Peak height of a swinging foot above its stance height (m)."""
    arm_swing: float = 0.3
    """Shoulder pitch amplitude (rad), against the opposite leg."""
    duration: float = 4.0
    """Length of the generated clip (s)."""
    fps: float = 50.0
    """Frames per second of the clip."""

    def __post_init__(self) -> None:
        check_clip_settings(
            self,
            ("speed", abs(self.speed) <= 2.0, "within +-2 m/s"),
            ("period", 0.2 <= self.period <= 5.0, "in [0.2, 5] s"),
            ("duty", 0.5 <= self.duty < 1.0, "in [0.5, 1) (a walk: a foot is always down)"),
            ("step_height", 0.0 <= self.step_height <= 0.25, "in [0, 0.25] m"),
            ("arm_swing", 0.0 <= self.arm_swing <= 1.0, "in [0, 1] rad"),
        )


def foot_targets(cfg: BipedGaitCfg, times: np.ndarray, phase_offset: float) -> tuple[np.ndarray, np.ndarray]:
    """(forward, up) displacement of one foot from its home position at ``times`` (pelvis frame)."""
    stride = cfg.speed * cfg.duty * cfg.period  # distance the pelvis travels while the foot is planted
    phase = (times / cfg.period + phase_offset) % 1.0
    stance = phase < cfg.duty
    s_swing = (phase - cfg.duty) / (1 - cfg.duty)
    smooth = 0.5 * (1 - np.cos(np.pi * s_swing))
    dx = np.where(stance, stride / 2 - stride * phase / cfg.duty, -stride / 2 + stride * smooth)
    dz = np.where(stance, 0.0, cfg.step_height * np.sin(np.pi * s_swing))
    return dx, dz


def solve_leg(
    model: mujoco.MjModel,
    data: mujoco.MjData,
    foot: int,
    dofs: np.ndarray,
    qadr: np.ndarray,
    target_pos: np.ndarray,
    target_mat: np.ndarray,
    iterations: int = 50,
    damping: float = 1e-4,
) -> float:
    """Move the joints at ``qadr``/``dofs`` so that body ``foot`` reaches ``target_pos`` with orientation
    ``target_mat`` (damped least squares; the base fixed); ``data.qpos`` holds the start and the result. Returns the
    remaining position error (m)."""
    jacp, jacr = np.zeros((3, model.nv)), np.zeros((3, model.nv))
    quat, target_quat, delta, rot_err = np.zeros(4), np.zeros(4), np.zeros(4), np.zeros(3)
    mujoco.mju_mat2Quat(target_quat, target_mat.ravel())
    for _ in range(iterations):
        mujoco.mj_kinematics(model, data)
        mujoco.mj_comPos(model, data)
        pos_err = target_pos - data.xpos[foot]
        mujoco.mju_mat2Quat(quat, data.xmat[foot])
        mujoco.mju_negQuat(delta, quat)
        mujoco.mju_mulQuat(delta, target_quat, delta)
        mujoco.mju_quat2Vel(rot_err, delta, 1.0)
        if np.linalg.norm(pos_err) < 1e-6 and np.linalg.norm(rot_err) < 1e-5:
            break
        mujoco.mj_jacBody(model, data, jacp, jacr, foot)
        jac = np.vstack([jacp[:, dofs], jacr[:, dofs]])
        err = np.concatenate([pos_err, rot_err])
        step = jac.T @ np.linalg.solve(jac @ jac.T + damping * np.eye(6), err)
        data.qpos[qadr] += step
    mujoco.mj_kinematics(model, data)
    return float(np.linalg.norm(target_pos - data.xpos[foot]))


def generate_walk(cfg: BipedGaitCfg, robot_cfg: RobotCfg | None = None) -> MotionClip:
    """The walk of ``cfg`` for ``robot_cfg`` (the built-in G1 by default), in its joint and foot order."""
    if robot_cfg is None:
        from robolab.tasks.velocity.g1.env_cfgs import g1_robot_cfg

        robot_cfg = g1_robot_cfg()
    robot = load_robot(robot_cfg)
    model, data = robot.model, mujoco.MjData(robot.model)
    names = list(robot_cfg.joint_names)
    home = np.array(robot_cfg.default_joint_pos, dtype=np.float64)
    data.qpos[3] = 1.0  # base at the origin, identity orientation: world frame == pelvis frame
    data.qpos[robot.qpos_adr] = home
    mujoco.mj_kinematics(model, data)
    feet = robot.foot_body_ids
    home_pos, home_mat = data.xpos[feet].copy(), data.xmat[feet].reshape(-1, 3, 3).copy()
    legs = [[i for i, n in enumerate(names) if n.startswith(f"{side}_") and _is_leg(n)] for side in SIDES]
    times = np.arange(round(cfg.duration * cfg.fps) + 1) / cfg.fps
    joint_pos = np.tile(home, (len(times), 1))
    strides = [foot_targets(cfg, times, offset) for offset in (0.0, 0.5)]
    worst = 0.0
    for t in range(len(times)):
        for side, leg in enumerate(legs):
            dx, dz = strides[side][0][t], strides[side][1][t]
            target = home_pos[side] + np.array([dx, 0.0, dz])
            error = solve_leg(model, data, feet[side], robot.dof_adr[leg], robot.qpos_adr[leg], target, home_mat[side])
            worst = max(worst, error)
        joint_pos[t] = data.qpos[robot.qpos_adr]
    if worst > 1e-3:
        raise ValueError(f"the walk's feet are out of the legs' reach by {worst:.3f} m: lower --speed or --step_height")
    half_stride = max(cfg.speed * cfg.duty * cfg.period / 2, 1e-9)
    for side, other in ((0, 1), (1, 0)):  # an arm swings forward (negative pitch) as the other leg does
        shoulder = f"{SIDES[side]}_shoulder_pitch_joint"
        if shoulder in names:
            i = names.index(shoulder)
            joint_pos[:, i] = home[i] - cfg.arm_swing * strides[other][0] / half_stride
    joint_vel = np.asarray(np.gradient(joint_pos, 1.0 / cfg.fps, axis=0))
    frames = len(times)
    return MotionClip(
        name="g1_walk",
        fps=cfg.fps,
        joint_pos=joint_pos,
        joint_vel=joint_vel,
        base_lin_vel=np.tile([cfg.speed, 0.0, 0.0], (frames, 1)),
        base_ang_vel=np.zeros((frames, 3)),
        foot_pos=foot_positions(model, robot, joint_pos),
    )


def _is_leg(joint: str) -> bool:
    return any(part in joint for part in ("_hip_", "_knee", "_ankle_"))
