"""Sim2Sim: a policy trained in one simulator, run in another task's env through a mapping derived from both.

Each env states its policy interface (``PolicyInterface``): the ``policy`` group's terms in order with widths and
scales, the joints the action and the per-joint terms use, the action scale and offsets (default joint positions)
and the control period. The embedded env states it in ``io_descriptors()``; an Isaac Lab env through its managers
and config. ``MappedPolicy`` then turns the target env's observations into the source's (terms by name, joints by
name, scales undone and redone, joint positions re-referenced to the source's defaults, the source's own last
action) and the source's actions into the target's joint targets. Nothing is written per pair; what cannot be
mapped (a term or joint the target lacks, another control period, another observation history) is a one-line error
naming it.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from tensordict import TensorDict

JOINT_TERMS = ("joint_pos", "joint_vel", "actions")
"""Policy terms with one column per joint, in the interface's joint order."""


class Sim2SimError(ValueError):
    """What cannot be mapped between two envs; the message names it."""


@dataclass
class PolicyInterface:
    """What a policy reads and writes: its observation terms, joints, action scale, control step and history."""

    terms: list[tuple[str, int, float]]
    """(name, width, scale) of each ``policy`` term, in order."""
    joint_names: list[str]
    action_scale: torch.Tensor
    """Per joint, in ``joint_names`` order."""
    default_joint_pos: torch.Tensor
    """The action offset (and the reference of ``joint_pos``), per joint."""
    dt: float
    history: int = 1


def interface_of(task: str, env) -> PolicyInterface:
    """The policy interface of ``task``'s env, as the task's kind reads it."""
    from robolab import tasks

    return tasks.kind_of(task).policy_interface(env)


def embedded_interface(io: dict) -> PolicyInterface:
    """From an env's ``io_descriptors()`` (robolab's velocity env, or any env that states one)."""
    policy, actions = io["observations"]["policy"], io["actions"]
    joints = list(actions["joint_names"])
    return PolicyInterface(
        terms=[(t["name"], int(t["shape"][0]), float(t.get("scale", 1.0))) for t in policy["terms"]],
        joint_names=joints,
        action_scale=torch.full((len(joints),), float(actions["scale"])),
        default_joint_pos=torch.tensor(actions["offset"], dtype=torch.float32),
        dt=float(io["scene"]["dt"]),
        history=int(policy["history"]),
    )


def isaaclab_interface(base) -> PolicyInterface:
    """From an Isaac Lab manager-based env's observation and action managers."""
    manager = base.observation_manager
    names, dims = manager.active_terms["policy"], manager.group_obs_term_dim["policy"]
    group_cfg = base.cfg.observations.policy
    terms = []
    for name, dim in zip(names, dims, strict=True):
        scale = getattr(getattr(group_cfg, name), "scale", None)
        if scale is not None and not isinstance(scale, (int, float)):
            raise Sim2SimError(f"observation term {name!r}: a per-column scale cannot be mapped (only a number)")
        terms.append((name, int(dim[-1]), 1.0 if scale is None else float(scale)))
    robot = base.scene["robot"]
    action_cfg = base.cfg.actions.joint_pos
    if not isinstance(action_cfg.scale, (int, float)) or not getattr(action_cfg, "use_default_offset", False):
        raise Sim2SimError("actions.joint_pos: only a scalar scale around the default joint positions can be mapped")
    term = base.action_manager.get_term("joint_pos")
    joints = list(term._joint_names)  # Isaac Lab's resolved order of the action's joints
    all_joints = list(robot.joint_names)
    default = _torch(robot.data.default_joint_pos)[0].cpu()
    return PolicyInterface(
        terms=terms,
        joint_names=joints,
        action_scale=torch.full((len(joints),), float(action_cfg.scale)),
        default_joint_pos=torch.stack([default[all_joints.index(j)] for j in joints]).float(),
        dt=float(base.step_dt),
        history=int(getattr(group_cfg, "history_length", None) or 1),
    )


def describe(interface: PolicyInterface) -> dict:
    """The interface as plain data (the JSON of a Sim2Sim run records both sides' joints, terms and offsets)."""
    return {
        "terms": [{"name": n, "width": w, "scale": s} for n, w, s in interface.terms],
        "joint_names": interface.joint_names,
        "action_scale": [round(float(v), 6) for v in interface.action_scale],
        "default_joint_pos": [round(float(v), 6) for v in interface.default_joint_pos],
        "dt": interface.dt,
        "history": interface.history,
    }


def _torch(value) -> torch.Tensor:
    return getattr(value, "torch", value)


class MappedPolicy:
    """The source policy acting in the target env: target observations in, target actions out."""

    def __init__(self, policy, source: PolicyInterface, target: PolicyInterface, device: str | torch.device = "cpu"):
        check_compatible(source, target)
        self.policy, self.source, self.target = policy, source, target
        index = {name: i for i, name in enumerate(target.joint_names)}
        self.joint_index = torch.tensor([index[j] for j in source.joint_names], device=device)
        """Target column of each source joint."""
        self.source_default = source.default_joint_pos.to(device)
        self.target_default = target.default_joint_pos.to(device)[self.joint_index]
        self.source_scale = source.action_scale.to(device)
        self.target_scale = target.action_scale.to(device)[self.joint_index]
        self.slices = _slices(target.terms)
        self.last_action: torch.Tensor | None = None

    def source_observation(self, target_obs: torch.Tensor) -> torch.Tensor:
        parts = []
        for name, _, scale in self.source.terms:
            start, stop, target_scale = self.slices[name]
            value = target_obs[:, start:stop] / target_scale
            if name == "actions":  # the source's own previous action, not the target's encoding of it
                value = self.last_action if self.last_action is not None else torch.zeros_like(value)
            elif name in JOINT_TERMS:
                value = value[:, self.joint_index]
                if name == "joint_pos":  # relative to the target's defaults -> to the source's
                    value = value + self.target_default - self.source_default
            parts.append(value * scale)
        return torch.cat(parts, dim=1)

    def __call__(self, obs: TensorDict) -> torch.Tensor:
        source_obs = self.source_observation(obs["policy"])
        action = self.policy(TensorDict({"policy": source_obs}, batch_size=obs.batch_size))
        self.last_action = action.clone()
        joint_target = self.source_default + self.source_scale * action  # per source joint
        target_action = torch.zeros(action.shape[0], len(self.target.joint_names), device=action.device)
        target_action[:, self.joint_index] = (joint_target - self.target_default) / self.target_scale
        return target_action

    def reset(self, dones: torch.Tensor) -> None:
        """A new episode: no previous action, and a recurrent policy's memory cleared."""
        if self.last_action is not None:
            self.last_action[dones.bool()] = 0.0
        reset = getattr(self.policy, "reset", None)
        if reset is not None:
            reset(dones)


def _slices(terms: list[tuple[str, int, float]]) -> dict[str, tuple[int, int, float]]:
    slices, start = {}, 0
    for name, width, scale in terms:
        slices[name] = (start, start + width, scale)
        start += width
    return slices


def check_compatible(source: PolicyInterface, target: PolicyInterface) -> None:
    """One-line errors for what cannot be mapped."""
    if abs(source.dt - target.dt) > 1e-9:
        raise Sim2SimError(
            f"control period: the policy was trained at {source.dt:g} s per step, the target env steps {target.dt:g} s"
        )
    if source.history != target.history:
        raise Sim2SimError(
            f"observation history: the policy reads {source.history} frames, the target env gives {target.history} "
            f"(set the target's env.observations.policy.history_length={source.history})"
        )
    missing_joints = [j for j in source.joint_names if j not in target.joint_names]
    if missing_joints:
        raise Sim2SimError(f"joints {missing_joints} of the policy are not joints of the target env")
    target_terms = {name: width for name, width, _ in target.terms}
    for name, width, _ in source.terms:
        if name not in target_terms:
            raise Sim2SimError(
                f"observation term {name!r} of the policy is not in the target env's policy group "
                f"(it has {', '.join(target_terms)})"
            )
        expected = len(target.joint_names) if name in JOINT_TERMS else width
        if target_terms[name] != expected or (name in JOINT_TERMS and width != len(source.joint_names)):
            raise Sim2SimError(
                f"observation term {name!r}: width {width} for the policy, {target_terms[name]} in the target env"
            )


# --- judging a policy in an env -----------------------------------------------------------------------------
def foot_contact(env, feet: list[str], threshold_n: float = 1.0) -> torch.Tensor:
    """(num_envs, feet) bool: which feet touch the ground now, in either kind of env."""
    if hasattr(env, "foot_contact"):  # the embedded env keeps its own (its contact threshold)
        return env.foot_contact
    base = env.unwrapped
    sensor = base.scene["contact_forces"]
    ids, _ = sensor.find_bodies(feet, preserve_order=True)
    return torch.linalg.norm(_torch(sensor.data.net_forces_w)[:, ids], dim=-1) > threshold_n


def gait_patterns(*env_cfgs) -> tuple[dict[str, list[list[str]]], list[str]]:
    """The gait patterns both sides are scored on, and the feet they name: those of the first robolab env config
    among ``env_cfgs`` (its ``gaits`` and ``robot.foot_bodies``; an Isaac Lab task of the same robot names its feet
    alike); none when no config is robolab's."""
    from robolab.envs.velocity_env_cfg import VelocityEnvCfg

    for cfg in env_cfgs:
        if isinstance(cfg, VelocityEnvCfg):
            return dict(cfg.gaits or {}), list(cfg.robot.foot_bodies)
    return {}, []


def judge(env, policy, steps: int, gaits: dict[str, list[list[str]]], feet: list[str], desc: str = "judging") -> dict:
    """Tracking error and fall rate (``evaluation.evaluate``) and the share of steps showing each gait pattern."""
    from robolab import evaluation
    from robolab.envs.gaits import GaitScores

    scores = GaitScores(gaits, feet, torch.device(env.device))
    totals = torch.zeros(len(scores.names), device=env.device)

    def count(e, _errors) -> None:
        nonlocal totals
        totals = totals + scores(foot_contact(e, feet)).float().mean(dim=0)

    result = evaluation.evaluate(env, policy, steps, on_step=count, desc=desc)
    result["gait_scores"] = {name: round(float(v) / steps, 4) for name, v in zip(scores.names, totals, strict=True)}
    return result


PERTURBATIONS = ("latency_ms", "kp_scale", "kd_scale", "strength_scale", "friction", "added_mass", "obs_noise_scale")
"""What ``scripts/sim2sim.py`` can do to the target env beyond its own settings (the robustness table's axes)."""


def perturbation_overrides(values: dict, target_cfg, task_kind: str) -> list[str]:
    """Hydra overrides of an embedded target env for the perturbations set in ``values`` (None: left alone):
    ``latency_ms`` (an action delay, a whole number of control steps), ``kp_scale``/``kd_scale``/``strength_scale``
    (every joint's PD gains and motor strength), ``friction`` (every contact's), ``added_mass`` (kg on the base),
    ``obs_noise_scale`` (the policy's observation noise on, each term's scaled). Built on the realism terms
    (docs/sim2real.md), fixed ranges: every env gets the same perturbation."""
    chosen = {name: values[name] for name in PERTURBATIONS if values.get(name) is not None}
    if not chosen:
        return []
    if task_kind != "embedded":
        raise Sim2SimError(f"--{next(iter(chosen))}: perturbations apply to an embedded target (MuJoCo C or Warp)")
    for name, value in chosen.items():
        if name != "added_mass" and value < 0:
            raise Sim2SimError(f"--{name}={value:g}: must be >= 0")

    def event(name: str, func: str, mode: str, params: dict[str, float]) -> str:
        ranges = ", ".join(f"{key}: [{value}, {value}]" for key, value in params.items())
        return f"env.events.{name}={{func: {func}, mode: {mode}, params: {{{ranges}}}}}"

    overrides = []
    if "latency_ms" in chosen:
        steps = chosen["latency_ms"] / 1000.0 / target_cfg.step_dt
        if abs(steps - round(steps)) > 1e-6:
            period = target_cfg.step_dt * 1000.0
            raise Sim2SimError(
                f"--latency_ms={chosen['latency_ms']:g}: must be a whole number of control periods ({period:g} ms)"
            )
        overrides.append(event("perturb_latency", "randomize_action_delay", "reset", {"steps_range": round(steps)}))
    gains = {k: chosen[k] for k in ("kp_scale", "kd_scale", "strength_scale") if k in chosen}
    if gains:
        overrides.append(event("perturb_actuators", "randomize_actuators", "startup", gains))
    if "friction" in chosen:
        overrides.append(
            event("physics_material", "randomize_friction", "startup", {"friction_range": chosen["friction"]})
        )
    if "added_mass" in chosen:
        overrides.append(event("add_base_mass", "randomize_base_mass", "startup", {"mass_range": chosen["added_mass"]}))
    if "obs_noise_scale" in chosen:
        overrides.append("env.observations.policy.enable_corruption=true")
        for name, term in target_cfg.observations["policy"].terms.items():
            if term.noise:
                overrides.append(f"env.observations.policy.terms.{name}.noise={term.noise * chosen['obs_noise_scale']}")
    return overrides
