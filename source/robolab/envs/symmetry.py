"""Left-right mirror symmetry of an embedded task, for rsl_rl's symmetry extension (data augmentation and the mirror
loss, Mittal et al. 2024): its ``data_augmentation_func`` is ``robolab.envs.symmetry:mirror_augmentation``.

Nothing is written per robot. The joints' partners come from their names (``left_``/``right_``, ``FL``/``FR``,
``RL``/``RR``, ``L_``/``R_``, ``Left``/``Right``), and whether a joint's angle changes sign in the mirror from its
axis in the model's rest pose: reflecting the world through the robot's x-z plane turns a rotation about x or z
(roll, yaw) the other way and keeps one about y (pitch). Each observation term mirrors by what it is (a vector, an
angular velocity, the command, a joint or foot vector, the height scan's grid, a drawn physics parameter); a term of
a user's own says so in ``ObsTermCfg.mirror``. Each group's mirror is then one gather and one multiply.
"""

from __future__ import annotations

import re
from typing import Any

import mujoco
import numpy as np
import torch

MIRROR_KINDS = ("invariant", "vector", "angular", "command", "joints", "joint_values", "feet", "tilt")
"""How a term's columns mirror: unchanged; a vector (y flips); an angular velocity (x and z flip); the velocity
command (vx, vy, yaw rate: the last two flip); one signed value per joint; one unsigned value per joint (a gain
scale); one value per foot; a tilt (roll, pitch: roll flips)."""

_BY_FUNC = {
    "base_lin_vel": "vector",
    "projected_gravity": "vector",
    "imu_projected_gravity": "vector",
    "base_ang_vel": "angular",
    "imu_ang_vel": "angular",
    "generated_commands": "command",
    "joint_pos_rel": "joints",
    "joint_vel": "joints",
    "last_action": "joints",
    "foot_contact": "feet",
}
_BY_PHYSICS_PARAM = {
    "friction": "invariant",
    "added_base_mass": "invariant",
    "action_delay": "invariant",
    "foot_friction": "feet",
    "kp_scale": "joint_values",
    "kd_scale": "joint_values",
    "strength_scale": "joint_values",
    "effort_scale": "joint_values",
    "joint_friction": "joint_values",
    "joint_damping": "joint_values",
    "armature_scale": "joint_values",
    "base_com_offset": "vector",
    "imu_gyro_bias": "angular",
    "imu_tilt": "tilt",
}
_SIDE = re.compile(
    r"(?<![a-z])(left|right)|(?<![A-Za-z])(Left|Right|LEFT|RIGHT)|(?<![A-Za-z])([FRHM]?)([LR])(?=_|\d|$)"
)
_SWAP = {
    "left": "right",
    "right": "left",
    "Left": "Right",
    "Right": "Left",
    "LEFT": "RIGHT",
    "RIGHT": "LEFT",
    "L": "R",
    "R": "L",
}


def mirror_name(name: str) -> str:
    """``name`` with its side swapped (``FL_hip_joint`` -> ``FR_hip_joint``, ``left_knee`` -> ``right_knee``); a name
    of neither side (``waist_yaw_joint``) is its own mirror."""

    def swap(match: re.Match) -> str:
        word = match.group(1) or match.group(2)
        if word:
            return _SWAP[word]
        return match.group(3) + _SWAP[match.group(4)]

    return _SIDE.sub(swap, name)


def partners(names: list[str], what: str) -> list[int]:
    """The index of each name's mirror image in ``names``; a missing one is a one-line error."""
    index = {name: i for i, name in enumerate(names)}
    missing = [f"{name} -> {mirror_name(name)}" for name in names if mirror_name(name) not in index]
    if missing:
        raise ValueError(f"symmetry: {what} without a mirror image among them: {', '.join(missing)}")
    return [index[mirror_name(name)] for name in names]


def joint_signs(model: mujoco.MjModel, joints: list[str], partner: list[int]) -> np.ndarray:
    """+1 where a joint's angle keeps its sign in the mirror, -1 where it flips, from the joints' world axes at
    rest: the mirror image of joint i's axis (a rotation axis reflects as -M a, M = diag(1, -1, 1)) must be joint
    partner(i)'s axis or its opposite."""
    data = mujoco.MjData(model)
    mujoco.mj_forward(model, data)
    axes = np.array([data.xaxis[model.joint(name).id] for name in joints])
    reflected = -axes * np.array([1.0, -1.0, 1.0])
    cosine = np.einsum("ij,ij->i", reflected, axes[partner])
    bad = [f"{joints[i]} ~ {joints[partner[i]]}" for i in np.flatnonzero(np.abs(cosine) < 0.99)]
    if bad:
        raise ValueError(f"symmetry: joints whose axes are not mirror images at rest: {', '.join(bad)}")
    return np.sign(cosine)


class Mirror:
    """The mirror of one env's observation groups and actions, built once (``Mirror.of(env)``)."""

    def __init__(self, env):
        cfg, robot = env.cfg, env.robot
        joints, feet = list(cfg.robot.joint_names), list(cfg.robot.foot_bodies)
        self.env = env
        self.joint_partner = partners(joints, "joints")
        self.joint_sign = joint_signs(robot.model, joints, self.joint_partner)
        default = np.asarray(cfg.robot.default_joint_pos)
        if not np.allclose(default[self.joint_partner] * self.joint_sign, default, atol=1e-6):
            raise ValueError(
                "symmetry: env.robot.default_joint_pos is not its own mirror image (joint_pos_rel would not mirror)"
            )
        self.foot_partner = partners(feet, "feet") if feet else []
        device = env.device
        self.actions_index = torch.as_tensor(self.joint_partner, device=device)
        self.actions_sign = torch.as_tensor(self.joint_sign, dtype=torch.float32, device=device)
        self.groups: dict[str, tuple[torch.Tensor, torch.Tensor]] = {}
        for name in env.observation_groups.names:
            self.groups[name] = self._group(name)

    @staticmethod
    def of(env) -> Mirror:
        env = getattr(env, "unwrapped", env)
        mirror = env.term_cache.get("mirror")
        if mirror is None:
            mirror = env.term_cache["mirror"] = Mirror(env)
        return mirror

    def _group(self, name: str) -> tuple[torch.Tensor, torch.Tensor]:
        """(index, sign) over the group's columns: mirrored[:, c] = obs[:, index[c]] * sign[c]."""
        groups = self.env.observation_groups
        index, sign, offset = [], [], 0
        for term, width in zip(groups.terms(name), groups.widths[name]):
            frames = term.cfg.history_length
            term_index, term_sign = self._term(term, width // frames)
            for _ in range(frames):
                index.append(term_index + offset)
                sign.append(term_sign)
                offset += len(term_index)
        frame_index, frame_sign = np.concatenate(index), np.concatenate(sign)
        stacked = groups.group_cfg(name).history_length
        full_index = np.concatenate([frame_index + k * offset for k in range(stacked)])
        full_sign = np.tile(frame_sign, stacked)
        device = self.env.device
        return torch.as_tensor(full_index, device=device), torch.as_tensor(
            full_sign, dtype=torch.float32, device=device
        )

    def _term(self, term, width: int) -> tuple[np.ndarray, np.ndarray]:
        kind = self._kind(term)
        identity, ones = np.arange(width), np.ones(width)
        if kind == "invariant":
            return identity, ones
        if kind in ("vector", "angular", "command", "tilt"):
            signs = {"vector": [1, -1, 1], "angular": [-1, 1, -1], "command": [1, -1, -1], "tilt": [-1, 1]}[kind]
            if width != len(signs):
                raise ValueError(f"symmetry: {term.key} is {width} wide; a {kind!r} term has {len(signs)} columns")
            return identity, np.array(signs, dtype=float)
        if kind in ("joints", "joint_values"):
            self._check_width(term, width, len(self.joint_partner), "joints")
            sign = self.joint_sign if kind == "joints" else np.ones(width)
            return np.array(self.joint_partner), sign
        if kind == "feet":
            self._check_width(term, width, len(self.foot_partner), "feet")
            return np.array(self.foot_partner), ones
        return self._scan(term, width)  # "height_scan"

    def _kind(self, term) -> str:
        declared = getattr(term.cfg, "mirror", None)
        if declared is not None:
            if declared not in MIRROR_KINDS:
                raise ValueError(f"{term.key}.mirror={declared!r}: must be one of {', '.join(MIRROR_KINDS)}")
            return declared
        func = term.cfg.func if isinstance(term.cfg.func, str) else getattr(term.cfg.func, "__name__", "")
        func = func.rsplit(":", 1)[-1]
        if func == "physics_param":
            name = term.cfg.params.get("name")
            if name in _BY_PHYSICS_PARAM:
                return _BY_PHYSICS_PARAM[name]
            if isinstance(name, str) and name.endswith("_delay"):
                return "invariant"
        elif func == "height_scan":
            return "height_scan"
        elif func in _BY_FUNC:
            return _BY_FUNC[func]
        kinds = "|".join(MIRROR_KINDS)
        raise ValueError(f"symmetry: {term.key} ({func}) has no known mirror; declare it: {term.key}.mirror=<{kinds}>")

    def _scan(self, term, width: int) -> tuple[np.ndarray, np.ndarray]:
        """The scan grid's point at (x, -y) for each point (x, y): the grid is symmetric about the base's x axis."""
        from robolab.envs.mdp.observations import scan_pattern

        params = term.cfg.params
        pattern = scan_pattern(self.env, params.get("size", (1.6, 1.0)), params.get("resolution", 0.1)).cpu().numpy()
        self._check_width(term, width, len(pattern), "scan points")
        mirrored = pattern * np.array([1.0, -1.0])
        distance = np.abs(mirrored[:, None, :] - pattern[None, :, :]).sum(axis=-1)
        index = distance.argmin(axis=1)
        if not np.allclose(pattern[index], mirrored, atol=1e-5):
            raise ValueError(f"symmetry: {term.key}'s grid is not symmetric about the base's x axis")
        return index, np.ones(width)

    @staticmethod
    def _check_width(term, width: int, expected: int, what: str) -> None:
        if width != expected:
            raise ValueError(f"symmetry: {term.key} is {width} wide; it mirrors as one value per {what} ({expected})")

    def observations(self, obs: Any) -> Any:
        """Each group of ``obs`` (a TensorDict or dict of (batch, width) tensors) mirrored."""
        out = obs.clone() if hasattr(obs, "clone") else dict(obs)
        for name in obs.keys():  # noqa: SIM118 (a TensorDict iterates over its batch, not its keys)
            if name not in self.groups:
                raise ValueError(
                    f"symmetry: no mirror for the observation group {name!r} (have: {', '.join(self.groups)})"
                )
            index, sign = self.groups[name]
            out[name] = obs[name][..., index] * sign
        return out

    def actions(self, actions: torch.Tensor) -> torch.Tensor:
        return actions[..., self.actions_index] * self.actions_sign


def mirror_augmentation(env, obs=None, actions=None):
    """rsl_rl's ``data_augmentation_func``: the batch followed by its mirror image (observations and/or actions)."""
    mirror = Mirror.of(env)
    augmented_obs = None if obs is None else torch.cat([obs, mirror.observations(obs)], dim=0)
    augmented_actions = None if actions is None else torch.cat([actions, mirror.actions(actions)], dim=0)
    return augmented_obs, augmented_actions
