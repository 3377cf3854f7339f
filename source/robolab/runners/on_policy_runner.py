"""robolab's ``OnPolicyRunner``: rsl_rl's loop, driven by a ``DistributedContext`` instead of env variables.

What this subclass changes, and why:
- ranks come from ``robolab.distributed`` (torchrun, Slurm or Open MPI), CPU + gloo is allowed, and the
  process group is created once with a finite timeout;
- episode statistics are global (``robolab.runners.logger.Logger``);
- checkpoints are written atomically and loaded with ``weights_only=True``; they carry RNG states;
- ``model_<it>.pt`` holds the state after iteration ``it``, so a resume starts at ``it + 1``;
- an optional Brax-style replication check compares every rank's parameters and optimiser state.
"""

from __future__ import annotations

import os

import torch
from rsl_rl.env import VecEnv
from rsl_rl.runners import OnPolicyRunner as RslRlOnPolicyRunner

from robolab import checkpoint, distributed
from robolab.distributed import DistributedContext
from robolab.runners.logger import Logger


class TrainingStopped(Exception):
    """Raised out of ``learn()`` after a requested stop (SIGTERM/SIGINT) once the checkpoint is on disk."""

    def __init__(self, iteration: int):
        super().__init__(f"training stopped after iteration {iteration}")
        self.iteration = iteration


class OnPolicyRunner(RslRlOnPolicyRunner):
    def __init__(
        self,
        env: VecEnv,
        train_cfg: dict,
        log_dir: str | None = None,
        device: str = "cpu",
        dist_ctx: DistributedContext | None = None,
        check_replication_every: int = 0,
        dist_timeout_s: float = distributed.DEFAULT_TIMEOUT_S,
    ) -> None:
        self.dist_ctx = dist_ctx if dist_ctx is not None else DistributedContext()
        self.dist_timeout_s = dist_timeout_s
        if check_replication_every < 0:
            raise ValueError(f"check_replication_every={check_replication_every}: must be >= 0 (0 = off)")
        self.check_replication_every = check_replication_every
        super().__init__(env, train_cfg, log_dir, device)
        self.logger = Logger(
            log_dir=log_dir if self.dist_ctx.is_main else None,
            cfg=self.cfg,
            env_cfg=self.env.cfg,
            num_envs=self.env.num_envs,
            is_distributed=self.is_distributed,
            gpu_world_size=self.gpu_world_size,
            gpu_global_rank=self.gpu_global_rank,
            device=self.device,
        )
        self.stop_requested = False
        """Set (e.g. by a signal handler) to end training cleanly after the current iteration."""
        self.logger.iteration_hooks.append(self._maybe_check_replication)
        self.logger.iteration_hooks.append(self._maybe_stop)

    def _configure_multi_gpu(self) -> None:
        ctx = self.dist_ctx
        self.gpu_world_size = ctx.world_size
        self.gpu_global_rank = ctx.rank
        self.gpu_local_rank = ctx.local_rank
        self.is_distributed = ctx.is_distributed
        if not ctx.is_distributed:
            self.cfg["multi_gpu"] = None
            return
        expected = "cpu" if self.device == "cpu" else f"cuda:{ctx.local_rank}"
        if self.device != expected:
            raise distributed.DistributedConfigError(
                f"device={self.device!r} on local rank {ctx.local_rank}: expected {expected!r}"
            )
        distributed.initialize(ctx, self.device, timeout_s=self.dist_timeout_s)
        self.cfg["multi_gpu"] = {"global_rank": ctx.rank, "local_rank": ctx.local_rank, "world_size": ctx.world_size}

    # --- replication ------------------------------------------------------------------------------------
    def _maybe_check_replication(self, it: int) -> None:
        every = self.check_replication_every
        if every and self.is_distributed and (it + 1) % every == 0:
            self.check_replication()

    def check_replication(self) -> None:
        tensors = self.alg.replication_tensors()
        distributed.check_replication(tensors)
        if self.dist_ctx.is_main:
            print(f"[robolab] replication check passed: {len(tensors)} tensors identical on {self.gpu_world_size} ranks")

    def _maybe_stop(self, it: int) -> None:
        # Every rank must leave at the same iteration, so the request is agreed on collectively.
        if distributed.any_rank(self.stop_requested):
            self.current_learning_iteration = it
            if self.logger.writer is not None:
                self.save(os.path.join(self.logger.log_dir, f"model_{it}.pt"))
                self.logger.stop_logging_writer()
            raise TrainingStopped(it)

    # --- checkpoints ------------------------------------------------------------------------------------
    def _rng_state(self) -> dict:
        state = {"torch": torch.get_rng_state()}
        if torch.cuda.is_available() and str(self.device).startswith("cuda"):
            state["cuda"] = torch.cuda.get_rng_state(self.device)
        generator = getattr(self.env, "generator", None)
        if isinstance(generator, torch.Generator):
            state["env"] = generator.get_state()
        return state

    def save(self, path: str, infos: dict | None = None) -> None:
        saved = self.alg.save()
        saved["iter"] = self.current_learning_iteration
        saved["infos"] = infos
        saved["world_size"] = self.gpu_world_size
        saved["rng_state"] = self._rng_state()
        checkpoint.save_atomic(saved, path)
        self.logger.save_model(path, self.current_learning_iteration)

    def load(self, path: str, load_cfg: dict | None = None, strict: bool = True, map_location=None) -> dict:
        loaded = checkpoint.load(path, map_location=map_location or self.device)
        if self.alg.load(loaded, load_cfg, strict):
            # model_<it>.pt is the state after iteration it: continue with the next one.
            self.current_learning_iteration = loaded["iter"] + 1
        self._restore_rng(loaded.get("rng_state"), loaded.get("world_size", 1))
        return loaded.get("infos")

    def _restore_rng(self, state: dict | None, saved_world_size: int) -> None:
        # Only rank 0's streams are in the file; replaying them on every rank would make all ranks sample the
        # same noise, so multi-rank resumes re-seed each rank from (iteration, rank) instead.
        if state is None:
            return
        if self.gpu_world_size == 1 and saved_world_size == 1:
            torch.set_rng_state(state["torch"].cpu())
            if "cuda" in state and str(self.device).startswith("cuda"):
                torch.cuda.set_rng_state(state["cuda"].cpu(), self.device)
            generator = getattr(self.env, "generator", None)
            if "env" in state and isinstance(generator, torch.Generator):
                generator.set_state(state["env"].cpu())
        else:
            seed = 1_000_003 * self.current_learning_iteration + self.gpu_global_rank
            torch.manual_seed(seed)
            generator = getattr(self.env, "generator", None)
            if isinstance(generator, torch.Generator):
                generator.manual_seed(seed)
