"""Evaluating a trained policy: tracking error and falls over fresh episodes."""

from __future__ import annotations

import time

import torch

from robolab import console


def eval_overrides(task: str, num_envs: int, seed: int | None) -> list[str]:
    """The evaluation conditions of ``task``'s kind (``TaskKind.eval_overrides``) with its env count and seed."""
    from robolab import tasks

    base = list(tasks.kind_of(task).eval_overrides)
    return [*base, f"env.num_envs={num_envs}", *([f"seed={seed}"] if seed is not None else [])]


def tracking_error(env) -> torch.Tensor:
    """Per-env horizontal velocity tracking error (m/s) of the state the last step reached."""
    if hasattr(env, "last_tracking_error"):  # the embedded env keeps it from before its resets
        return env.last_tracking_error.clone()
    # An Isaac Lab env has already reset terminated envs here: their first-state error is counted instead.
    base_env = env.unwrapped
    lin_vel = base_env.scene["robot"].data.root_lin_vel_b.torch[:, :2]
    command = base_env.command_manager.get_command("base_velocity")[:, :2]
    return torch.linalg.norm(lin_vel - command, dim=-1)


def evaluate(env, policy, steps: int | None, real_time: bool = False, on_step=None, desc: str = "evaluating") -> dict:
    """Roll out the deterministic policy; tracking error over all env steps, falls per env.

    A recurrent policy's memory is reset for the envs whose episode ended (as Isaac Lab's play does), so each
    episode starts from a blank memory. ``real_time`` paces the loop at the control rate; ``on_step(env, errors)``
    sees every step (a viewer). ``steps=None`` runs until interrupted (Ctrl-C). A progress bar named ``desc``
    shows the steps (``robolab.console.progress``), except in real time, where someone is watching already.
    """
    obs = env.get_observations()
    fell = torch.zeros(env.num_envs, dtype=torch.bool, device=env.device)
    reset_memory = getattr(policy, "reset", None)
    errors = []
    done_steps = 0
    bar = console.progress(steps, desc, enabled=not real_time)
    with torch.inference_mode(), bar:
        try:
            while steps is None or done_steps < steps:
                start = time.perf_counter()
                obs, _, dones, extras = env.step(policy(obs))
                if reset_memory is not None:
                    reset_memory(dones)
                # The error of the state just reached, before any reset of this step overwrote it.
                errors.append(tracking_error(env))
                fell |= dones.bool() & ~extras["time_outs"].bool()
                done_steps += 1
                bar.update()
                if on_step is not None:
                    on_step(env, errors[-1])
                if real_time:
                    time.sleep(max(0.0, env.step_dt - (time.perf_counter() - start)))
        except KeyboardInterrupt:
            if steps is not None or not errors:
                raise
    return {
        "num_envs": env.num_envs,
        "steps": done_steps,
        "lin_vel_tracking_error": float(torch.stack(errors).mean()),
        "fall_rate": float(fell.float().mean()),
    }
