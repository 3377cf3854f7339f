"""Observation terms: ``func(env, **params) -> (num_envs, width)``."""

from __future__ import annotations

import torch

from robolab.amp.features import amp_features, check_terms


def base_lin_vel(env) -> torch.Tensor:
    """Base linear velocity in the base frame (m/s)."""
    return env.state.base_lin_vel


def base_ang_vel(env) -> torch.Tensor:
    """Base angular velocity in the base frame (rad/s)."""
    return env.state.base_ang_vel


def projected_gravity(env) -> torch.Tensor:
    """Gravity's direction in the base frame."""
    return env.state.projected_gravity


def generated_commands(env, command_name: str = "base_velocity") -> torch.Tensor:
    """The command term ``command_name``'s current command."""
    return env.command(command_name)


def joint_pos_rel(env) -> torch.Tensor:
    """Joint positions relative to the default pose, policy order (rad)."""
    return env.state.joint_pos - env.default_joint_pos


def joint_vel(env) -> torch.Tensor:
    """Joint velocities, policy order (rad/s)."""
    return env.state.joint_vel


def last_action(env) -> torch.Tensor:
    """The action of the previous step (zeros at an episode's start)."""
    return env.last_actions


def physics_param(env, name: str) -> torch.Tensor:
    """A value a startup or reset event drew for each env (``env.physics_params[name]``: friction, added mass ...),
    one column per value."""
    if name not in env.physics_params:
        drawn = ", ".join(env.physics_params) or "none"
        raise ValueError(f"name={name!r}: no event records it (recorded: {drawn})")
    value = env.physics_params[name]
    return value[:, None] if value.dim() == 1 else value


def foot_contact(env) -> torch.Tensor:
    """1 where a foot touches the ground (contact force above ``env.contact_force_threshold``), else 0."""
    return env.foot_contact.float()


def amp_state(env, terms: list[str]) -> torch.Tensor:
    """The AMP discriminator's state features (``robolab.amp.features``: the clips are built from the same)."""
    check_terms(terms)
    s = env.state
    return amp_features(
        terms,
        joint_pos=s.joint_pos,
        joint_vel=s.joint_vel,
        base_lin_vel=s.base_lin_vel,
        base_ang_vel=s.base_ang_vel,
        foot_pos=torch.nan_to_num(env.backend.foot_positions),
    )
