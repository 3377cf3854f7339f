"""Explicit actuator models: the torque of the joints they drive, computed in torch at every physics step.

A joint no ``env.robot.actuators`` group names is driven by a MuJoCo position servo (its PD integrated implicitly by
the solver, inside the backend's physics steps). A joint a group names has its actuator turned into a torque motor
(``robolab.assets.loader.drive_by_torque``) and the env steps the physics one step at a time, asking
``ExplicitActuators.controls`` for the torques from the state reached (Isaac Lab's and mjlab's explicit actuators):

- ``ideal_pd``: ``clip(kp e - kd qdot, +-limit)``, ``e`` the target minus the position;
- ``dc_motor``: the PD torque clipped to the motor's torque-speed line (Isaac Lab's ``DCMotor``);
- ``network``: a TorchScript MLP over each joint's histories of position error and velocity (Isaac Lab's
  ``ActuatorNetMLP``).

Each takes per-env, per-joint scales that ``randomize_actuators`` draws: ``kp_scale`` and ``kd_scale`` (the PD
models' gains), ``effort_scale`` (the torque limit) and ``strength_scale`` (the whole torque, limit included), so
the torque is ``strength * clip(torque, limits * effort_scale)``, as on the servos.
"""

from __future__ import annotations

import os

import numpy as np
import torch

from robolab.assets import RobotCfg, RobotModel
from robolab.assets.robot_cfg import ActuatorCfg

SCALES = ("kp_scale", "kd_scale", "strength_scale", "effort_scale")


class ActuatorGroup:
    """The joints ``ids`` (policy order) of one group, how their torque is computed, and the per-env scales
    ``randomize_actuators`` drew for them (num_envs, joints of the group; 1: nominal)."""

    def __init__(
        self, cfg: ActuatorCfg, ids: np.ndarray, kp: torch.Tensor, kd: torch.Tensor, limit: torch.Tensor, num_envs: int
    ):
        self.cfg = cfg
        self.ids = ids
        self.kp, self.kd, self.limit = kp, kd, limit
        self.scales = {name: torch.ones(num_envs, len(ids), device=limit.device) for name in SCALES}

    def pd(self, error: torch.Tensor, vel: torch.Tensor, scales: dict[str, torch.Tensor]) -> torch.Tensor:
        return self.kp * scales["kp_scale"] * error - self.kd * scales["kd_scale"] * vel

    def torque(
        self, error: torch.Tensor, vel: torch.Tensor, scales: dict[str, torch.Tensor], limit: torch.Tensor
    ) -> torch.Tensor:
        """The torque before the strength scale, within ``+-limit`` (the scaled torque limit)."""
        return torch.clamp(self.pd(error, vel, scales), -limit, limit)

    def reset(self, mask: torch.Tensor) -> None:
        """Forget what the envs of ``mask`` remember of their last episode (nothing, for a memoryless model)."""


class DCMotorGroup(ActuatorGroup):
    """Joints driven by a DC motor model: PD torque clipped by the torque-speed curve."""

    def __init__(
        self, cfg: ActuatorCfg, ids: np.ndarray, kp: torch.Tensor, kd: torch.Tensor, limit: torch.Tensor, num_envs: int
    ):
        super().__init__(cfg, ids, kp, kd, limit, num_envs)
        self.saturation = (
            limit.clone() if cfg.saturation_effort is None else torch.full_like(limit, cfg.saturation_effort)
        )

    def torque(self, error, vel, scales, limit):
        if self.cfg.velocity_limit is None:
            return super().torque(error, vel, scales, limit)
        # The torque-speed line: the stall torque at rest, none at the no-load speed; braking at any speed.
        speed = vel / self.cfg.velocity_limit
        upper = torch.clamp(self.saturation * (1.0 - speed), torch.zeros_like(limit), limit)
        lower = torch.clamp(self.saturation * (-1.0 - speed), -limit, torch.zeros_like(limit))
        return torch.clamp(self.pd(error, vel, scales), lower, upper)


class NetworkGroup(ActuatorGroup):
    """Joints driven by an actuator network: a TorchScript model mapping recent position errors and velocities to
    torque."""

    def __init__(
        self,
        cfg: ActuatorCfg,
        ids: np.ndarray,
        kp: torch.Tensor,
        kd: torch.Tensor,
        limit: torch.Tensor,
        num_envs: int,
        key: str,
    ):
        super().__init__(cfg, ids, kp, kd, limit, num_envs)
        self.network = load_network(cfg.network_path or "", limit.device, key)
        self.steps = torch.as_tensor(list(cfg.input_idx), device=limit.device)
        depth = int(max(cfg.input_idx)) + 1
        self.error_history = torch.zeros(num_envs, len(ids), depth, device=limit.device)
        self.vel_history = torch.zeros_like(self.error_history)
        inputs = 2 * len(cfg.input_idx)
        try:
            with torch.no_grad():
                out = self.network(torch.zeros(len(ids), inputs, device=limit.device))
        except RuntimeError as err:
            last = str(err).strip().splitlines()[-1]
            raise ValueError(
                f"{key}.network_path={cfg.network_path!r}: the network does not take ({len(ids)}, {inputs}) inputs "
                f"(2 x {len(cfg.input_idx)} steps of input_idx per joint): {last}"
            ) from None
        if not (isinstance(out, torch.Tensor) and out.shape in ((len(ids), 1), (len(ids),))):
            shape = tuple(out.shape) if isinstance(out, torch.Tensor) else type(out).__name__
            raise ValueError(
                f"{key}.network_path={cfg.network_path!r}: the network maps ({len(ids)}, {inputs}) inputs to {shape}; "
                f"an actuator network gives one torque per joint: ({len(ids)}, 1)"
            )

    def torque(self, error, vel, scales, limit):
        # Newest first: step k back is column k.
        self.error_history = torch.cat([error[..., None], self.error_history[..., :-1]], dim=-1)
        self.vel_history = torch.cat([vel[..., None], self.vel_history[..., :-1]], dim=-1)
        pos_in = self.error_history[..., self.steps] * self.cfg.pos_scale
        vel_in = self.vel_history[..., self.steps] * self.cfg.vel_scale
        pair = (pos_in, vel_in) if self.cfg.input_order == "pos_vel" else (vel_in, pos_in)
        inputs = torch.cat(pair, dim=-1)  # (num_envs, joints, 2 * steps): the network sees one joint per row
        with torch.no_grad():
            out = self.network(inputs.view(-1, inputs.shape[-1])).view(error.shape)
        return torch.clamp(out * self.cfg.torque_scale, -limit, limit)

    def reset(self, mask: torch.Tensor) -> None:
        rows = mask[:, None, None]  # masked_fill, not a multiply: a diverged env's history is NaN
        self.error_history = self.error_history.masked_fill(rows, 0.0)
        self.vel_history = self.vel_history.masked_fill(rows, 0.0)


def load_network(path: str, device: torch.device, key: str) -> torch.jit.ScriptModule:
    """Load a TorchScript actuator network (one-line errors naming ``key`` for a missing or unreadable file)."""
    if not os.path.isfile(path):
        raise ValueError(f"{key}.network_path={path!r}: no such file (a TorchScript actuator network)")
    try:
        network = torch.jit.load(path, map_location=device)
    except (RuntimeError, ValueError) as err:
        first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise ValueError(f"{key}.network_path={path!r}: not a TorchScript file ({first})") from None
    return network.eval()


class ExplicitActuators:
    """Every explicit actuator group of the robot; ``controls`` turns PD targets into the backend's controls (the
    groups' joints get torques, the servos keep their targets)."""

    def __init__(self, robot: RobotModel, robot_cfg: RobotCfg, num_envs: int, device: torch.device):
        kp_all, kd_all = (torch.tensor(v, dtype=torch.float32, device=device) for v in robot_cfg.gains())
        limits = torch.as_tensor(robot.effort_limits, dtype=torch.float32, device=device)
        self.groups: list[ActuatorGroup] = []
        for name, ids in robot.actuator_groups.items():
            cfg = robot_cfg.actuators[name]
            idx = torch.as_tensor(ids, device=device)
            args = (cfg, ids, kp_all[idx], kd_all[idx], limits[idx], num_envs)
            if cfg.model == "dc_motor":
                self.groups.append(DCMotorGroup(*args))
            elif cfg.model == "network":
                self.groups.append(NetworkGroup(*args, key=f"env.robot.actuators.{name}"))
            else:
                self.groups.append(ActuatorGroup(*args))
        self.index = [torch.as_tensor(g.ids, device=device) for g in self.groups]
        self.joints = np.sort(np.concatenate([g.ids for g in self.groups])) if self.groups else np.zeros(0, np.int64)
        """Policy-order indices of every joint an explicit model drives."""
        self.num_envs, self.num_joints, self.device = num_envs, len(robot_cfg.joint_names), device

    def controls(self, targets: torch.Tensor, joint_pos: torch.Tensor, joint_vel: torch.Tensor) -> torch.Tensor:
        """(num_envs, joints) controls: the torque of each explicitly driven joint, the target of every other."""
        out = targets.clone()
        for group, idx in zip(self.groups, self.index):
            scales = group.scales
            limit = group.limit * scales["effort_scale"]
            error = targets[:, idx] - joint_pos[:, idx]
            out[:, idx] = scales["strength_scale"] * group.torque(error, joint_vel[:, idx], scales, limit)
        return out

    def reset(self, mask: torch.Tensor) -> None:
        for group in self.groups:
            group.reset(mask)

    def set_scale(self, name: str, joints: np.ndarray, per_env: torch.Tensor) -> None:
        """Set scale ``name`` of the policy-order ``joints`` (each driven by an explicit model) to ``per_env``
        (num_envs, len(joints)): into the columns of the groups that drive them, which the step reads as they are."""
        for group in self.groups:
            column_of = {int(joint): column for column, joint in enumerate(group.ids)}
            inside = [k for k, joint in enumerate(joints) if int(joint) in column_of]
            if inside:
                columns = torch.as_tensor([column_of[int(joints[k])] for k in inside], device=self.device)
                group.scales[name][:, columns] = per_env[:, torch.as_tensor(inside, device=per_env.device)].to(
                    self.device
                )

    def scale(self, name: str) -> torch.Tensor:
        """Scale ``name`` of every joint of the robot (num_envs, joints): the groups' draws, 1 for a servo's joint
        (its draws live in the servo's model arrays)."""
        full = torch.ones(self.num_envs, self.num_joints, device=self.device)
        for group, idx in zip(self.groups, self.index):
            full[:, idx] = group.scales[name]
        return full

    def model_of(self, joint: int) -> str | None:
        """The explicit model driving policy-order ``joint``, None for a servo."""
        for group in self.groups:
            if joint in group.ids:
                return group.cfg.model
        return None
