"""What every robolab algorithm shares for multi-rank training: one declared set of synchronised modules.

An algorithm lists the modules that must be identical on every rank (``synced_modules``) and the optimisers
whose state must match (``synced_optimizers``); broadcasting, gradient averaging and the replication check
are derived from those lists, so adding a model (a discriminator, a teacher) is a one-line change.
"""

from __future__ import annotations

import copy
from itertools import chain

import torch

from robolab import distributed

DEFAULT_BUCKET_MB = 25.0
"""Size of the buckets gradients are packed into for the all-reduce (rsl_rl's default too)."""


class SyncedAlgorithm:
    """What every robolab algorithm shares across ranks: the modules to broadcast at start, the gradients to average in
    buckets, and the state the replication check compares."""

    sync_bucket_mb: float = DEFAULT_BUCKET_MB
    """Set by the subclass from its ``grad_reduce_bucket_mb`` argument."""

    def synced_modules(self) -> dict[str, torch.nn.Module]:
        raise NotImplementedError

    def synced_optimizers(self) -> dict[str, torch.optim.Optimizer]:
        raise NotImplementedError

    def broadcast_parameters(self) -> None:
        """Copy every parameter and buffer of the synced modules from rank 0 (no-op in a single process)."""
        for module in self.synced_modules().values():
            distributed.broadcast_module(module)

    def reduce_parameters(self) -> None:
        """Average the gradients of every synced module across ranks (frozen ones have none and are skipped)."""
        params = chain.from_iterable(m.parameters() for m in self.synced_modules().values())
        distributed.average_gradients(params, self.sync_bucket_mb)

    def snapshot(self) -> dict:
        """Copies of every synced module's and optimiser's state (cheap next to an update: a few MB)."""
        return {
            "modules": {n: {k: v.clone() for k, v in m.state_dict().items()} for n, m in self.synced_modules().items()},
            "optimizers": {n: copy.deepcopy(o.state_dict()) for n, o in self.synced_optimizers().items()},
        }

    def restore(self, snapshot: dict) -> None:
        """Back to a ``snapshot``: an update cut short leaves no half-trained model behind."""
        for name, module in self.synced_modules().items():
            module.load_state_dict(snapshot["modules"][name])
        for name, optimizer in self.synced_optimizers().items():
            optimizer.load_state_dict(snapshot["optimizers"][name])
        if hasattr(self, "learning_rate") and "optimizer" in snapshot["optimizers"]:
            self.learning_rate = snapshot["optimizers"]["optimizer"]["param_groups"][0]["lr"]

    def replication_tensors(self) -> dict[str, torch.Tensor]:
        """Named tensors that must match across ranks: parameters, buffers and optimiser state."""
        named: dict[str, torch.Tensor] = {}
        for prefix, module in self.synced_modules().items():
            for name, tensor in module.state_dict().items():
                named[f"{prefix}.{name}"] = tensor
        for prefix, optimizer in self.synced_optimizers().items():
            for param_id, state in optimizer.state_dict()["state"].items():
                for key, value in state.items():
                    if torch.is_tensor(value):
                        named[f"{prefix}.state.{param_id}.{key}"] = value
            named[f"{prefix}.lr"] = torch.tensor([float(g["lr"]) for g in optimizer.param_groups], dtype=torch.float64)
        return named
