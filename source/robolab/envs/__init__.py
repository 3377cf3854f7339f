"""Simulator-agnostic velocity MDP (torch) and its physics backends."""

from robolab.envs.velocity_env import VelocityEnv
from robolab.envs.velocity_env_cfg import VelocityEnvCfg

__all__ = ["VelocityEnv", "VelocityEnvCfg"]
