"""Algorithms: rsl_rl subclasses with full cross-rank synchronisation."""

from robolab.algorithms.distillation import Distillation
from robolab.algorithms.ppo import PPO
from robolab.algorithms.ppo_amp import PPOAMP
from robolab.algorithms.sync import SyncedAlgorithm

__all__ = ["PPO", "PPOAMP", "Distillation", "SyncedAlgorithm"]
