"""robolab's ``OnPolicyRunner``: rsl_rl's runner, driven by a ``DistributedContext`` instead of env variables.

What this subclass changes, and why:

- ``__init__`` is overridden whole: ranks come from ``robolab.distributed`` (torchrun, Slurm or Open MPI), the
  process group must already exist (``robolab.session`` starts it, once, with a finite timeout; CPU + gloo
  allowed), and one ``TrainingLogger`` keeps episode statistics on every rank;
- ``learn`` is overridden whole, so each step of an iteration is explicit: collect, update, reduce the
  statistics over ranks, log, checkpoint, replication check, and the stop agreed by every rank;
- checkpoints are written atomically and loaded with ``weights_only=True``; they carry RNG states;
- ``model_<it>.pt`` holds the state after iteration ``it``, so a resume starts at ``it + 1``;
- collecting waits for the GPU once per iteration, not per step: rsl_rl's NaN check (``check_nan``) is kept as
  flags on the device (``NanWatch``) and read after the last step;
- the models' calls (inference, the step's bookkeeping, the update) run in the configured float32 matmul precision
  (``agent.matmul_precision``, TF32 on GPUs by default), the env's step in IEEE float32.
"""

from __future__ import annotations

import math
import os
import time

import torch

from robolab import checkpoint, console, distributed
from robolab.distributed import DistributedConfigError, DistributedContext
from robolab.errors import first_line
from robolab.matmul_precision import check_matmul_precision, models_precision
from robolab.rsl_rl_api import OnPolicyRunner as RslRlOnPolicyRunner
from robolab.rsl_rl_api import VecEnv, resolve_callable
from robolab.runners.logger import IterationRecord, TrainingLogger

STOP_GRACE_S = 2.0
"""After a stop request, how long the iteration under way may run on before it is abandoned."""
STOP_CHECK_EVERY = 16
"""With several ranks, stop points agree collectively once every this many (one all-reduce of a flag each)."""


class Interrupted(Exception):
    """A stop request that came while an iteration was under way, and outlasted ``STOP_GRACE_S``."""


class OnPolicyRunner(RslRlOnPolicyRunner):
    """rsl_rl's on-policy runner driven by a ``DistributedContext`` (the module's docstring says what it changes)."""

    def __init__(
        self,
        env: VecEnv,
        train_cfg: dict,
        log_dir: str | None = None,
        device: str = "cpu",
        dist_ctx: DistributedContext | None = None,
        check_replication_every: int = 0,
        task_id: str | None = None,
    ) -> None:
        ctx = dist_ctx if dist_ctx is not None else DistributedContext()
        if check_replication_every < 0:
            raise ValueError(f"check_replication_every={check_replication_every}: must be >= 0 (0 = off)")
        self.env, self.cfg, self.device, self.dist_ctx = env, train_cfg, device, ctx
        self.check_replication_every = check_replication_every
        self.matmul_precision = check_matmul_precision(
            "agent.matmul_precision", train_cfg.get("matmul_precision", "ieee")
        )
        """The models' float32 matmul precision on a GPU (``RunnerCfg.matmul_precision``, ``tf32`` by default there):
        set around the policy's inference and the update, never around the env's step. A train_cfg dict without the
        key (rsl_rl's own form) keeps PyTorch's IEEE float32."""
        self.task_id = task_id
        """Saved in every checkpoint's identity, so another task's checkpoint is refused on resume and play."""
        # rsl_rl's names for the rank layout, which its algorithms and users read.
        self.is_distributed, self.gpu_world_size = ctx.is_distributed, ctx.world_size
        self.gpu_global_rank, self.gpu_local_rank = ctx.rank, ctx.local_rank
        self.cfg["multi_gpu"] = self._multi_gpu_cfg()

        alg_class = resolve_callable(self.cfg["algorithm"]["class_name"])
        self.alg = alg_class.construct_algorithm(env.get_observations(), env, self.cfg, device)
        self.logger = TrainingLogger(log_dir if ctx.is_main else None, self.cfg, env.cfg, env.num_envs, ctx, device)
        self.current_learning_iteration = 0
        self.stop_requested = False
        """Set (by a signal handler, through ``request_stop``) to end training after the current iteration, with a
        checkpoint; an iteration still under way ``STOP_GRACE_S`` later is abandoned (``Interrupted``)."""
        self.stop_requested_at: float | None = None
        self._stop_points = 0
        self._stop_hooks: list = []
        self.stopped_early = False
        self.planned_final_iteration: int | None = None
        """The iteration count the run plans to reach; saved in checkpoints so a restarted job keeps it."""

    def _multi_gpu_cfg(self) -> dict | None:
        ctx = self.dist_ctx
        if not ctx.is_distributed:
            return None
        if not distributed.is_initialized():
            raise DistributedConfigError("a distributed runner needs the process group started first (robolab.session)")
        expected = "cpu" if self.device == "cpu" else f"cuda:{ctx.local_rank}"
        if self.device != expected:
            raise DistributedConfigError(
                f"device={self.device!r} on local rank {ctx.local_rank}: expected {expected!r}"
            )
        return {"global_rank": ctx.rank, "local_rank": ctx.local_rank, "world_size": ctx.world_size}

    # --- stopping -----------------------------------------------------------------------------------------
    def request_stop(self) -> None:
        """End training after the iteration under way (signal handlers call this). An iteration that has not ended
        ``STOP_GRACE_S`` later (a long update, a slow env) is abandoned at the next env or optimiser step, the
        models restored to the last complete iteration, which is what gets saved."""
        if not self.stop_requested:
            self.stop_requested, self.stop_requested_at = True, time.monotonic()

    def _stop_point(self) -> None:
        """Raise ``Interrupted`` if a stop was requested long enough ago; called at every env and optimiser step.

        With several ranks the decision is collective (every ``STOP_CHECK_EVERY`` calls, which every rank makes
        alike), so all ranks abandon the same step; one process checks its own flag each call."""
        self._stop_points += 1
        late = self.stop_requested_at is not None and time.monotonic() - self.stop_requested_at > STOP_GRACE_S
        if self.is_distributed:
            if self._stop_points % STOP_CHECK_EVERY or not distributed.any_rank(late):
                return
        elif not late:
            return
        raise Interrupted

    def _hook_optimizers(self) -> None:
        """A stop point before every optimiser step of the algorithm (PPO, the AMP discriminator, distillation)."""
        if self._stop_hooks:
            return
        for optimizer in self.alg.synced_optimizers().values():
            self._stop_hooks.append(optimizer.register_step_pre_hook(lambda *_: self._stop_point()))

    def _abandon(self, it: int, start_it: int) -> None:
        """Iteration ``it`` was cut short: the state after ``it - 1`` is the run's, saved unless it already is."""
        self.current_learning_iteration = it - 1
        self.stopped_early = True
        last = it - 1
        if last >= start_it and last % self.cfg["save_interval"] != 0:
            self._save_iteration(last)
        print(
            f"[robolab] rank {self.gpu_global_rank}: iteration {it} abandoned (stop requested); model_{last}.pt is "
            "the last complete iteration"
            if last >= 0
            else f"[robolab] rank {self.gpu_global_rank}: stopped during the first iteration; nothing trained to save"
        )

    # --- the training loop -------------------------------------------------------------------------------
    def learn(self, num_learning_iterations: int, init_at_random_ep_len: bool = False) -> None:
        """Train ``num_learning_iterations`` iterations, or fewer when a stop is requested (``stopped_early``)."""
        if init_at_random_ep_len:  # spread episode ends over the first episode (exploration, smoother stats)
            self.env.episode_length_buf = torch.randint_like(
                self.env.episode_length_buf, high=int(self.env.max_episode_length)
            )
        obs = self.env.get_observations().to(self.device)
        self.alg.train_mode()
        if self.is_distributed:  # every rank starts from rank 0's models
            self.alg.broadcast_parameters()
        with console.library_chatter():  # "Storing git diff ..."
            self.logger.init_logging_writer()
        self._hook_optimizers()
        start_it = self.current_learning_iteration
        total_it = start_it + num_learning_iterations
        for it in range(start_it, total_it):
            before_update = None
            try:
                obs, collect_s = self._collect(obs)
                before_update = self.alg.snapshot()
                start = time.time()
                with models_precision(self.matmul_precision):
                    losses = self.alg.update()
            except Interrupted:
                if before_update is not None:
                    self.alg.restore(before_update)
                self._abandon(it, start_it)
                break
            learn_s = time.time() - start
            self.current_learning_iteration = it
            stats = self.logger.global_statistics()
            self.logger.log_iteration(
                IterationRecord(
                    it,
                    start_it,
                    total_it,
                    collect_s,
                    learn_s,
                    losses,
                    float(self.alg.learning_rate),
                    float(self.alg.get_policy().output_std.detach().mean()),
                    stats,
                )
            )
            saved = it % self.cfg["save_interval"] == 0 and self._save_iteration(it)
            self._maybe_check_replication(it)
            # Every rank must leave at the same iteration, so the request is agreed on collectively.
            if distributed.any_rank(self.stop_requested):
                if not saved:
                    self._save_iteration(it)
                self.stopped_early = True
                break
        else:
            self._save_iteration(self.current_learning_iteration)
        if self.logger.writer is not None:
            self.logger.stop_logging_writer()

    def _collect(self, obs):
        """``num_steps_per_env`` env steps with the current policy, then the returns; (last obs, seconds)."""
        start = time.time()
        rnd = self.cfg["algorithm"].get("rnd_cfg")
        with torch.inference_mode():
            nan_watch = NanWatch() if self.cfg.get("check_for_nan", True) else None
            for _ in range(self.cfg["num_steps_per_env"]):
                self._stop_point()
                with models_precision(self.matmul_precision):
                    actions = self.alg.act(obs)
                obs, rewards, dones, extras = self.env.step(actions.to(self.env.device))
                if nan_watch is not None:
                    nan_watch.add(obs, rewards, dones)
                obs, rewards, dones = obs.to(self.device), rewards.to(self.device), dones.to(self.device)
                with models_precision(self.matmul_precision):  # (AMP's discriminator rewards the step here)
                    self.alg.process_env_step(obs, rewards, dones, extras)
                self.logger.process_env_step(rewards, dones, extras, self.alg.intrinsic_rewards if rnd else None)
            if nan_watch is not None:
                nan_watch.check()
            collect_s = time.time() - start
            with models_precision(self.matmul_precision):
                self.alg.compute_returns(obs)
        return obs, collect_s

    def _save_iteration(self, it: int) -> bool:
        """``model_<it>.pt``, written by the rank that writes. Every rank calls it (their env states are gathered
        into the file) and every rank gets True: the iteration is saved."""
        env_state = self._gather_env_state()
        if self.logger.writer is not None and self.logger.log_dir is not None:
            self.save(os.path.join(self.logger.log_dir, f"model_{it}.pt"), env_state=env_state)
        return True

    def _gather_env_state(self) -> list[dict] | None:
        """Every rank's ``env.state_dict()`` (the terrain curriculum's levels), rank order; None for an env that
        keeps none (the same on every rank: they run one task)."""
        local = self._local_env_state()
        if local is None:
            return None
        return distributed.all_gather_object(local) if self.is_distributed else [local]

    def _local_env_state(self) -> dict | None:
        """This rank's ``env.state_dict()`` on the CPU; None for an env that keeps none."""
        state = self.env.state_dict() if hasattr(self.env, "state_dict") else {}
        return {key: value.detach().cpu() for key, value in state.items()} or None

    # --- replication ------------------------------------------------------------------------------------
    def _maybe_check_replication(self, it: int) -> None:
        every = self.check_replication_every
        if every and self.is_distributed and (it + 1) % every == 0:
            self.check_replication()

    def check_replication(self) -> None:
        tensors = self.alg.replication_tensors()
        distributed.check_replication(tensors)
        if self.dist_ctx.is_main:
            print(
                f"[robolab] replication check passed: {len(tensors)} tensors identical on {self.gpu_world_size} ranks"
            )

    # --- checkpoints ------------------------------------------------------------------------------------
    def _rng_state(self) -> dict:
        state: dict[str, torch.Tensor | str] = {"torch": torch.get_rng_state()}
        if torch.cuda.is_available() and str(self.device).startswith("cuda"):
            state["cuda"] = torch.cuda.get_rng_state(self.device)
        generator = getattr(self.env, "generator", None)
        if isinstance(generator, torch.Generator):
            state["env"] = generator.get_state()
            state["env_device"] = generator.device.type
        return state

    def identity(self) -> dict:
        """What a checkpoint of this run must match to be resumed or played here (``checkpoint.check_identity``)."""
        models = self.alg.synced_modules() if hasattr(self.alg, "synced_modules") else {"policy": self.alg.get_policy()}
        return {
            "task": self.task_id,
            "runner": type(self).__name__,
            "algorithm": type(self.alg).__name__,
            "observations": {k: list(v.shape[1:]) for k, v in self.env.get_observations().items()},
            "models": {
                f"{m}.{n}": list(t.shape) for m, module in models.items() for n, t in module.state_dict().items()
            },
        }

    def save(self, path: str, infos: dict | None = None, env_state: list[dict] | None = None) -> None:
        """A checkpoint at ``path``, written atomically; ``env_state``: every rank's env state (``_gather_env_state``;
        without it, this rank's alone)."""
        saved = self.alg.save()
        if env_state is None and not self.is_distributed:
            local = self._local_env_state()
            env_state = [local] if local is not None else None
        if env_state is not None:
            saved["env_state"] = env_state
        saved["identity"] = self.identity()
        saved["iter"] = self.current_learning_iteration
        saved["infos"] = infos
        saved["world_size"] = self.gpu_world_size
        saved["final_iteration"] = self.planned_final_iteration
        saved["rng_state"] = self._rng_state()
        checkpoint.save_atomic(saved, path)
        self.logger.save_model(path, self.current_learning_iteration)

    def load(
        self, path: str, load_cfg: dict | None = None, strict: bool = True, map_location=None, resume: bool = True
    ) -> dict | None:
        """Restore a checkpoint of this kind of run (its identity is checked first; nothing changes if it differs).

        ``resume=False`` (play, evaluation) loads the models alone: the env keeps the state its own config and seed
        gave it (an evaluation's commands and terrain, not the curriculum's or the random streams' at the save)."""
        loaded = checkpoint.load(path, map_location=map_location or self.device)
        identity = self.identity()
        checkpoint.check_identity(path, loaded.get("identity"), identity if self.task_id else _without_task(identity))
        try:
            resumed = self.alg.load(loaded, load_cfg, strict)
        except (KeyError, RuntimeError) as err:  # a checkpoint without an identity whose tensors do not fit
            reason = first_line(err)
            raise checkpoint.CheckpointError(f"checkpoint {path!r} does not fit this run's models: {reason}") from None
        if resumed:
            # model_<it>.pt is the state after iteration it: continue with the next one.
            self.current_learning_iteration = loaded["iter"] + 1
            self.planned_final_iteration = loaded.get("final_iteration")
        if resumed and resume:
            self._restore_env_state(loaded.get("env_state"))
        if resume:
            self._restore_rng(loaded.get("rng_state"), loaded.get("world_size", 1))
        return loaded.get("infos")

    def load_policy(self, path: str) -> None:
        """Start this run's policy from ``path``: a distillation run's student or a PPO run's actor, whose tensors
        must fit ``actor`` one for one. The critic, the optimiser and the iteration count stay fresh; the env's
        curriculum continues from the levels saved with the policy (its commands' ranges too) when the saved env
        state has the keys this env's has."""
        loaded = checkpoint.load(path, map_location=self.device)
        role = "student" if "student_state_dict" in loaded else "actor"
        state = loaded.get(f"{role}_state_dict")
        if state is None:
            raise checkpoint.CheckpointError(
                f"--init_policy={path!r} holds no policy (expected a distillation or PPO checkpoint)"
            )
        actor = self.alg.get_policy()
        try:
            checkpoint.check_shapes(actor, state, "policy")
        except checkpoint.CheckpointError as err:
            raise checkpoint.CheckpointError(f"--init_policy={path!r}: {err} (agent.actor must match it)") from None
        actor.load_state_dict(state, strict=True)
        std = self.cfg.get("init_policy_std")
        if std is not None:
            set_action_std(actor, float(std))
        # The curriculum goes on only from an env that keeps what this one keeps (the same terrain and command
        # terms): another task's saved command ranges would replace this task's.
        saved, own = loaded.get("env_state"), self._local_env_state()
        same_kind = bool(saved) and own is not None and set(saved[0]) == set(own)
        if same_kind:
            self._restore_env_state(saved)
        carried = "; the curriculum continues from its levels" if same_kind else ""
        noise = f"; its action std set to {std:g}" if std is not None else ""
        print(f"[robolab] policy started from the {role} of {path}; the critic starts fresh{noise}{carried}")

    def _restore_env_state(self, states: list[dict] | None) -> None:
        """Each rank resumes its own saved env state; with another number of ranks, every rank reads all ranks'
        states together (the env spreads them over its envs: the curriculum's level distribution is kept)."""
        if not states or not hasattr(self.env, "load_state_dict"):
            return
        if len(states) == self.gpu_world_size:
            self.env.load_state_dict(states[self.gpu_global_rank])
        else:
            self.env.load_state_dict({key: torch.cat([s[key] for s in states]) for key in states[0]})

    def _restore_rng(self, state: dict | None, saved_world_size: int) -> None:
        # Only rank 0's streams are in the file; replaying them on every rank would make all ranks sample the
        # same noise, so multi-rank resumes re-seed each rank from (iteration, rank) instead.
        if state is None:
            return
        generator = getattr(self.env, "generator", None)
        if self.gpu_world_size == 1 and saved_world_size == 1:
            torch.set_rng_state(state["torch"].cpu())
            if "cuda" in state and str(self.device).startswith("cuda"):
                torch.cuda.set_rng_state(state["cuda"].cpu(), self.device)
            if "env" in state and isinstance(generator, torch.Generator):
                # A generator's state only fits a generator of the same kind: a GPU run resumed or played on a
                # CPU (or the reverse) re-seeds. Checkpoints before "env_device" tell by the state's size.
                same_kind = state.get("env_device", generator.device.type) == generator.device.type
                try:
                    if not same_kind:
                        raise RuntimeError("generator of another device")
                    generator.set_state(state["env"].cpu())
                except RuntimeError:
                    generator.manual_seed(1_000_003 * self.current_learning_iteration)
        else:
            seed = 1_000_003 * self.current_learning_iteration + self.gpu_global_rank
            torch.manual_seed(seed)
            if isinstance(generator, torch.Generator):
                generator.manual_seed(seed)


def set_action_std(policy: torch.nn.Module, std: float) -> None:
    """Every action's noise to ``std``, in whichever form the policy's Gaussian keeps it (rsl_rl's ``std_type``)."""
    distribution = getattr(policy, "distribution", None)
    if isinstance(getattr(distribution, "std_param", None), torch.nn.Parameter):
        distribution.std_param.data.fill_(std)
    elif isinstance(getattr(distribution, "log_std_param", None), torch.nn.Parameter):
        distribution.log_std_param.data.fill_(math.log(std))
    else:
        raise ValueError(
            f"agent.init_policy_std={std!r}: the policy has no learned action noise to set "
            "(its distribution_cfg names no Gaussian with a std)"
        )


def _without_task(identity: dict) -> dict:
    return {k: v for k, v in identity.items() if k != "task"}


class NanWatch:
    """rsl_rl's ``check_nan`` over a whole collection: one flag per env output, or-ed on the device each step and
    read once at the end (reading it every step would wait for the GPU every step)."""

    def __init__(self) -> None:
        self.names: list[str] = []
        self.flags: torch.Tensor | None = None

    def add(self, obs, rewards: torch.Tensor, dones: torch.Tensor) -> None:
        outputs = {f"observation group '{key}'": value for key, value in obs.items()}
        outputs.update({"rewards": rewards, "dones": dones})
        self.names = list(outputs)
        flags = torch.stack([torch.isnan(value.float()).any() for value in outputs.values()])
        self.flags = flags if self.flags is None else self.flags | flags

    def check(self) -> None:
        if self.flags is None or not bool(self.flags.any()):
            return
        first = self.names[int(self.flags.nonzero()[0])]
        raise ValueError(
            f"The {first} returned by the environment contains NaN values (in this iteration's collection). This "
            "usually indicates a bug in the environment's step(), reset(), reward or termination computation."
        )
