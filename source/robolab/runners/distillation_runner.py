"""robolab's ``DistillationRunner``: teacher-student training with the distributed wiring of ``OnPolicyRunner``."""

from __future__ import annotations

from robolab import checkpoint
from robolab.algorithms import Distillation
from robolab.runners.on_policy_runner import OnPolicyRunner


class DistillationRunner(OnPolicyRunner):
    """Trains the student (``policy`` group) to imitate a PPO teacher trained on the privileged ``teacher`` group.

    Every rank loads the same teacher file; the parameter broadcast at the start of ``learn()`` then makes all
    ranks identical (the check in ``learn`` fails early on a rank that has none).
    """

    alg: Distillation

    def load_teacher(self, path: str) -> None:
        loaded = checkpoint.load(path, map_location=self.device)
        if "actor_state_dict" not in loaded and "teacher_state_dict" not in loaded:
            raise ValueError(f"teacher checkpoint {path!r} holds no actor (expected a PPO or distillation checkpoint)")
        try:
            self.alg.load(loaded, {"teacher": True}, strict=True)
        except ValueError as err:
            raise ValueError(f"teacher checkpoint {path!r}: {err}") from None
        print(f"[robolab] teacher loaded from {path}")

    def learn(self, num_learning_iterations: int, init_at_random_ep_len: bool = False) -> None:
        if not self.alg.teacher_loaded:
            raise ValueError(
                "no teacher loaded: pass --teacher_checkpoint PATH "
                "(a PPO checkpoint whose actor reads the 'teacher' group)"
            )
        super().learn(num_learning_iterations, init_at_random_ep_len)
