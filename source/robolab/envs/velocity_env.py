"""The MDP loop over a ``PhysicsBackend``, an rsl_rl ``VecEnv``: actions -> physics -> terms -> resets.

What the task computes is its env config's term tables (``robolab.envs.terms``); this class only runs them, in a
fixed order each control step:

1. the action becomes PD targets, held for ``decimation`` physics steps (by MuJoCo's servos, or by explicit actuator
   models computing torques at each physics step: ``robolab.envs.actuators``);
2. the state is read, diverged envs are found (``DivergenceGuard``), command terms update, foot contacts and air
   times are tracked;
3. termination terms decide which episodes end, reward terms are weighted by ``weight * dt`` and summed;
4. ended envs are reset by mask: curriculum terms, then reset events, then commands and interval timers;
5. interval events fire where their timers ran out, and the observation groups are computed.

Every term is bound and checked once, here, before the first step: a term that cannot work is a one-line error
naming it. Nothing in a step waits for the GPU: masks replace lists of env ids, episode statistics are NaN-masked
means, and divergence is counted on the device and checked once per window.
"""

from __future__ import annotations

import math

import torch
from tensordict import TensorDict

from robolab.distributed import check_compile_workers
from robolab.envs.actuators import ExplicitActuators
from robolab.envs.backends import make_backend
from robolab.envs.backends.base import PhysicsBackend
from robolab.envs.captured_step import StepGraph
from robolab.envs.delay import DelayLine
from robolab.envs.divergence import DivergenceGuard, PhysicsDivergedError, likely_culprits
from robolab.envs.gaits import GaitScores
from robolab.envs.io_descriptors import io_descriptors
from robolab.envs.mdp import kernels
from robolab.envs.observation_groups import ObservationGroups
from robolab.envs.state import GRAVITY_DIR, RobotState
from robolab.envs.terms import (
    EVENT_MODES,
    BoundTerm,
    CommandTermCfg,
    CurriculumTermCfg,
    EventTermCfg,
    ObsGroupCfg,
    ObsTermCfg,
    RewardTermCfg,
    TermError,
    TerminationTermCfg,
    bind_table,
    check_output,
    check_range,
    guarded,
)
from robolab.envs.velocity_env_cfg import VelocityEnvCfg
from robolab.rsl_rl_api import VecEnv
from robolab.terrains.field import TerrainField
from robolab.terrains.generator import generate

__all__ = ["PhysicsDivergedError", "VelocityEnv", "likely_culprits"]


class VelocityEnv(VecEnv):
    """Velocity tracking for a legged robot: the declared terms of ``cfg`` over MuJoCo C or MuJoCo Warp."""

    def __init__(self, cfg: VelocityEnvCfg):
        _check_settings(cfg)
        self.cfg: VelocityEnvCfg = cfg
        self.num_envs = cfg.num_envs
        self.device = torch.device(cfg.device)
        self.step_dt = cfg.step_dt
        self.max_episode_length = math.ceil(cfg.episode_length_s / self.step_dt)
        reward_terms, termination_terms, events, command_terms, curricula = _bind_tables(cfg)

        self.generator = torch.Generator(device=self.device)
        self.generator.manual_seed(cfg.seed)
        terrain = generate(cfg.terrain) if cfg.terrain is not None else None
        self.backend = make_backend(cfg.backend, cfg.robot, cfg.sim_dt, cfg.num_envs, cfg.device, terrain)
        self.terrain = (
            TerrainField(terrain, self.num_envs, self.device, self.generator, cfg.terrain.max_init_level)
            if terrain is not None and cfg.terrain is not None
            else None
        )
        """The generated terrain and each env's tile (None: the robot model's own floor, at height 0)."""
        self.term_cache: dict = {}
        """What terms compute once and keep (a height scan's pattern ...), by a key of their choosing."""
        self.robot = self.backend.robot
        self.num_actions = len(cfg.robot.joint_names)
        self.qpos_adr = torch.as_tensor(self.robot.qpos_adr, device=self.device)
        self.dof_adr = torch.as_tensor(self.robot.dof_adr, device=self.device)
        self.default_joint_pos = torch.tensor(cfg.robot.default_joint_pos, device=self.device)
        self.explicit_actuators = (
            ExplicitActuators(self.robot, cfg.robot, self.num_envs, self.device) if self.robot.actuator_groups else None
        )
        """The explicit actuator models (``env.robot.actuators``); None when MuJoCo's servos drive every joint."""
        limits = torch.as_tensor(self.robot.joint_limits, dtype=torch.float32, device=self.device)
        self.joint_lo, self.joint_hi = limits[:, 0], limits[:, 1]
        self._gravity = torch.tensor(GRAVITY_DIR, device=self.device)
        self.gait_scores = GaitScores(cfg.gaits or {}, list(cfg.robot.foot_bodies), self.device)
        self.physics_params: dict[str, torch.Tensor] = {}
        """Per-env values the events drew (``friction``, ``added_base_mass`` ...), for privileged observations."""
        self.action_delay: DelayLine | None = None
        """Set by an action-delay event (``randomize_action_delay``); None: actions act at once."""
        self.divergence = DivergenceGuard(self)

        # Active terms only: a reward whose weight is 0 is never computed.
        self.reward_terms = [t for t in reward_terms if t.cfg.weight != 0]
        self._reward_scale = torch.tensor([t.cfg.weight * self.step_dt for t in self.reward_terms], device=self.device)
        self.termination_terms = termination_terms
        self.events = {mode: [e for e in events if e.cfg.mode == mode] for mode in EVENT_MODES}
        self.curricula = curricula
        self._allocate_buffers()
        self.command_terms = {t.name: guarded(t.key, t.call, self) for t in command_terms}
        self._velocity_command = self._check_velocity_command()

        for event in self.events["startup"]:
            guarded(event.key, event.call, self, torch.ones(self.num_envs, dtype=torch.bool, device=self.device))
        self._refresh_state()  # the model's initial state, which curricula read at the first reset
        self._reset_envs(torch.ones(self.num_envs, dtype=torch.bool, device=self.device))
        self._refresh_state()
        self._check_interval_events()
        self.prev_joint_vel = self.state.joint_vel
        self._check_term_outputs()
        self.observation_groups = ObservationGroups(self, _groups_with_amp(cfg))
        self._obs = self._compute_observations()
        self.step_graph = StepGraph(self, skip=(PhysicsBackend,)) if cfg.uses_cuda_graph() else None
        """Replays the step as a CUDA graph (``env.cuda_graph``); None: every step runs eagerly."""

    # --- rsl_rl VecEnv --------------------------------------------------------------------------------
    def get_observations(self) -> TensorDict:
        return self._obs

    def reset(self) -> TensorDict:
        """Start a fresh episode in every env (evaluating one checkpoint after another in the same env)."""
        self._reset_envs(torch.ones(self.num_envs, dtype=torch.bool, device=self.device))
        self._refresh_state()
        self.observation_groups.clear_history()
        self._obs = self._compute_observations()
        return self._obs

    def step(self, actions: torch.Tensor) -> tuple[TensorDict, torch.Tensor, torch.Tensor, dict]:
        actions = actions.to(self.device)
        out = self.step_body(actions) if self.step_graph is None else self.step_graph.step(actions)
        self.divergence.end_step()  # host-side: once per window it reads the device's counts
        return out

    def step_body(self, actions: torch.Tensor) -> tuple[TensorDict, torch.Tensor, torch.Tensor, dict]:
        """The control step's work on the device, with no host read and no Python state changed: what a CUDA graph
        records (``env.cuda_graph``)."""
        actions = actions.clamp(-self.cfg.clip_actions, self.cfg.clip_actions)
        self.actions = actions
        applied = actions if self.action_delay is None else self.action_delay(actions)
        self.step_physics(self.default_joint_pos + self.cfg.action_scale * applied)

        non_finite = self.backend.non_finite
        self.prev_joint_vel = self.state.joint_vel
        self._refresh_state()
        # Such an env is reset below, and its state of this step reaches neither the rewards, the observations
        # nor the AMP transitions.
        diverged = self.divergence.diverged(non_finite)
        # An env whose physics left contacts out (buffers overflowed) is excluded and reset the same way; it is
        # counted on its own, not as a divergence.
        overflowed = self.divergence.overflowed()
        excluded = diverged if overflowed is None else diverged | overflowed
        self.episode_length_buf += 1
        for command in self.command_terms.values():
            command.update()
        self.foot_contact = self.backend.contact_forces("foot") > self.cfg.contact_force_threshold
        self.first_contact = self._update_air_time(self.foot_contact)

        terminated = [term.call(self) for term in self.termination_terms]
        fell = _any([v for v, t in zip(terminated, self.termination_terms) if not t.cfg.time_out], excluded)
        self.terminated_by = {**dict(zip((t.name for t in self.termination_terms), terminated)), "diverged": excluded}
        """This step's value of each termination term, and the envs whose physics diverged or overflowed (reset as
        falls): what ended an episode, for evaluations."""
        time_out = _any([v for v, t in zip(terminated, self.termination_terms) if t.cfg.time_out], None, excluded)
        self.reset_terminated = fell
        rewards = self._compute_rewards(excluded)
        self._track_metrics(non_finite, diverged, excluded)
        self.episode_gait += self.gait_scores(self.foot_contact)

        dones = fell | time_out
        extras = {"time_outs": time_out & ~fell, "log": {}}
        if "amp" in self.observation_groups.names:  # the state each env reached, before any reset replaces it
            extras["amp_next"] = self.observation_groups.compute(only="amp")["amp"].masked_fill(excluded[:, None], 0.0)
        # Ended envs are reset by mask, every step, whether any ended or not: asking would wait for the GPU.
        self._log_episodes(extras["log"], dones, fell, terminated, non_finite, diverged)
        self._reset_envs(dones)
        self._log_curricula(extras["log"])
        self._refresh_state()
        self._fire_interval_events()
        self.last_actions = actions.masked_fill(dones[:, None], 0.0)
        self._obs = self._compute_observations(dones)
        return self._obs, rewards, dones.long(), extras

    def close(self) -> None:
        self.backend.close()

    def step_physics(self, targets: torch.Tensor) -> None:
        """One control step of physics towards the PD ``targets`` (num_envs, joints): the servos hold them for
        ``decimation`` physics steps inside the backend; with explicit actuator models (``env.robot.actuators``) the
        physics goes one step at a time, each with the torques the models compute from the state it reached."""
        if self.explicit_actuators is None:
            self.backend.step(targets, self.cfg.decimation)
            return
        for substep in range(self.cfg.decimation):
            joint_pos = self.backend.qpos[:, self.qpos_adr].to(self.device)
            joint_vel = self.backend.qvel[:, self.dof_adr].to(self.device)
            controls = self.explicit_actuators.controls(targets, joint_pos, joint_vel)
            self.backend.step(controls, 1, first_substep=substep == 0)

    # --- what other parts read ------------------------------------------------------------------------
    def command(self, name: str) -> torch.Tensor:
        """The current command of the command term ``name``."""
        return self.command_terms[name].command

    @property
    def commands(self) -> torch.Tensor:
        """The velocity command (``cfg.velocity_command``): forward, lateral (m/s), yaw rate (rad/s)."""
        return self._velocity_command.command

    @property
    def env_origins(self) -> torch.Tensor:
        """(num_envs, 3) where each env's episode starts: its terrain tile's centre, or the world origin."""
        if self.terrain is None:
            origins = self.term_cache.get("flat_origins")
            if origins is None:
                origins = self.term_cache["flat_origins"] = torch.zeros(self.num_envs, 3, device=self.device)
            return origins
        return self.terrain.env_origins

    def ground_height(self, xy: torch.Tensor) -> torch.Tensor:
        """Ground height (m) under world points ``xy`` (..., 2): the terrain's, or 0 on the model's flat floor."""
        if self.terrain is None:
            return torch.zeros(xy.shape[:-1], device=xy.device)
        return self.terrain.height_at(xy)

    def state_dict(self) -> dict[str, torch.Tensor]:
        """What a checkpoint keeps of the env beyond its RNG: the terrain curriculum's levels, and the commands'
        ranges (a command curriculum widens them)."""
        state = {} if self.terrain is None else {f"terrain.{k}": v for k, v in self.terrain.state_dict().items()}
        for name, command in self.command_terms.items():
            if hasattr(command, "state_dict"):
                state.update({f"command.{name}.{k}": v for k, v in command.state_dict().items()})
        return state

    def load_state_dict(self, state: dict[str, torch.Tensor]) -> None:
        terrain = {k.removeprefix("terrain."): v for k, v in state.items() if k.startswith("terrain.")}
        if self.terrain is not None and terrain:
            self.terrain.load_state_dict(terrain)
            # The restored levels place the next episodes; the envs running now started on the old ones.
        for name, command in self.command_terms.items():
            prefix = f"command.{name}."
            saved = {k.removeprefix(prefix): v for k, v in state.items() if k.startswith(prefix)}
            if saved and hasattr(command, "load_state_dict"):
                command.load_state_dict(saved)

    @property
    def non_finite_count(self) -> int:
        """Envs reset because their physics state went non-finite, since the start."""
        return int(self.divergence.non_finite_total)

    def io_descriptors(self) -> dict:
        return io_descriptors(self)

    def delay_actions(self, mask: torch.Tensor, steps: torch.Tensor, max_steps: int) -> None:
        """From their next step, the envs of ``mask`` send the motors the action they were given ``steps`` control
        steps ago (their new episode starts with its first action repeated); ``max_steps`` bounds every delay."""
        if self.action_delay is None or self.action_delay.max_delay != max_steps:
            self.action_delay = DelayLine(self.num_envs, max_steps, self.device)
        self.action_delay.restart(mask, steps)

    def uniform(self, low: float, high: float, *shape: int) -> torch.Tensor:
        """Uniform draws in [low, high) from the env's seeded generator (terms draw their randomness here)."""
        r = torch.rand(*shape, generator=self.generator, device=self.device)
        return low + (high - low) * r

    # --- construction ---------------------------------------------------------------------------------
    def _allocate_buffers(self) -> None:
        n, j, dev = self.num_envs, self.num_actions, self.device
        self.episode_length_buf = torch.zeros(n, dtype=torch.long, device=dev)
        self.actions = torch.zeros(n, j, device=dev)
        self.last_actions = torch.zeros(n, j, device=dev)
        self.interval_timers = [torch.zeros(n, device=dev) for _ in self.events["interval"]]
        """Seconds until each interval event fires, per env (one tensor per event: no column views in the step)."""
        n_feet = len(self.cfg.robot.foot_bodies)
        self.feet_air_time = torch.zeros(n, n_feet, device=dev)
        self.last_air_time = torch.zeros(n, n_feet, device=dev)
        self.feet_contact_time = torch.zeros(n, n_feet, device=dev)
        """Seconds each foot has been on the ground (0 while it is in the air)."""
        self.reset_terminated = torch.zeros(n, dtype=torch.bool, device=dev)
        """The envs whose episode ends this step by a fall (a termination that is not a time-out)."""
        self.foot_contact = torch.zeros(n, n_feet, dtype=torch.bool, device=dev)
        self.first_contact = torch.zeros(n, n_feet, dtype=torch.bool, device=dev)
        # Per-env sums, one column per term: one kernel per step for all terms rather than one per term.
        self.episode_sums = torch.zeros(n, len(self.reward_terms), device=dev)  # weighted, active reward terms
        self.episode_tracking_error = torch.zeros(n, device=dev)
        self.episode_steps = torch.zeros(n, device=dev)  # steps actually run (episode_length_buf may start random)
        self.episode_gait = torch.zeros(n, len(self.gait_scores.names), device=dev)
        self.last_tracking_error = torch.zeros(n, device=dev)
        self.episode_start_xy = torch.zeros(n, 2, device=dev)
        self.last_base_xy = torch.zeros(n, 2, device=dev)
        """Where each env's base stood when its episode began (world xy): distance walked is measured from here."""

    def _check_velocity_command(self):
        name = self.cfg.velocity_command
        if name not in self.command_terms:
            have = ", ".join(self.command_terms) or "none"
            raise TermError(f"env.velocity_command={name!r}: not a command term of env.commands (it has: {have})")
        term = self.command_terms[name]
        command = getattr(term, "command", None)
        if not (isinstance(command, torch.Tensor) and command.shape == (self.num_envs, 3)):
            raise TermError(f"env.commands.{name}: a velocity command keeps `command` as a (num_envs, 3) tensor")
        return term

    def _check_interval_events(self) -> None:
        """Fire each interval event once for no env, so that its parameters are checked before any work (it would
        first fire seconds into training); the draws it makes are undone (the seed's stream stays the same)."""
        state = self.generator.get_state()
        nobody = torch.zeros(self.num_envs, dtype=torch.bool, device=self.device)
        for event in self.events["interval"]:
            guarded(event.key, event.call, self, nobody)
        self.generator.set_state(state)

    def _check_term_outputs(self) -> None:
        """Each reward and termination term's first value has the shape and dtype of its kind."""
        for term in self.reward_terms:
            check_output(guarded(term.key, term.call, self), term.key, self.num_envs, "reward")
        for term in self.termination_terms:
            check_output(guarded(term.key, term.call, self), term.key, self.num_envs, "termination")

    # --- state, events ------------------------------------------------------------------------------
    def _refresh_state(self) -> None:
        qpos = torch.nan_to_num(self.backend.qpos)  # diverged rows are zeroed here and reset this step
        qvel = torch.nan_to_num(self.backend.qvel)
        self.state = RobotState.from_generalised(qpos, qvel, self.qpos_adr, self.dof_adr, self._gravity)

    def _update_air_time(self, contact: torch.Tensor) -> torch.Tensor:
        first_contact = (self.feet_air_time > 0) & contact
        self.feet_air_time += self.step_dt
        self.last_air_time = torch.where(first_contact, self.feet_air_time, self.last_air_time)
        self.feet_air_time = torch.where(contact, torch.zeros_like(self.feet_air_time), self.feet_air_time)
        self.feet_contact_time = torch.where(contact, self.feet_contact_time + self.step_dt, 0.0)
        return first_contact

    def _reset_envs(self, mask: torch.Tensor) -> None:
        """Start new episodes in the envs of ``mask``: curricula, reset events, per-episode buffers, commands, and
        interval timers (values are drawn for every env and kept where ``mask``)."""
        self._curriculum_log = {t.name: guarded(t.key, t.call, self, mask) for t in self.curricula}
        if self.explicit_actuators is not None:
            self.explicit_actuators.reset(mask)
        for event in self.events["reset"]:
            guarded(event.key, event.call, self, mask)
        start = self.backend.qpos[:, :2].to(self.device)  # as the reset events placed them
        self.episode_start_xy = torch.where(mask[:, None], start, self.episode_start_xy)
        self.episode_length_buf.masked_fill_(mask, 0)
        for buf in (
            self.last_actions,
            self.feet_air_time,
            self.last_air_time,
            self.feet_contact_time,
            self.episode_sums,
            self.episode_tracking_error,
            self.episode_steps,
            self.episode_gait,
        ):
            buf.masked_fill_(mask.view(-1, *([1] * (buf.dim() - 1))), 0.0)
        for command in self.command_terms.values():
            command.reset(mask)
        for i, event in enumerate(self.events["interval"]):
            drawn = self.uniform(*event.cfg.interval_range_s, self.num_envs)
            self.interval_timers[i] = torch.where(mask, drawn, self.interval_timers[i])

    def _fire_interval_events(self) -> None:
        for i, event in enumerate(self.events["interval"]):
            timer = self.interval_timers[i]
            timer -= self.step_dt
            due = timer <= 0
            event.call(self, due)
            self.interval_timers[i] = torch.where(due, self.uniform(*event.cfg.interval_range_s, self.num_envs), timer)

    # --- rewards, metrics, observations --------------------------------------------------------------
    def _compute_rewards(self, diverged: torch.Tensor) -> torch.Tensor:
        """Every active reward term, weighted by ``weight * dt``, summed; per-term episode sums kept.

        A diverged env earns nothing (its terms would be garbage, possibly inf)."""
        if not self.reward_terms:
            return torch.zeros(self.num_envs, device=self.device)
        terms = torch.stack([term.call(self) for term in self.reward_terms], dim=1)
        weighted = (torch.nan_to_num(terms) * self._reward_scale).masked_fill(diverged[:, None], 0.0)
        self.episode_sums += weighted
        total = weighted.sum(dim=1)
        return total.clamp_min(0.0) if self.cfg.only_positive_rewards else total

    def _track_metrics(self, non_finite: torch.Tensor, diverged: torch.Tensor, excluded: torch.Tensor) -> None:
        error = kernels.lin_vel_tracking_error(self.commands, self.state.base_lin_vel).masked_fill(excluded, 0.0)
        self.last_tracking_error = error
        self.last_base_xy = self.state.base_pos[:, :2].clone()
        """Where each env's base stood after this step's physics, before any reset moved it (for evaluations)."""
        self.episode_tracking_error += error
        self.episode_steps += 1
        self.divergence.count(non_finite, diverged)

    def _log_episodes(
        self,
        log: dict,
        done: torch.Tensor,
        fell: torch.Tensor,
        terminated: list[torch.Tensor],
        non_finite: torch.Tensor,
        diverged: torch.Tensor,
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
            *(f"Episode_Reward/{term.name}" for term in self.reward_terms),
            "Metrics/lin_vel_tracking_error",
            "Metrics/fall_rate",
            *(f"Gait/{name}_score" for name in self.gait_scores.names),
        ]
        log.update(zip(names, means))
        # How episodes ended: each termination term, then the summaries fell / time_out (an end that is no fall) /
        # non_finite / diverged (a term named like a summary is counted as the summary).
        ended = torch.stack([*terminated, fell, ~fell, non_finite, diverged]) & done
        counts = torch.where(count > 0, ended.sum(dim=1).float(), nan).unbind()
        kinds = (*[t.name for t in self.termination_terms], "fell", "time_out", "non_finite", "diverged")
        for kind, value in zip(kinds, counts):
            log[f"Episode_Termination/{kind}"] = value
        if self.terrain is not None:  # where the physics diverges (on MuJoCo Warp: mostly on some terrain types)
            by_type = torch.where(count > 0, self.terrain.sum_by_type(diverged & done), nan).unbind()
            for name, value in zip(self.terrain.level_type_names, by_type):
                log[f"Episode_Termination/diverged/{name}"] = value
        log["Metrics/non_finite_total"] = torch.where(count > 0, self.divergence.non_finite_total.float(), nan)
        log["Metrics/diverged_total"] = torch.where(count > 0, self.divergence.diverged_total.float(), nan)
        if self.divergence.overflow_watched:
            log["Metrics/overflow_total"] = torch.where(count > 0, self.divergence.overflow_total.float(), nan)

    def _log_curricula(self, log: dict) -> None:
        """What each curriculum term returned at this step's reset (its state for the episodes starting now)."""
        for name, value in self._curriculum_log.items():
            if isinstance(value, dict):
                log.update({f"Curriculum/{name}/{k}" if k else f"Curriculum/{name}": v for k, v in value.items()})
            elif value is not None:
                log[f"Curriculum/{name}"] = value

    def _compute_observations(self, reset: torch.Tensor | None = None) -> TensorDict:
        groups = self.observation_groups.compute(reset)
        return TensorDict(groups, batch_size=[self.num_envs], device=self.device)


def _any(masks: list[torch.Tensor], also: torch.Tensor | None, like: torch.Tensor | None = None) -> torch.Tensor:
    """The elementwise OR of ``masks`` (and ``also``), in as few ops as there are masks; all False (shaped ``like``)
    when there is nothing to OR."""
    out = also
    for mask in masks:
        out = mask if out is None else out | mask
    if out is None:
        assert like is not None
        return torch.zeros_like(like)
    return out


MAX_SIM_DT = 0.1
"""The longest physics step the env takes (s): the README's ``env.sim_dt=0.1`` stops as diverged; longer is no
simulation of a legged robot."""


def _check_settings(cfg: VelocityEnvCfg) -> None:
    """The env's own settings (each term checks its own), before anything is built."""
    if cfg.num_envs <= 0:
        raise ValueError(f"num_envs={cfg.num_envs}: must be a positive integer")
    if cfg.decimation <= 0 or not (math.isfinite(cfg.sim_dt) and cfg.sim_dt > 0):
        raise ValueError(f"env.decimation={cfg.decimation}, env.sim_dt={cfg.sim_dt}: both must be positive")
    if cfg.sim_dt > MAX_SIM_DT:
        raise ValueError(f"env.sim_dt={cfg.sim_dt}: at most {MAX_SIM_DT} s a physics step (MuJoCo's default is 0.002)")
    if not (math.isfinite(cfg.episode_length_s) and cfg.episode_length_s >= cfg.step_dt):
        raise ValueError(
            f"env.episode_length_s={cfg.episode_length_s}: must be at least one control step "
            f"(env.sim_dt x env.decimation = {cfg.step_dt:g} s)"
        )
    check_compile_workers(cfg.backend.compile_workers)  # MuJoCo Warp's, but refused on any backend, before the terrain
    if not cfg.clip_actions > 0:
        raise ValueError(f"env.clip_actions={cfg.clip_actions}: must be > 0 (actions are clamped to +-clip_actions)")
    if cfg.cuda_graph is True and not cfg.cuda_graph_possible():
        raise ValueError(
            f"env.cuda_graph=true needs a CUDA device and env.backend=warp (this run: device {cfg.device}, "
            f"backend {cfg.backend.name}): leave it unset (on where it can run) or set env.cuda_graph=false"
        )
    if not cfg.contact_force_threshold >= 0:
        raise ValueError(f"env.contact_force_threshold={cfg.contact_force_threshold}: must be >= 0 N")
    if cfg.amp_terms:
        from robolab.amp.features import check_terms

        check_terms(cfg.amp_terms)
    for name, event in cfg.events.items():
        if isinstance(event, EventTermCfg):
            if event.mode not in EVENT_MODES:
                raise TermError(f"env.events.{name}.mode={event.mode!r}: allowed: {', '.join(EVENT_MODES)}")
            if event.mode == "interval":
                low, _ = check_range(f"env.events.{name}.interval_range_s", event.interval_range_s)
                if low <= 0:
                    raise TermError(f"env.events.{name}.interval_range_s={list(event.interval_range_s)}: must be > 0")


def _bind_tables(cfg: VelocityEnvCfg) -> tuple[list[BoundTerm], ...]:
    """Every term of every table resolved and its parameters checked (observations: in ``ObservationGroups``)."""
    return (
        bind_table("rewards", cfg.rewards, 1, RewardTermCfg),
        bind_table("terminations", cfg.terminations, 1, TerminationTermCfg),
        bind_table("events", cfg.events, 2, EventTermCfg),
        bind_table("commands", cfg.commands, 1, CommandTermCfg),
        bind_table("curricula", cfg.curricula, 2, CurriculumTermCfg),
    )


def _groups_with_amp(cfg: VelocityEnvCfg) -> dict[str, ObsGroupCfg]:
    """The declared groups, plus the ``amp`` group ``env.amp_terms`` asks for (unless one is declared)."""
    groups = dict(cfg.observations)
    if cfg.amp_terms and "amp" not in groups:
        state = ObsTermCfg(func="amp_state", params={"terms": list(cfg.amp_terms)})
        groups["amp"] = ObsGroupCfg(terms={"amp_state": state}, enable_corruption=False)
    return groups
