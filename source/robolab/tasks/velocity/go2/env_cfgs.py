"""Env configs of the Go2 velocity tasks."""

from __future__ import annotations

from dataclasses import dataclass

from robolab.envs.velocity_env_cfg import VelocityEnvCfg


@dataclass
class Go2FlatEnvCfg(VelocityEnvCfg):
    """The built-in Go2-class robot on flat ground; the base config's defaults are tuned for it."""

