"""Runners: rsl_rl subclasses that take a ``DistributedContext`` and keep every rank identical."""

from robolab.runners.amp_runner import AMPRunner
from robolab.runners.distillation_runner import DistillationRunner
from robolab.runners.on_policy_runner import OnPolicyRunner

__all__ = ["AMPRunner", "DistillationRunner", "OnPolicyRunner"]
