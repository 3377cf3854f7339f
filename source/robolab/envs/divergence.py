"""Containing diverged physics: which envs left the bounds of ``env.divergence`` this step, and when to stop.

A non-finite env, or a finite one beyond any physical bound (a step too large for the solver, a model the solver
cannot hold), is reset alone by the env, counted, and kept out of observations, rewards and the update. When most
env steps of a check window diverge, the settings cannot work: ``PhysicsDivergedError`` names the likely culprits.
"""

from __future__ import annotations

import warnings

import torch

from robolab.envs.backends import resolve_name
from robolab.envs.captured_step import HostSide


class PhysicsDivergedError(ValueError):
    """Most envs diverge: a physics setting that cannot work. The message names the likely settings."""


PHYSICS_KEYS = (
    "sim_dt",
    "decimation",
    "action_scale",
    "robot.mjcf_path",
    "robot.stiffness",
    "robot.damping",
    "robot.joint_stiffness",
    "robot.joint_damping",
    "robot.torque_limits",
    "backend.name",
)


def likely_culprits(cfg) -> str:
    """The physics settings of ``cfg`` that differ from its task's defaults, the usual cause of divergence."""
    default = type(cfg)()
    changed = []
    for key in PHYSICS_KEYS:
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


def check_bounds(cfg) -> None:
    """The bounds are positive, ``stop_fraction`` a share in (0, 1], ``check_every`` at least one step (a bound of 0
    would call every env diverged)."""
    for name in ("max_base_lin_vel", "max_base_ang_vel", "max_joint_vel", "max_joint_acc", "max_base_distance"):
        if not getattr(cfg, name) > 0:
            raise ValueError(
                f"env.divergence.{name}={getattr(cfg, name)}: must be > 0 (a bound no healthy env reaches)"
            )
    if not cfg.joint_limit_margin >= 0:
        raise ValueError(f"env.divergence.joint_limit_margin={cfg.joint_limit_margin}: must be >= 0 (rad)")
    if not 0 < cfg.stop_fraction <= 1:
        raise ValueError(f"env.divergence.stop_fraction={cfg.stop_fraction}: must be a share in (0, 1]")
    if not cfg.check_every >= 1:
        raise ValueError(f"env.divergence.check_every={cfg.check_every}: must be >= 1 control step")


class WindowSteps(HostSide):
    """Control steps counted on the host since the last check."""

    def __init__(self) -> None:
        self.count = 0


class DivergenceGuard:
    """Bounds per step, counts on the device (no host synchronisation per step), one check per window."""

    def __init__(self, env):
        self.env, self.cfg = env, env.cfg.divergence
        check_bounds(self.cfg)
        dev = env.device
        self.non_finite_total = torch.zeros((), dtype=torch.long, device=dev)
        self.diverged_total = torch.zeros((), dtype=torch.long, device=dev)  # non-finite ones included
        self.overflow_total = torch.zeros((), dtype=torch.long, device=dev)
        self._window = torch.zeros((), dtype=torch.long, device=dev)
        self.window_steps = WindowSteps()
        # A backend with fixed contact buffers (MuJoCo Warp) reports overflows; MuJoCo C's grow as needed.
        self.overflow_watched = bool(env.backend.overflow_settings)
        self._window_flags = torch.zeros(env.num_envs, dtype=torch.int32, device=dev)
        self._window_overflows = torch.zeros((), dtype=torch.long, device=dev)

    def overflowed(self) -> torch.Tensor | None:
        """(num_envs,) bool: the env's contact or constraint buffers overflowed this step (it is reset like a
        diverged env, counted as ``Metrics/overflow_total`` and reported once per window); None for a backend
        whose buffers cannot overflow."""
        if not self.overflow_watched:
            return None
        flags = self.env.backend.overflow_flags
        self._window_flags |= flags
        overflowed = flags != 0
        count = overflowed.sum()
        self.overflow_total += count
        self._window_overflows += count
        return overflowed

    def diverged(self, non_finite: torch.Tensor) -> torch.Tensor:
        """(num_envs,) bool: non-finite, or out of ``env.divergence``'s bounds this step."""
        env, d, s = self.env, self.cfg, self.env.state
        acc = (s.joint_vel - env.prev_joint_vel).abs() / env.step_dt
        out = (
            (s.base_lin_vel.abs() > d.max_base_lin_vel).any(dim=1)
            | (s.base_ang_vel.abs() > d.max_base_ang_vel).any(dim=1)
            | (s.joint_vel.abs() > d.max_joint_vel).any(dim=1)
            | (acc > d.max_joint_acc).any(dim=1)
            | (s.base_pos.abs() > d.max_base_distance).any(dim=1)
            | (
                (s.joint_pos < env.joint_lo - d.joint_limit_margin)
                | (s.joint_pos > env.joint_hi + d.joint_limit_margin)
            ).any(dim=1)
        )
        return non_finite | out

    def count(self, non_finite: torch.Tensor, diverged: torch.Tensor) -> None:
        self.non_finite_total += non_finite.sum()
        count = diverged.sum()
        self.diverged_total += count
        self._window += count

    def end_step(self) -> None:
        """After each step, on the host (outside a captured step): count it, and check the window when it is full."""
        self.window_steps.count += 1
        if self.window_steps.count >= self.cfg.check_every:
            self._check_window()

    def _check_window(self) -> None:
        """Stop when most env steps of the window diverged (one host synchronisation per window); warn, once per
        window, of buffer overflows."""
        steps = self.window_steps.count
        share = float(self._window) / (self.env.num_envs * steps)
        self._window.zero_()
        self.window_steps.count = 0
        if self.overflow_watched:
            self._report_overflows(steps)
        if share > self.cfg.stop_fraction:
            raise PhysicsDivergedError(
                f"the physics diverged in {share:.0%} of env steps over the last {steps} control steps "
                f"(beyond env.divergence bounds, or non-finite): {likely_culprits(self.env.cfg)}"
            )

    def _report_overflows(self, steps: int) -> None:
        overflows = int(self._window_overflows)
        if overflows:
            settings = self.env.backend.overflow_settings
            hit = torch.stack([((self._window_flags & flag) != 0).any() for flag in settings]).tolist()
            bits = sum(flag for flag, on in zip(settings, hit) if on)
            warnings.warn(
                f"physics buffers overflowed in {overflows} env steps over the last {steps} control steps; those envs "
                f"were reset and training goes on (Metrics/overflow_total): {self.env.backend.overflow_advice(bits)}",
                stacklevel=2,
            )
        self._window_overflows.zero_()
        self._window_flags.zero_()
