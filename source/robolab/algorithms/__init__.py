"""Algorithms: rsl_rl subclasses with full cross-rank synchronisation."""

from robolab.algorithms.ppo import PPO

__all__ = ["PPO"]
