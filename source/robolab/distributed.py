"""The one module that talks to ``torch.distributed``.

Everything rank-related goes through here: reading the launcher's variables (torchrun, Slurm, Open MPI),
validating them before any collective, initialising the process group with a finite timeout, and the
small set of collectives the runners and algorithms need (broadcast, gradient averaging, running-stat
merging, scalar reduction, config and replication checks). Other modules never import
``torch.distributed``; a single-process run never touches it.
"""

from __future__ import annotations

import contextlib
import datetime
import hashlib
import os
import signal
import sys
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import torch
import torch.distributed as dist

from robolab.rsl_rl_api import reduce_gradients_in_buckets

DEFAULT_TIMEOUT_S = 300.0

# Launchers and the variables they set: (world size, global rank, local rank). First found wins.
LAUNCHER_VARIABLES = {
    "torchrun": ("WORLD_SIZE", "RANK", "LOCAL_RANK"),
    "slurm": ("SLURM_NTASKS", "SLURM_PROCID", "SLURM_LOCALID"),
    "openmpi": ("OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_LOCAL_RANK"),
    "mpich": ("PMI_SIZE", "PMI_RANK", "MPI_LOCALRANKID"),  # MPICH's and Intel MPI's Hydra process manager
}
# Processes on this node, used to share the CPU cores between them. Slurm's are per node, in its compressed form
# ("2(x3),1": two tasks on each of the first three nodes, one on the fourth): the step's layout first (srun's own,
# set even when the job gave no --ntasks-per-node), then the job's.
LOCAL_SIZE_VARIABLES = {
    "torchrun": ("LOCAL_WORLD_SIZE",),
    "slurm": ("SLURM_STEP_TASKS_PER_NODE", "SLURM_TASKS_PER_NODE", "SLURM_NTASKS_PER_NODE"),
    "openmpi": ("OMPI_COMM_WORLD_LOCAL_SIZE",),
    "mpich": ("MPI_LOCALNRANKS",),
}


class DistributedConfigError(ValueError):
    """A launch that cannot work (bad ranks, devices, backend or mismatched config); raised before any hang."""


class ReplicationError(RuntimeError):
    """Ranks hold different parameters or optimiser state."""


@dataclass(frozen=True)
class DistributedContext:
    """Who this process is in the job. ``world_size == 1`` means single-process."""

    world_size: int = 1
    rank: int = 0
    local_rank: int = 0
    launcher: str = "none"
    local_world_size: int = 1

    @property
    def is_distributed(self) -> bool:
        return self.world_size > 1

    @property
    def is_main(self) -> bool:
        return self.rank == 0


def _int_var(env: Mapping[str, str], name: str) -> int:
    value = env[name]
    try:
        return int(value)
    except ValueError:
        raise DistributedConfigError(f"{name}={value!r}: must be an integer") from None


def read_context(env: Mapping[str, str] | None = None) -> DistributedContext:
    """Read the rank layout from the first launcher whose variables are set (torchrun, Slurm, Open MPI)."""
    env = os.environ if env is None else env
    for launcher, (size_var, rank_var, local_var) in LAUNCHER_VARIABLES.items():
        if size_var not in env:
            continue
        world_size = _int_var(env, size_var)
        rank = _int_var(env, rank_var) if rank_var in env else 0
        local_rank = _int_var(env, local_var) if local_var in env else 0
        local_world_size = _local_size(env, launcher)
        ctx = DistributedContext(world_size, rank, local_rank, launcher, local_world_size)
        validate_ranks(ctx)
        return ctx
    return DistributedContext()


def _local_size(env: Mapping[str, str], launcher: str) -> int:
    """Processes on this node, from the first of the launcher's per-node variables that is set (1 if none is)."""
    node = env.get("SLURM_NODEID", "0")
    node = int(node) if node.isdigit() else 0
    for name in LOCAL_SIZE_VARIABLES[launcher]:
        if name in env:
            counts = _per_node_counts(env[name])
            if counts:
                return max(1, counts[min(node, len(counts) - 1)])
    return 1


def _per_node_counts(value: str) -> list[int]:
    """Slurm's compressed per-node counts expanded: "2(x3),1" -> [2, 2, 2, 1]; [] if it does not read so."""
    counts = []
    for part in value.split(","):
        number, _, repeat = part.strip().partition("(x")
        if not number.isdigit() or (repeat and not repeat.rstrip(")").isdigit()):
            return []
        counts += [int(number)] * (int(repeat.rstrip(")")) if repeat else 1)
    return counts


def validate_ranks(ctx: DistributedContext) -> None:
    """Refuse a world size, rank or local rank that cannot be, naming the launcher's variable."""
    size_var, rank_var, local_var = LAUNCHER_VARIABLES.get(ctx.launcher, ("world_size", "rank", "local_rank"))
    if ctx.world_size < 1:
        raise DistributedConfigError(f"{size_var}={ctx.world_size}: must be >= 1")
    if not 0 <= ctx.rank < ctx.world_size:
        raise DistributedConfigError(f"{rank_var}={ctx.rank}: must be in [0, {size_var}={ctx.world_size})")
    if not 0 <= ctx.local_rank < ctx.world_size:
        raise DistributedConfigError(f"{local_var}={ctx.local_rank}: must be in [0, {size_var}={ctx.world_size})")


def usable_cores() -> int:
    """The CPU cores this process may run on."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


MAX_COMPILE_WORKERS = 16
"""The cap of ``env.backend.compile_workers``' default: on one H200's 16 cores the largest of MuJoCo Warp's modules
already set the compile's length (docs/benchmarks/loop_h200/compile)."""


def default_compile_workers(cores: int | None = None) -> int:
    """Threads that compile a MuJoCo Warp step's modules: ``cores`` (default: the cores this process may use; a rank
    gets its share of a node, ``session.share_cpu_cores``), at most ``MAX_COMPILE_WORKERS``."""
    return max(1, min(usable_cores() if cores is None else cores, MAX_COMPILE_WORKERS))


def check_compile_workers(value) -> None:
    """Refuse an ``env.backend.compile_workers`` that is not null or an integer >= 0, in one line."""
    if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 0):
        raise ValueError(
            f"env.backend.compile_workers={value!r}: must be an integer >= 0 (0 or 1: compile at each kernel's first "
            f"launch) or null (the cores this process may use, at most {MAX_COMPILE_WORKERS})"
        )


def cpu_share(ctx: DistributedContext) -> int:
    """Cores this process should use: the usable cores split evenly between the processes of its node."""
    return max(1, usable_cores() // ctx.local_world_size)


def resolve_device(requested: str | None, ctx: DistributedContext) -> str:
    """The device this rank must use: ``cuda:<local_rank>`` for CUDA, ``cpu`` for CPU.

    ``requested`` is the user's ``--device`` (None, ``cpu``, ``cuda`` or ``cuda:N``). In a distributed job an
    explicit ``cuda:N`` must equal ``cuda:<LOCAL_RANK>``: anything else would put two ranks on one GPU.
    """
    if requested is None:
        requested = "cuda" if torch.cuda.is_available() else "cpu"
    try:
        device = torch.device(requested)
    except RuntimeError:
        raise DistributedConfigError(f"--device={requested!r}: expected cpu, cuda or cuda:<index>") from None
    if device.type == "cpu":
        return "cpu"
    if device.type != "cuda":
        raise DistributedConfigError(f"--device={requested!r}: only cpu and cuda devices are supported")
    visible = torch.cuda.device_count()
    local_var = LAUNCHER_VARIABLES.get(ctx.launcher, ("", "", "LOCAL_RANK"))[2]
    if ctx.is_distributed:
        if ctx.local_rank >= visible:
            raise DistributedConfigError(
                f"{local_var}={ctx.local_rank}: only {visible} CUDA device(s) visible to this process"
            )
        if device.index is not None and device.index != ctx.local_rank:
            raise DistributedConfigError(
                f"--device={requested!r} on {local_var}={ctx.local_rank}: each rank must use cuda:{ctx.local_rank}"
            )
        return f"cuda:{ctx.local_rank}"
    index = 0 if device.index is None else device.index
    if index >= visible:
        raise DistributedConfigError(f"--device={requested!r}: only {visible} CUDA device(s) visible")
    return f"cuda:{index}"


def backend_for(device: str, requested: str | None = None) -> str:
    """``nccl`` for CUDA, ``gloo`` for CPU; an explicit request must fit the device."""
    natural = "nccl" if device.startswith("cuda") else "gloo"
    if requested in (None, "", "auto"):
        return natural
    if requested not in ("nccl", "gloo"):
        raise DistributedConfigError(f"distributed backend {requested!r}: allowed are 'nccl', 'gloo', 'auto'")
    if requested == "nccl" and not device.startswith("cuda"):
        raise DistributedConfigError(f"distributed backend 'nccl' needs a CUDA device, got --device={device!r}")
    return requested


def initialize(ctx: DistributedContext, device: str, backend: str | None = None, timeout_s: float = DEFAULT_TIMEOUT_S):
    """Create the process group once (no-op when single-process or already initialised)."""
    if not ctx.is_distributed or dist.is_initialized():
        return
    if timeout_s <= 0:
        raise DistributedConfigError(f"distributed timeout {timeout_s}: must be a positive number of seconds")
    backend = backend_for(device, backend)
    _settings["timeout_s"] = timeout_s
    # Slurm and Open MPI do not set the rendezvous address torchrun does; default to a single-node setup.
    os.environ.setdefault("MASTER_ADDR", os.environ.get("SLURM_LAUNCH_NODE_IPADDR", "127.0.0.1"))
    os.environ.setdefault("MASTER_PORT", "29500")
    if device.startswith("cuda"):
        torch.cuda.set_device(device)
    timeout = datetime.timedelta(seconds=timeout_s)
    address = f"{os.environ['MASTER_ADDR']}:{os.environ['MASTER_PORT']}"
    # The rendezvous can wait past its own timeout (a port held by a process that is not a c10d store), so a
    # deadline of our own ends the process with one line; nothing has been written at this point.
    hang = (
        f"rendezvous at {address}: no process group after {timeout_s:g} s (port taken by another process, "
        "unreachable address, or a rank that never started; distributed.timeout_s)"
    )
    with _deadline(timeout_s + RENDEZVOUS_GRACE_S, hang):
        try:
            store = _restart_safe_store(ctx, timeout)
            dist.init_process_group(
                backend=backend,
                init_method=None if store is not None else "env://",
                store=store,
                rank=ctx.rank,
                world_size=ctx.world_size,
                timeout=timeout,
                device_id=torch.device(device) if backend == "nccl" else None,
            )
        except (RuntimeError, ValueError) as err:  # DistNetworkError (port in use), DistStoreError (timeout)
            detail = " ".join(str(err).split())[:300] or type(err).__name__
            raise DistributedConfigError(f"rendezvous at {address} failed: {detail}") from None


RENDEZVOUS_GRACE_S = 2.0
"""Beyond ``distributed.timeout_s``, how long the rendezvous may take before the process is ended."""


@contextlib.contextmanager
def _deadline(seconds: float, message: str):
    """End the process with ``error: <message>`` (exit 2) if the block has not finished after ``seconds``."""

    def abort() -> None:
        print(f"error: {message}", file=sys.stderr, flush=True)
        os._exit(2)

    timer = threading.Timer(seconds, abort)
    timer.daemon = True
    timer.start()
    try:
        yield
    finally:
        timer.cancel()


def _restart_safe_store(ctx: DistributedContext, timeout: datetime.timedelta):
    """The torchrun agent's store, namespaced by restart attempt; None outside torchrun.

    After ``torchrun --max-restarts`` restarts a group, the agent's store can still hold the previous
    attempt's connection keys, and the new processes then dial peers that no longer exist. A prefix per
    attempt gives every attempt a clean namespace.
    """
    if os.environ.get("TORCHELASTIC_USE_AGENT_STORE") != "True":
        return None
    attempt = os.environ.get("TORCHELASTIC_RESTART_COUNT", "0")
    agent_store = dist.TCPStore(  # pyright: ignore[reportPrivateImportUsage]
        os.environ["MASTER_ADDR"], int(os.environ["MASTER_PORT"]), ctx.world_size, is_master=False, timeout=timeout
    )
    return dist.PrefixStore(f"robolab/attempt_{attempt}", agent_store)  # pyright: ignore[reportPrivateImportUsage]


PR_SET_PDEATHSIG = 1
"""Linux ``prctl`` option: the signal a process gets when its parent dies."""


def end_with_launcher() -> None:
    """A torchrun worker whose launcher is gone (``kill -9`` of torchrun, a lost agent) gets SIGTERM, which stops
    training after the iteration under way with a checkpoint, as a pre-emption does; without it the workers train
    on, writing checkpoints, with nobody to restart or stop them. Linux only (``prctl(PR_SET_PDEATHSIG)``); torchrun
    only: a run started by hand or by ``nohup`` must outlive the shell that started it."""
    if "TORCHELASTIC_RUN_ID" not in os.environ or not sys.platform.startswith("linux"):  # torchrun's agent sets it
        return
    import ctypes

    parent = os.getppid()
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
    if os.getppid() != parent:  # the launcher died before the request took effect
        os.kill(os.getpid(), signal.SIGTERM)


def launcher_restart(env: Mapping[str, str] | None = None) -> bool:
    """True when the launcher restarted this job (torchrun ``--max-restarts``, a requeued Slurm job)."""
    env = os.environ if env is None else env
    counts = (env.get("TORCHELASTIC_RESTART_COUNT", "0"), env.get("SLURM_RESTART_COUNT", "0"))
    return any(c.isdigit() and int(c) > 0 for c in counts)


LOST_PEER_SIGNS = (
    "Timed out waiting",  # gloo: a peer stopped (SIGSTOP, a hung node) past the timeout
    "Connection closed by peer",  # gloo: a peer died
    "Connection reset by peer",
    "NCCL communicator was aborted",
    "Watchdog caught collective operation timeout",  # NCCL's timeout
    "remote process exited",
)


def lost_peer(err: BaseException) -> str | None:
    """The one line for a collective that failed because another rank died, hung or stopped (``None`` for any other
    error): which it was, the timeout that caught it, and that the last checkpoint stands."""
    text = " ".join(str(err).split())
    if not (isinstance(err, getattr(dist, "DistError", ())) or any(sign in text for sign in LOST_PEER_SIGNS)):
        return None
    reason = text.split("] ", 1)[-1][:160]  # gloo prefixes its source location
    return (
        f"rank {rank()}: a peer rank stopped answering or left the job ({reason}; distributed.timeout_s="
        f"{_settings.get('timeout_s', DEFAULT_TIMEOUT_S):g}); the last checkpoint stands: resume with --resume, or let "
        "the launcher restart the job"
    )


_settings: dict[str, float] = {}
"""The process group's settings as started (``initialize``), for messages."""


def is_initialized() -> bool:
    """Whether a process group is up."""
    return dist.is_available() and dist.is_initialized()


def shutdown() -> None:
    """Destroy the process group, if there is one."""
    if is_initialized():
        dist.destroy_process_group()


def world_size() -> int:
    """The number of ranks (1 without a process group)."""
    return dist.get_world_size() if is_initialized() else 1


def rank() -> int:
    """This process's rank (0 without a process group)."""
    return dist.get_rank() if is_initialized() else 0


def barrier() -> None:
    """Wait for every rank (nothing without a process group)."""
    if is_initialized():
        dist.barrier()


# --- collectives used by runners and algorithms ----------------------------------------------------------
def broadcast_object(obj: Any, src: int = 0) -> Any:
    """Send a picklable object from ``src`` to every rank (run-directory paths, resume choices)."""
    if not is_initialized():
        return obj
    box = [obj]
    dist.broadcast_object_list(box, src=src)
    return box[0]


def broadcast_module(module: torch.nn.Module, src: int = 0) -> None:
    """Copy every parameter and buffer (normaliser statistics included) of ``module`` from ``src``."""
    if not is_initialized():
        return
    for tensor in module.state_dict().values():
        dist.broadcast(tensor, src=src)


def average_gradients(params: Iterable[torch.nn.Parameter], bucket_mb: float = 25.0) -> None:
    """Replace every gradient by its mean over ranks, packing gradients into buckets of ``bucket_mb``."""
    if is_initialized():
        reduce_gradients_in_buckets(params, world_size(), bucket_mb)


def _collective_device() -> torch.device:
    """NCCL reduces CUDA tensors only; gloo takes CPU tensors."""
    return torch.device("cuda", torch.cuda.current_device()) if dist.get_backend() == "nccl" else torch.device("cpu")


def _all_reduce(tensor: torch.Tensor, op) -> torch.Tensor:
    """In-place all-reduce of ``tensor`` wherever it lives (bookkeeping tensors may sit on the CPU under NCCL)."""
    device = _collective_device()
    if tensor.device == device:
        dist.all_reduce(tensor, op=op)
    else:
        staged = tensor.to(device)
        dist.all_reduce(staged, op=op)
        tensor.copy_(staged)
    return tensor


def all_reduce_sum(tensor: torch.Tensor) -> torch.Tensor:
    """Sum ``tensor`` over ranks in place, and return it."""
    if is_initialized():
        _all_reduce(tensor, dist.ReduceOp.SUM)
    return tensor


def any_rank(flag: bool) -> bool:
    """True on every rank if ``flag`` is true on any rank (stop requests, early exits)."""
    if not is_initialized():
        return flag
    t = _all_reduce(torch.tensor([1.0 if flag else 0.0]), dist.ReduceOp.MAX)
    return bool(t.item() > 0)


def global_mean_std(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Mean and unbiased std of ``x`` over all its elements on all ranks (what one big batch would give)."""
    stats = torch.stack([x.sum(), x.square().sum(), torch.tensor(float(x.numel()), device=x.device)]).double()
    all_reduce_sum(stats)
    total, total_sq, count = stats
    mean = total / count
    var = (total_sq - count * mean * mean) / (count - 1).clamp_min(1)
    return mean.to(x.dtype), var.clamp_min(0).sqrt().to(x.dtype)


def all_gather_object(obj: Any) -> list[Any]:
    """Every rank's ``obj``, in rank order."""
    if not is_initialized():
        return [obj]
    out: list[Any] = [None] * world_size()
    dist.all_gather_object(out, obj)
    return out


# --- consistency checks ----------------------------------------------------------------------------------
def _flatten(tree: Any, prefix: str = "") -> dict[str, Any]:
    if isinstance(tree, Mapping):
        flat: dict[str, Any] = {}
        for key, value in tree.items():
            flat.update(_flatten(value, f"{prefix}{key}."))
        return flat
    return {prefix[:-1]: tree}


def check_config_consistency(config: Mapping[str, Any], ignore: Iterable[str] = ("seed", "device")) -> None:
    """Fail on every rank, naming the keys, when ranks were launched with different configs.

    Ranks exchange a digest per key (keys whose last component is in ``ignore`` are skipped: seeds and
    devices differ by design). A mismatch raises ``DistributedConfigError`` on every rank at once, where a
    silent mismatch would deadlock or diverge later.
    """
    if not is_initialized():
        return
    ignored = set(ignore)
    digests = {
        key: hashlib.sha256(repr(value).encode()).hexdigest()[:16]
        for key, value in _flatten(config).items()
        if key.split(".")[-1] not in ignored
    }
    everyone = all_gather_object(digests)
    differing = sorted(key for key in set().union(*everyone) if len({d.get(key, "<missing>") for d in everyone}) > 1)
    if differing:
        shown = ", ".join(differing[:10]) + (f" (+{len(differing) - 10} more)" if len(differing) > 10 else "")
        raise DistributedConfigError(f"config differs between ranks at: {shown}")


def tensor_digest(tensor: torch.Tensor) -> str:
    """A short SHA-256 of a tensor's bytes (the replication check compares these across ranks)."""
    return hashlib.sha256(tensor.detach().to("cpu").contiguous().numpy().tobytes()).hexdigest()[:16]


def check_replication(named_tensors: Mapping[str, torch.Tensor]) -> None:
    """Brax-style replication check: every rank must hold bit-identical tensors, else name the first that differs."""
    if not is_initialized():
        return
    digests = [(name, tensor_digest(t)) for name, t in named_tensors.items()]
    everyone = all_gather_object(digests)
    reference = everyone[0]
    for other_rank, theirs in enumerate(everyone[1:], start=1):
        if [n for n, _ in theirs] != [n for n, _ in reference]:
            raise ReplicationError(f"rank {other_rank} holds a different set of tensors than rank 0")
        for (name, ours), (_, other) in zip(reference, theirs):
            if ours != other:
                raise ReplicationError(
                    f"replication check failed: '{name}' differs between rank 0 and rank {other_rank}"
                )


def run_on_main(fn, *args, **kwargs):
    """Run ``fn`` on rank 0 only and hand its result to every rank.

    If ``fn`` raises on rank 0, every rank raises the same error (rank 0 would otherwise leave the others
    blocked in the broadcast until the timeout).
    """
    if not is_initialized():
        return fn(*args, **kwargs)
    outcome = None
    if rank() == 0:
        try:
            outcome = ("ok", fn(*args, **kwargs))
        except Exception as err:  # forwarded to every rank below
            outcome = ("error", (type(err), str(err)))
    status, payload = broadcast_object(outcome)
    if status == "error":
        err_type, message = payload
        raise err_type(message) if issubclass(err_type, (ValueError, OSError)) else RuntimeError(message)
    return payload
