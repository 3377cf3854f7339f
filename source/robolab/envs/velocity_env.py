"""Velocity-tracking locomotion env: the MDP in torch over a ``PhysicsBackend``; an rsl_rl ``VecEnv``."""

from __future__ import annotations

import math

import torch
from tensordict import TensorDict

from robolab.amp.features import amp_features, check_terms
from robolab.envs import mdp
from robolab.envs.backends import make_backend, resolve_name
from robolab.envs.math import heading, quat_rotate, wrap_to_pi, yaw_quat
from robolab.envs.velocity_env_cfg import VelocityEnvCfg, check_ranges
from robolab.envs.velocity_terms import POLICY_TERMS, PRIVILEGED_TERMS, REWARD_TERMS, GaitScores
from robolab.rsl_rl_api import VecEnv


class PhysicsDivergedError(ValueError):
    """Most envs diverge: a physics setting that cannot work. The message names the likely settings."""


def likely_culprits(cfg: VelocityEnvCfg) -> str:
    """The physics settings of ``cfg`` that differ from its task's defaults, the usual cause of divergence."""
    default = type(cfg)()
    keys = (
        "sim_dt",
        "decimation",
        "action_scale",
        "robot.mjcf_path",
        "robot.stiffness",
        "robot.damping",
        "robot.torque_limits",
        "backend.name",
    )
    changed = []
    for key in keys:
        ours, theirs = cfg, default
        for part in key.split("."):
            ours, theirs = getattr(ours, part), getattr(theirs, part)
        if key == "backend.name":  # the default (auto) stands for the backend it picks on this device
            theirs = resolve_name(str(theirs), cfg.device)
        if ours != theirs:
            changed.append(f"env.{key}={ours} (the task's default is {theirs})")
    if not changed:
        return "no physics setting differs from the task's defaults: check the robot model and its solver options"
    return "likely " + "; ".join(changed)


class VelocityEnv(VecEnv):
    """Flat-ground velocity tracking for a legged robot, in the spirit of Isaac Lab's flat velocity task."""

    def __init__(self, cfg: VelocityEnvCfg):
        if cfg.num_envs <= 0:
            raise ValueError(f"num_envs={cfg.num_envs}: must be a positive integer")
        if cfg.amp_terms:
            check_terms(cfg.amp_terms)
        if cfg.policy_history < 1:
            raise ValueError(f"env.policy_history={cfg.policy_history}: must be >= 1")
        check_ranges(cfg)
        if cfg.decimation <= 0 or not (math.isfinite(cfg.sim_dt) and cfg.sim_dt > 0):
            raise ValueError(f"env.decimation={cfg.decimation}, env.sim_dt={cfg.sim_dt}: both must be positive")
        self.cfg: VelocityEnvCfg = cfg
        self.num_envs = cfg.num_envs
        self.device = torch.device(cfg.device)
        self.step_dt = cfg.step_dt
        self.max_episode_length = math.ceil(cfg.episode_length_s / self.step_dt)

        self.backend = make_backend(cfg.backend, cfg.robot, cfg.sim_dt, cfg.num_envs, cfg.device)
        self.robot = self.backend.robot
        self.num_actions = len(cfg.robot.joint_names)
        self._qpos_adr = torch.as_tensor(self.robot.qpos_adr, device=self.device)
        self._dof_adr = torch.as_tensor(self.robot.dof_adr, device=self.device)
        self.default_joint_pos = torch.tensor(cfg.robot.default_joint_pos, device=self.device)
        limits = torch.as_tensor(self.robot.joint_limits, dtype=torch.float32, device=self.device)
        self._joint_lo, self._joint_hi = limits[:, 0], limits[:, 1]
        self._gravity = torch.tensor(mdp.GRAVITY_DIR, device=self.device)
        self._reward_scale = torch.tensor(
            [self._weight(t.weight) * self.step_dt for t in REWARD_TERMS], device=self.device
        )
        self.gait_scores = GaitScores(cfg.gaits or {}, list(cfg.robot.foot_bodies), self.device)
        self.generator = torch.Generator(device=self.device)
        self.generator.manual_seed(cfg.seed)

        self._allocate_buffers()
        self._randomise_physics()
        self._reset_envs(torch.ones(self.num_envs, dtype=torch.bool, device=self.device))
        self._refresh_state()
        self._noise_scale = self._policy_noise_scale()
        self._policy_history: torch.Tensor | None = None  # (N, history, frame), filled by the first observation
        self._obs = self._compute_observations()

    def _weight(self, field_name: str) -> float:
        if not hasattr(self.cfg.rewards, field_name):
            raise ValueError(
                f"reward weight env.rewards.{field_name} is not a field of {type(self.cfg.rewards).__name__}"
            )
        return float(getattr(self.cfg.rewards, field_name))

    def io_descriptors(self) -> dict:
        """What a deployment (or another simulator) must feed the policy and do with its actions, by name:
        the policy group's terms in order with widths and noise, the action's joints, scale and offsets, and
        the control rate (``--export_io_descriptors`` writes it to ``params/io_descriptors.yaml``)."""
        nz, robot = self.cfg.noise, self.cfg.robot
        policy = [
            {
                "name": term.name,
                "shape": [int(term.func(self).shape[1])],
                "noise_half_width": float(getattr(nz, term.noise)) if term.noise and nz.enabled else 0.0,
            }
            for term in POLICY_TERMS
        ]
        privileged = [{"name": t.name, "shape": [int(t.func(self).shape[1])]} for t in PRIVILEGED_TERMS]
        return {
            "observations": {
                "policy": {"terms": policy, "history": self.cfg.policy_history},
                "critic": {
                    "terms": [{k: v for k, v in t.items() if k != "noise_half_width"} for t in policy] + privileged
                },
            },
            "actions": {
                "type": "joint_position",
                "joint_names": list(robot.joint_names),
                "scale": float(self.cfg.action_scale),
                "offset": [float(v) for v in robot.default_joint_pos],
            },
            "articulation": {
                "joint_names": list(robot.joint_names),
                "stiffness": float(robot.stiffness),
                "damping": float(robot.damping),
                "torque_limits": [float(v) for v in robot.torque_limits],
            },
            "scene": {"physics_dt": float(self.cfg.sim_dt), "decimation": int(self.cfg.decimation), "dt": self.step_dt},
        }

    # --- rsl_rl VecEnv --------------------------------------------------------------------------------
    def get_observations(self) -> TensorDict:
        return self._obs

    def reset(self) -> TensorDict:
        """Start a fresh episode in every env (evaluating one checkpoint after another in the same env)."""
        self._reset_envs(torch.ones(self.num_envs, dtype=torch.bool, device=self.device))
        self._refresh_state()
        self._policy_history = None
        self._obs = self._compute_observations()
        return self._obs

    def step(self, actions: torch.Tensor) -> tuple[TensorDict, torch.Tensor, torch.Tensor, dict]:
        actions = actions.to(self.device).clamp(-self.cfg.clip_actions, self.cfg.clip_actions)
        self.actions = actions
        self.backend.step(self.default_joint_pos + self.cfg.action_scale * actions, self.cfg.decimation)

        non_finite = self.backend.non_finite
        self.prev_joint_vel = self.state.joint_vel
        self._refresh_state()
        # Diverged: non-finite, or finite but beyond any physical bound. Such an env is reset below, and its
        # state of this step reaches neither the rewards, the observations nor the AMP transitions.
        diverged = non_finite | self._out_of_bounds()
        self.episode_length_buf += 1
        self._update_commands()
        self.foot_contact = self.backend.contact_forces("foot") > self.cfg.terminations.contact_force_threshold
        self.first_contact = self._update_air_time(self.foot_contact)

        fell = self._fell() | diverged
        time_out = self.episode_length_buf >= self.max_episode_length
        rewards = self._compute_rewards(diverged)
        self._track_metrics(non_finite, diverged)
        self.episode_gait += self.gait_scores(self.foot_contact)

        dones = fell | time_out
        extras = {"time_outs": time_out & ~fell, "log": {}}
        if self.cfg.amp_terms:  # the state each env reached, before any reset below replaces it
            extras["amp_next"] = self._amp_state().masked_fill(diverged[:, None], 0.0)
        # Ended envs are reset by mask, every step, whether any ended or not: asking would wait for the GPU.
        self._log_episodes(extras["log"], dones, fell, non_finite, diverged)
        self._reset_envs(dones)
        self._refresh_state()
        self._apply_pushes()
        self.last_actions = actions.masked_fill(dones[:, None], 0.0)
        self._obs = self._compute_observations(dones)
        return self._obs, rewards, dones.long(), extras

    # --- buffers ----------------------------------------------------------------------------------------
    def _allocate_buffers(self) -> None:
        n, j, dev = self.num_envs, self.num_actions, self.device
        self.episode_length_buf = torch.zeros(n, dtype=torch.long, device=dev)
        self.actions = torch.zeros(n, j, device=dev)
        self.last_actions = torch.zeros(n, j, device=dev)
        self.commands = torch.zeros(n, 3, device=dev)
        self.heading_target = torch.zeros(n, device=dev)
        self.command_timer = torch.zeros(n, device=dev)
        self.push_timer = torch.zeros(n, device=dev)
        n_feet = len(self.cfg.robot.foot_bodies)
        self.feet_air_time = torch.zeros(n, n_feet, device=dev)
        self.last_air_time = torch.zeros(n, n_feet, device=dev)
        self.foot_contact = torch.zeros(n, n_feet, dtype=torch.bool, device=dev)
        self.first_contact = torch.zeros(n, n_feet, dtype=torch.bool, device=dev)
        # Per-env sums, one column per term: one kernel per step for all terms rather than one per term.
        self.episode_sums = torch.zeros(n, len(REWARD_TERMS), device=dev)  # weighted rewards, REWARD_TERMS order
        self.episode_tracking_error = torch.zeros(n, device=dev)
        self.episode_steps = torch.zeros(n, device=dev)  # steps actually run (episode_length_buf may start random)
        self.episode_gait = torch.zeros(n, len(self.gait_scores.names), device=dev)
        self.last_tracking_error = torch.zeros(n, device=dev)
        self._non_finite_total = torch.zeros((), dtype=torch.long, device=dev)  # on the device: no sync per step
        self._diverged_total = torch.zeros((), dtype=torch.long, device=dev)  # non-finite ones included
        self._diverged_window = torch.zeros((), dtype=torch.long, device=dev)
        self._window_steps = 0

    @property
    def non_finite_count(self) -> int:
        """Envs reset because their physics state went non-finite, since the start."""
        return int(self._non_finite_total)

    def _uniform(self, low, high, *shape) -> torch.Tensor:
        r = torch.rand(*shape, generator=self.generator, device=self.device)
        return low + (high - low) * r

    # --- state, commands, events -------------------------------------------------------------------------
    def _refresh_state(self) -> None:
        qpos = torch.nan_to_num(self.backend.qpos)  # diverged rows are zeroed here and reset this step
        qvel = torch.nan_to_num(self.backend.qvel)
        self.state = mdp.RobotState.from_generalised(qpos, qvel, self._qpos_adr, self._dof_adr, self._gravity)

    def _resample_commands(self, mask: torch.Tensor) -> None:
        """New commands for the envs in ``mask`` (drawn for every env, kept where ``mask``: no wait for the GPU)."""
        c, n = self.cfg.commands, self.num_envs
        cmd = torch.stack(
            [self._uniform(*c.lin_vel_x, n), self._uniform(*c.lin_vel_y, n), self._uniform(*c.ang_vel_z, n)], dim=1
        )
        standing = torch.rand(n, generator=self.generator, device=self.device) < c.standing_fraction
        cmd.masked_fill_(standing[:, None], 0.0)
        self.commands = torch.where(mask[:, None], cmd, self.commands)
        self.heading_target = torch.where(mask, self._uniform(*c.heading, n), self.heading_target)
        self.command_timer.masked_fill_(mask, c.resampling_time_s)

    def _update_commands(self) -> None:
        self.command_timer -= self.step_dt
        self._resample_commands(self.command_timer <= 0)
        c = self.cfg.commands
        if c.heading_command:
            moving = self.commands.abs().sum(dim=1) > 0  # standing envs keep a zero yaw rate
            error = wrap_to_pi(self.heading_target - heading(self.state.base_quat))
            yaw_rate = (c.heading_stiffness * error).clamp(c.ang_vel_z[0], c.ang_vel_z[1])
            self.commands[:, 2] = torch.where(moving, yaw_rate, self.commands[:, 2])

    def _update_air_time(self, contact: torch.Tensor) -> torch.Tensor:
        first_contact = (self.feet_air_time > 0) & contact
        self.feet_air_time += self.step_dt
        self.last_air_time = torch.where(first_contact, self.feet_air_time, self.last_air_time)
        self.feet_air_time = torch.where(contact, torch.zeros_like(self.feet_air_time), self.feet_air_time)
        return first_contact

    def _randomise_physics(self) -> None:
        """Startup randomisation of friction and base mass, one draw per physics variant, fixed for the run."""
        e, v = self.cfg.events, self.backend.num_variants
        nominal = float(self.robot.model.body_mass[self.robot.base_body_id])
        if nominal + e.added_base_mass[0] < 0.1 * nominal:  # a base this light makes the inertia singular
            raise ValueError(
                f"env.events.added_base_mass={list(e.added_base_mass)} would make the base body "
                f"{self.cfg.robot.base_body!r} ({nominal:.3g} kg) weigh {nominal + e.added_base_mass[0]:.3g} kg; "
                f"keep the low end above {-0.9 * nominal:.3g}"
            )
        if e.friction[0] < 0:
            raise ValueError(f"env.events.friction={list(e.friction)}: friction coefficients must be >= 0")
        friction, added_mass = self._uniform(*e.friction, v), self._uniform(*e.added_base_mass, v)
        self.backend.set_friction(friction)
        self.backend.set_added_base_mass(added_mass)
        self.friction = friction[self.backend.variant_of_env]
        self.added_base_mass = added_mass[self.backend.variant_of_env]

    def _reset_envs(self, mask: torch.Tensor) -> None:
        """Start new episodes in the envs of ``mask`` (states are drawn for every env and kept where ``mask``)."""
        e, n = self.cfg.events, self.num_envs
        nq = self.robot.model.nq
        qpos = torch.zeros(n, nq, device=self.device)
        qpos[:, 2] = self.cfg.robot.init_base_height
        qpos[:, 3:7] = yaw_quat(self._uniform(*e.reset_base_yaw, n))
        scale = self._uniform(*e.reset_joint_pos_scale, n, self.num_actions)
        joint_pos = torch.clamp(self.default_joint_pos * scale, self._joint_lo, self._joint_hi)
        qpos[:, self._qpos_adr] = joint_pos
        qvel = torch.zeros(n, self.robot.model.nv, device=self.device)
        qvel[:, :6] = self._uniform(-e.reset_base_vel, e.reset_base_vel, n, 6)
        self.backend.reset(mask, qpos, qvel)

        self.episode_length_buf.masked_fill_(mask, 0)
        for buf in (
            self.last_actions,
            self.feet_air_time,
            self.last_air_time,
            self.episode_sums,
            self.episode_tracking_error,
            self.episode_steps,
            self.episode_gait,
        ):
            buf.masked_fill_(mask.view(-1, *([1] * (buf.dim() - 1))), 0.0)
        self._resample_commands(mask)
        self.push_timer = torch.where(mask, self._uniform(*e.push_interval_s, n), self.push_timer)

    def _apply_pushes(self) -> None:
        self.push_timer -= self.step_dt
        due = self.push_timer <= 0
        e, n = self.cfg.events, self.num_envs
        push = self._uniform(-e.push_vel_xy, e.push_vel_xy, n, 2)
        world_vel = quat_rotate(self.state.base_quat, self.state.base_lin_vel)
        self.backend.set_base_velocity(due, world_vel[:, :2] + push)
        self.push_timer = torch.where(due, self._uniform(*e.push_interval_s, n), self.push_timer)

    # --- terminations, rewards, observations ---------------------------------------------------------
    def _fell(self) -> torch.Tensor:
        t = self.cfg.terminations
        body_contact = (self.backend.contact_forces("termination") > t.contact_force_threshold).any(dim=1)
        return body_contact | (self.state.base_pos[:, 2] < t.min_base_height)

    def _compute_rewards(self, diverged: torch.Tensor) -> torch.Tensor:
        """Every term of ``REWARD_TERMS``, weighted by ``weight * dt``, summed; per-term episode sums kept.

        A diverged env earns nothing (its terms would be garbage, possibly inf)."""
        terms = torch.stack([term.func(self) for term in REWARD_TERMS], dim=1)
        weighted = (torch.nan_to_num(terms) * self._reward_scale).masked_fill(diverged[:, None], 0.0)
        self.episode_sums += weighted
        return weighted.sum(dim=1)

    def _out_of_bounds(self) -> torch.Tensor:
        """(num_envs,) envs whose state left ``env.divergence``'s bounds this step."""
        d, s = self.cfg.divergence, self.state
        acc = (s.joint_vel - self.prev_joint_vel).abs() / self.step_dt
        return (
            (s.base_lin_vel.abs() > d.max_base_lin_vel).any(dim=1)
            | (s.base_ang_vel.abs() > d.max_base_ang_vel).any(dim=1)
            | (s.joint_vel.abs() > d.max_joint_vel).any(dim=1)
            | (acc > d.max_joint_acc).any(dim=1)
            | (s.base_pos.abs() > d.max_base_distance).any(dim=1)
            | (
                (s.joint_pos < self._joint_lo - d.joint_limit_margin)
                | (s.joint_pos > self._joint_hi + d.joint_limit_margin)
            ).any(dim=1)
        )

    def _track_metrics(self, non_finite: torch.Tensor, diverged: torch.Tensor) -> None:
        error = mdp.lin_vel_tracking_error(self.commands, self.state.base_lin_vel).masked_fill(diverged, 0.0)
        self.last_tracking_error = error
        self.episode_tracking_error += error
        self.episode_steps += 1
        self._non_finite_total += non_finite.sum()
        count = diverged.sum()
        self._diverged_total += count
        self._diverged_window += count
        self._window_steps += 1
        if self._window_steps >= self.cfg.divergence.check_every:
            self._check_divergence_window()

    def _check_divergence_window(self) -> None:
        """Stop when most env steps of the window diverged: the physics settings cannot work (one sync per window)."""
        d = self.cfg.divergence
        share = float(self._diverged_window) / (self.num_envs * self._window_steps)
        steps = self._window_steps
        self._diverged_window.zero_()
        self._window_steps = 0
        if share > d.stop_fraction:
            raise PhysicsDivergedError(
                f"the physics diverged in {share:.0%} of env steps over the last {steps} control steps "
                f"(beyond env.divergence bounds, or non-finite): {likely_culprits(self.cfg)}"
            )

    def _log_episodes(
        self, log: dict, done: torch.Tensor, fell: torch.Tensor, non_finite: torch.Tensor, diverged: torch.Tensor
    ) -> None:
        """Means over the episodes that ended this step, and counts of how they ended.

        Every value is a 0-dim tensor, NaN when no episode ended: the logger leaves those steps out, so a value
        averages over the steps where episodes ended, and nothing here waits for the GPU to know whether any did.
        """
        steps = self.episode_steps.clamp_min(1)[:, None]
        per_episode = torch.cat(  # (num_envs, values): one weighted sum gives every mean at once
            [
                self.episode_sums / self.cfg.episode_length_s,
                self.episode_tracking_error[:, None] / steps,
                fell[:, None].float(),
                self.episode_gait / steps,
            ],
            dim=1,
        )
        count = done.sum()
        nan = torch.full((), float("nan"), device=self.device)
        means = torch.where(count > 0, done.float() @ per_episode / count.clamp_min(1), nan).unbind()
        names = [
            *(f"Episode_Reward/{term.name}" for term in REWARD_TERMS),
            "Metrics/lin_vel_tracking_error",
            "Metrics/fall_rate",
            *(f"Gait/{name}_score" for name in self.gait_scores.names),
        ]
        log.update(zip(names, means))
        ended = torch.stack([fell, ~fell, non_finite, diverged]) & done
        counts = torch.where(count > 0, ended.sum(dim=1).float(), nan).unbind()
        kinds = ("fell", "time_out", "non_finite", "diverged")
        log.update({f"Episode_Termination/{kind}": value for kind, value in zip(kinds, counts)})
        log["Metrics/non_finite_total"] = torch.where(count > 0, self._non_finite_total.float(), nan)
        log["Metrics/diverged_total"] = torch.where(count > 0, self._diverged_total.float(), nan)

    def _policy_noise_scale(self) -> torch.Tensor | None:
        """Half-width of the uniform noise on each column of a policy frame, or None without noise."""
        nz = self.cfg.noise
        widths = [
            torch.full(
                (term.func(self).shape[1],), float(getattr(nz, term.noise)) if term.noise else 0.0, device=self.device
            )
            for term in POLICY_TERMS
        ]
        scale = torch.cat(widths)
        return scale if nz.enabled and bool(scale.any()) else None

    def _compute_observations(self, reset: torch.Tensor | None = None) -> TensorDict:
        """``policy``: noisy proprioception (optionally a history); ``critic`` and ``teacher``: noise-free plus
        privileged terms (the same tensor: the teacher of a distillation run sees what a PPO critic sees)."""
        clean = torch.cat([term.func(self) for term in POLICY_TERMS], dim=1)
        frame = clean
        if self._noise_scale is not None:  # one draw for the whole frame: uniform in [-scale, scale] per column
            frame = clean + self._noise_scale * (
                2.0 * torch.rand(clean.shape, generator=self.generator, device=self.device) - 1.0
            )
        critic = torch.cat([clean, *(term.func(self) for term in PRIVILEGED_TERMS)], dim=1)
        groups = {"policy": self._stack_history(frame, reset), "critic": critic, "teacher": critic}
        if self.cfg.amp_terms:
            groups["amp"] = self._amp_state()
        return TensorDict(groups, batch_size=[self.num_envs], device=self.device)

    def _amp_state(self) -> torch.Tensor:
        s = self.state
        return amp_features(
            self.cfg.amp_terms,
            joint_pos=s.joint_pos,
            joint_vel=s.joint_vel,
            base_lin_vel=s.base_lin_vel,
            base_ang_vel=s.base_ang_vel,
            foot_pos=torch.nan_to_num(self.backend.foot_positions),
        )

    def _stack_history(self, frame: torch.Tensor, reset: torch.Tensor | None) -> torch.Tensor:
        history = self.cfg.policy_history
        if history == 1:
            return frame
        flat = frame[:, None].expand(-1, history, -1)
        if self._policy_history is None:
            self._policy_history = flat.clone()
        else:
            self._policy_history = torch.cat([self._policy_history[:, 1:], frame[:, None]], dim=1)
            if reset is not None:  # a new episode starts with a full, flat history
                self._policy_history = torch.where(reset[:, None, None], flat, self._policy_history)
        return self._policy_history.flatten(1)

    def close(self) -> None:
        self.backend.close()
