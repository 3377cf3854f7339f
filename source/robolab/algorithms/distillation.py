"""rsl_rl's teacher-student ``Distillation``, synchronised like PPO and with a checked teacher load."""

from __future__ import annotations

import torch
from torch import nn

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

    def update(self) -> dict[str, float]:
        """rsl_rl's ``Distillation.update``, step for step, with the behaviour loss summed as a tensor and read once at
        the end (rsl_rl reads it back to the host after every step). ``tests/test_distillation_update.py`` holds it
        to rsl_rl's parameters."""
        self.num_updates += 1
        total = torch.zeros((), device=self.device)
        loss = 0
        count = 0
        for _ in range(self.num_learning_epochs):
            self.student.reset(hidden_state=self.last_hidden_states[0])
            self.teacher.reset(hidden_state=self.last_hidden_states[1])
            self.student.detach_hidden_state()
            for batch in self.storage.generator():
                device_type = torch.device(self.device).type
                with torch.amp.autocast(
                    device_type=device_type, enabled=self.use_mixed_precision, dtype=torch.bfloat16
                ):
                    behavior_loss = self.loss_fn(self.student(batch.observations), batch.privileged_actions)
                loss = loss + behavior_loss
                total += behavior_loss.detach().float()
                count += 1
                if count % self.gradient_length == 0:  # truncated backpropagation through time
                    self.optimizer.zero_grad()
                    loss.backward()  # type: ignore[union-attr]
                    if self.is_multi_gpu:
                        self.reduce_parameters()
                    if self.max_grad_norm:
                        nn.utils.clip_grad_norm_(self.student.parameters(), self.max_grad_norm)
                    self.optimizer.step()
                    self.student.detach_hidden_state()
                    loss = 0
                dones = batch.dones.view(-1)  # type: ignore[union-attr]
                self.student.reset(dones)
                self.teacher.reset(dones)
                self.student.detach_hidden_state(dones)

        self.last_hidden_states = (self.student.get_hidden_state(), self.teacher.get_hidden_state())
        self.student.detach_hidden_state()
        self.student.update_normalization(self.storage.observations.flatten(0, 1))  # type: ignore[operator]
        self.storage.clear()
        return {"behavior": float(total) / count}  # the update's one host read
