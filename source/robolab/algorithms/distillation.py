"""rsl_rl's teacher-student ``Distillation``, synchronised like PPO and with a checked teacher load."""

from __future__ import annotations

import torch

from robolab.algorithms.sync import DEFAULT_BUCKET_MB, SyncedAlgorithm
from robolab.checkpoint import check_shapes
from robolab.rsl_rl_api import Distillation as RslRlDistillation


class Distillation(SyncedAlgorithm, RslRlDistillation):
    """rsl_rl's distillation with its gradients averaged across ranks and the student replicated on every rank."""

    def __init__(self, student, teacher, storage, grad_reduce_bucket_mb: float = DEFAULT_BUCKET_MB, **kwargs):
        super().__init__(student, teacher, storage, grad_reduce_bucket_mb=grad_reduce_bucket_mb, **kwargs)
        # The teacher is frozen, but it is loaded per rank: broadcasting it removes any doubt about which one ran.
        self.models = {"student": student, "teacher": teacher}
        self.sync_bucket_mb = grad_reduce_bucket_mb

    def synced_modules(self) -> dict[str, torch.nn.Module]:
        return dict(self.models)

    def synced_optimizers(self) -> dict[str, torch.optim.Optimizer]:
        return {"optimizer": self.optimizer}

    def load(self, loaded_dict: dict, load_cfg: dict | None, strict: bool) -> bool:
        teacher_state = loaded_dict.get("teacher_state_dict") or loaded_dict.get("actor_state_dict")
        if teacher_state is not None:
            check_shapes(self.models["teacher"], teacher_state, "teacher")
        if "student_state_dict" in loaded_dict:
            check_shapes(self.models["student"], loaded_dict["student_state_dict"], "student")
        return super().load(loaded_dict, load_cfg, strict)
