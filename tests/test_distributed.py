"""Distributed training on the CPU with gloo, launched for real (torchrun, or launcher variables by hand)."""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

from conftest import ROOT, TINY, TRAIN, clean_env, free_port, run, train_cmd
from robolab import distributed
from robolab.distributed import DistributedConfigError, DistributedContext, read_context

HELPERS = ROOT / "tests" / "helpers"


def torchrun(nproc: int, script: str, *args: str, extra: list[str] = ()) -> list[str]:
    return [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--standalone",
        f"--nproc_per_node={nproc}",
        *extra,
        script,
        *args,
    ]


def dist_train_args(log_root: str, iterations: int = 3) -> list[str]:
    return ["--distributed", "--device", "cpu", *TINY, "--max_iterations", str(iterations), "--log_root", log_root]


# --- context and validation (no process group) ----------------------------------------------------------
def test_context_from_torchrun_slurm_and_openmpi_variables():
    assert read_context({}) == DistributedContext()
    ctx = read_context({"WORLD_SIZE": "4", "RANK": "3", "LOCAL_RANK": "1", "LOCAL_WORLD_SIZE": "2"})
    assert (ctx.world_size, ctx.rank, ctx.local_rank, ctx.launcher, ctx.local_world_size) == (4, 3, 1, "torchrun", 2)
    ctx = read_context(
        {"SLURM_NTASKS": "8", "SLURM_PROCID": "5", "SLURM_LOCALID": "1", "SLURM_NTASKS_PER_NODE": "4(x2)"}
    )
    assert (ctx.world_size, ctx.rank, ctx.local_rank, ctx.launcher, ctx.local_world_size) == (8, 5, 1, "slurm", 4)
    # srun -n 2 in a job that gave no --ntasks-per-node: only the step's (or the job's) per-node layout says that
    # two tasks share this node, so each takes half of its cores, not all of them.
    ctx = read_context({"SLURM_NTASKS": "2", "SLURM_PROCID": "1", "SLURM_LOCALID": "1", "SLURM_TASKS_PER_NODE": "2"})
    assert ctx.local_world_size == 2
    step = {"SLURM_NTASKS": "7", "SLURM_PROCID": "6", "SLURM_LOCALID": "0", "SLURM_NODEID": "3"}
    assert (
        read_context({**step, "SLURM_STEP_TASKS_PER_NODE": "2(x3),1", "SLURM_TASKS_PER_NODE": "4"}).local_world_size
        == 1
    )
    assert read_context({**step, "SLURM_STEP_TASKS_PER_NODE": "2(x3),1", "SLURM_NODEID": "1"}).local_world_size == 2
    assert read_context({**step, "SLURM_TASKS_PER_NODE": "oops"}).local_world_size == 1
    ctx = read_context({"OMPI_COMM_WORLD_SIZE": "2", "OMPI_COMM_WORLD_RANK": "1", "OMPI_COMM_WORLD_LOCAL_RANK": "0"})
    assert (ctx.world_size, ctx.rank, ctx.local_rank, ctx.launcher) == (2, 1, 0, "openmpi")
    ctx = read_context({"PMI_SIZE": "4", "PMI_RANK": "3", "MPI_LOCALRANKID": "1", "MPI_LOCALNRANKS": "2"})
    assert (ctx.world_size, ctx.rank, ctx.local_rank, ctx.launcher, ctx.local_world_size) == (4, 3, 1, "mpich", 2)
    # torchrun's variables win over Slurm's when both are present (torchrun inside an srun allocation)
    both = {"WORLD_SIZE": "2", "RANK": "0", "LOCAL_RANK": "0", "SLURM_NTASKS": "1", "SLURM_PROCID": "0"}
    assert read_context(both).launcher == "torchrun"


@pytest.mark.parametrize(
    "env, message",
    [
        ({"WORLD_SIZE": "2", "RANK": "2", "LOCAL_RANK": "0"}, "RANK=2: must be in [0, WORLD_SIZE=2)"),
        ({"WORLD_SIZE": "2", "RANK": "0", "LOCAL_RANK": "5"}, "LOCAL_RANK=5"),
        ({"WORLD_SIZE": "two", "RANK": "0"}, "WORLD_SIZE='two': must be an integer"),
        ({"SLURM_NTASKS": "2", "SLURM_PROCID": "7", "SLURM_LOCALID": "0"}, "SLURM_PROCID=7"),
    ],
)
def test_bad_launcher_variables_are_named(env, message):
    with pytest.raises(DistributedConfigError) as info:
        read_context(env)
    assert message in str(info.value)


def test_device_rules(monkeypatch):
    two_ranks = DistributedContext(world_size=2, rank=0, local_rank=0, launcher="torchrun")
    assert distributed.resolve_device("cpu", two_ranks) == "cpu"
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 0)
    with pytest.raises(DistributedConfigError, match="LOCAL_RANK=0: only 0 CUDA device"):
        distributed.resolve_device("cuda", two_ranks)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)
    assert distributed.resolve_device("cuda", DistributedContext(2, 1, 1, "torchrun")) == "cuda:1"
    with pytest.raises(DistributedConfigError, match="--device='cuda:1' on LOCAL_RANK=0: each rank must use cuda:0"):
        distributed.resolve_device("cuda:1", two_ranks)
    with pytest.raises(DistributedConfigError, match="'nccl' needs a CUDA device"):
        distributed.backend_for("cpu", "nccl")
    assert distributed.backend_for("cpu") == "gloo" and distributed.backend_for("cuda:0") == "nccl"


# --- training under torchrun ------------------------------------------------------------------------------
@pytest.mark.slow
@pytest.mark.parametrize(
    ("nproc", "backend"), [(2, "warp"), (3, "mujoco"), (4, "mujoco")], ids=["2-warp", "3-mujoco", "4-mujoco"]
)
def test_ranks_train_with_one_run_dir_global_totals_and_identical_state(tmp_path, nproc, backend):
    """The multi-GPU runs' gloo equivalent: every rank's parameters, buffers and optimiser states identical at every
    iteration, on MuJoCo C and on MuJoCo Warp (warp's CPU device: the GPU backend's code path, on 2 ranks)."""
    log_root, dump = str(tmp_path / "logs"), tmp_path / "dump"
    dump.mkdir()
    args = dist_train_args(log_root) + ["--check_replication_every", "1", f"env.backend={backend}"]
    res = run(torchrun(nproc, str(HELPERS / "train_and_dump.py"), str(dump), *args), timeout=300)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    runs = list(Path(log_root, "go2_flat").iterdir())
    assert len(runs) == 1
    summary = json.loads((runs[0] / "summary.json").read_text())
    assert summary["world_size"] == nproc
    assert summary["total_env_steps"] == 3 * 8 * 16 * nproc  # iterations x steps x envs x ranks
    ranks = [json.loads((dump / f"rank{r}.json").read_text()) for r in range(nproc)]
    assert [r["seed"] for r in ranks] == [42 + r for r in range(nproc)]
    reference = ranks[0]["digests"]
    assert any(".state." in name for name in reference)  # optimiser moments are compared too
    assert any("obs_normalizer" in name for name in reference)
    for other in ranks[1:]:
        assert other["digests"] == reference


@pytest.mark.slow
@pytest.mark.parametrize("extension", [[], ["symmetry"]], ids=["ppo", "with_symmetry"])
def test_two_ranks_times_b_equal_one_rank_times_2b(tmp_path, extension):
    """The multi-GPU claim: N ranks x B samples give the update of 1 rank x N*B samples; also with rsl_rl's
    symmetry extension (each rank mirrors its own minibatch; the mirror loss's gradient is averaged with the rest)."""
    single, double, local = tmp_path / "one.pt", tmp_path / "two.pt", tmp_path / "rsl.pt"
    helper = str(HELPERS / "ppo_equivalence.py")
    for cmd in (
        torchrun(1, helper, str(single), "robolab", *extension),
        torchrun(2, helper, str(double), "robolab", *extension),
        torchrun(2, helper, str(local), "rsl_rl", *extension),
    ):
        res = run(cmd, timeout=120)
        assert res.returncode == 0, res.stderr[-3000:]
    one, two, rsl = torch.load(single), torch.load(double), torch.load(local)
    for name, grad in one["grads"].items():
        torch.testing.assert_close(two["grads"][name], grad, rtol=1e-5, atol=1e-6, msg=f"gradient {name}")
    for name, value in one["params"].items():
        torch.testing.assert_close(two["params"][name], value, rtol=1e-5, atol=1e-6, msg=f"parameter {name}")
    assert two["lr"] == pytest.approx(one["lr"], rel=1e-6)  # rsl_rl broadcasts the LR as float32
    # rsl_rl's own PPO normalises advantages per rank, so the same split does not give the big-batch update
    differs = [n for n, v in one["params"].items() if not torch.allclose(rsl["params"][n], v, rtol=1e-5, atol=1e-6)]
    assert differs, "rank-local advantage normalisation should have changed the update"


@pytest.mark.slow
def test_robolabs_update_on_two_ranks_gives_rsl_rls(tmp_path):
    """robolab's sync-free update (the KL all-reduced and the learning rate decided on the device) against rsl_rl's
    own on 2 gloo ranks, from the same advantages: the same gradients, parameters and learning rate."""
    ours, theirs = tmp_path / "robolab.pt", tmp_path / "rsl.pt"
    helper = str(HELPERS / "ppo_equivalence.py")
    for out, which in ((ours, "robolab"), (theirs, "rsl_rl")):
        res = run(torchrun(2, helper, str(out), which, "rank_local_advantages"), timeout=120)
        assert res.returncode == 0, res.stderr[-3000:]
    mine, reference = torch.load(ours), torch.load(theirs)
    for kind in ("grads", "params"):
        for name, value in reference[kind].items():
            torch.testing.assert_close(mine[kind][name], value, rtol=1e-5, atol=1e-6, msg=f"{kind} {name}")
    assert mine["lr"] == pytest.approx(reference["lr"], rel=1e-6)
    assert reference["lr"] != 1e-3  # the adaptive schedule moved it, on both


@pytest.mark.slow
def test_replication_check_names_the_diverging_tensor():
    res = run(torchrun(2, str(HELPERS / "check_replication_detects.py")), timeout=120)
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-2000:]
    assert "'1.bias' differs between rank 0 and rank 1" in res.stdout


# --- bad launches end every rank quickly -------------------------------------------------------------------
def launch_by_hand(
    ranks: list[dict], args_per_rank: list[list[str]], cwd: Path, port: int | None = None
) -> list[subprocess.Popen]:
    port = str(port or free_port())
    procs = []
    for variables, args in zip(ranks, args_per_rank):
        env = clean_env(MASTER_ADDR="127.0.0.1", MASTER_PORT=port, **variables)
        procs.append(
            subprocess.Popen(
                [sys.executable, TRAIN, *args],
                env=env,
                cwd=cwd,
                text=True,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
            )
        )
    return procs


def torchrun_vars(rank: int, world: int = 2) -> dict:
    return {"WORLD_SIZE": str(world), "RANK": str(rank), "LOCAL_RANK": str(rank), "LOCAL_WORLD_SIZE": str(world)}


@pytest.mark.slow
def test_config_mismatch_between_ranks_fails_on_every_rank_naming_the_key(tmp_path):
    log_root = str(tmp_path / "logs")
    base = dist_train_args(log_root, iterations=1)
    procs = launch_by_hand(
        [torchrun_vars(0), torchrun_vars(1)], [base, base + ["agent.algorithm.learning_rate=3e-4"]], tmp_path
    )
    start = time.time()
    outs = [p.communicate(timeout=120) for p in procs]
    assert time.time() - start < 60
    for p, (_, err) in zip(procs, outs):
        assert p.returncode == 2, err[-2000:]
        assert "config differs between ranks at: agent.algorithm.learning_rate" in err
    assert not Path(log_root).exists()


@pytest.mark.slow
@pytest.mark.parametrize("occupant", ["listener", "silent_peer"])
def test_rendezvous_failure_ends_every_rank_within_the_timeout(tmp_path, occupant):
    """The rendezvous port taken by another process (rank 0 cannot bind it; rank 1 dials the stranger), or a
    peer that never comes: every rank exits with one line within distributed.timeout_s, never hangs."""
    log_root = str(tmp_path / "logs")
    args = dist_train_args(log_root, iterations=1) + ["distributed.timeout_s=8"]
    with socket.socket() as squatter:
        squatter.bind(("127.0.0.1", 0))
        squatter.listen(8)  # accepts connections and never answers: not a c10d store
        port = squatter.getsockname()[1]
        if occupant == "listener":
            procs = launch_by_hand([torchrun_vars(0), torchrun_vars(1)], [args, args], tmp_path, port=port)
        else:  # only rank 1 starts; the address belongs to no store at all
            squatter.close()
            procs = launch_by_hand([torchrun_vars(1)], [args], tmp_path, port=port)
        start = time.time()
        outs = [p.communicate(timeout=120) for p in procs]
    elapsed = time.time() - start
    assert elapsed < 8 + 30, f"ranks took {elapsed:.0f} s to give up"
    for p, (_, err) in zip(procs, outs):
        assert p.returncode == 2, err[-2000:]
        lines = [line for line in err.strip().splitlines() if line.startswith("error:")]
        assert len(lines) == 1 and "rendezvous" in lines[0] and str(port) in lines[0], err[-2000:]
    assert not Path(log_root).exists()


@pytest.mark.slow
def test_nccl_on_cpu_is_refused_on_every_rank(tmp_path):
    res = run(torchrun(2, TRAIN, *dist_train_args(str(tmp_path), 1), "distributed.backend=nccl"), timeout=120)
    assert res.returncode != 0
    assert res.stderr.count("error: distributed backend 'nccl' needs a CUDA device") == 2


@pytest.mark.slow
def test_rank_beyond_world_size_is_refused_before_any_collective(tmp_path):
    res = run(
        train_cmd(*dist_train_args(str(tmp_path), 1)),
        env=clean_env(WORLD_SIZE="2", RANK="2", LOCAL_RANK="0"),
        timeout=60,
    )
    assert res.returncode == 2 and "RANK=2: must be in [0, WORLD_SIZE=2)" in res.stderr


@pytest.mark.slow
@pytest.mark.parametrize("how", [signal.SIGKILL, signal.SIGSTOP])
def test_a_dead_or_stopped_peer_ends_the_survivor_within_the_timeout_in_one_line(tmp_path, how):
    log_root = str(tmp_path / "logs")
    args = dist_train_args(log_root, iterations=100000) + ["distributed.timeout_s=20"]
    procs = launch_by_hand([torchrun_vars(0), torchrun_vars(1)], [args, args], tmp_path)
    deadline = time.time() + 120
    seen = ""
    while "[robolab] it 2/" not in seen and time.time() < deadline:  # training is under way on rank 0
        line = procs[0].stdout.readline()
        seen += line
        assert line or procs[0].poll() is None, "rank 0 ended early"
    procs[1].send_signal(how)
    killed_at = time.time()
    _, err = procs[0].communicate(timeout=60)  # its output drained: a closed pipe would fail its next print
    assert procs[0].returncode == 2
    assert time.time() - killed_at < 40  # the 20 s collective timeout, plus exit
    lines = [line for line in err.splitlines() if line.strip()]
    assert lines[-1].startswith("error: rank 0: a peer rank stopped answering or left the job (")
    assert "distributed.timeout_s=20" in lines[-1] and not any("Traceback" in line for line in lines)
    if how == signal.SIGSTOP:
        procs[1].send_signal(signal.SIGCONT)
    procs[1].wait(timeout=60)


# --- other launchers ----------------------------------------------------------------------------------------
@pytest.mark.slow
@pytest.mark.parametrize(
    "launcher, variables",
    [
        (
            "slurm",
            lambda r: {
                "SLURM_NTASKS": "2",
                "SLURM_PROCID": str(r),
                "SLURM_LOCALID": str(r),
                "SLURM_NTASKS_PER_NODE": "2",
            },
        ),
        (
            "openmpi",
            lambda r: {
                "OMPI_COMM_WORLD_SIZE": "2",
                "OMPI_COMM_WORLD_RANK": str(r),
                "OMPI_COMM_WORLD_LOCAL_RANK": str(r),
                "OMPI_COMM_WORLD_LOCAL_SIZE": "2",
            },
        ),
    ],
)
def test_slurm_and_openmpi_variables_drive_a_gloo_run(tmp_path, launcher, variables):
    log_root = str(tmp_path / "logs")
    args = dist_train_args(log_root, iterations=2)
    procs = launch_by_hand([variables(0), variables(1)], [args, args], tmp_path)
    outs = [p.communicate(timeout=300) for p in procs]
    for r, (p, (out, err)) in enumerate(zip(procs, outs)):
        assert p.returncode == 0, err[-3000:]
        assert f"rank {r}/2 (local rank {r}, launcher {launcher}): device cpu, seed {42 + r}" in out
    runs = list(Path(log_root, "go2_flat").iterdir())
    assert len(runs) == 1
    assert json.loads((runs[0] / "summary.json").read_text())["world_size"] == 2


@pytest.mark.slow
def test_two_nodes_on_one_machine_have_distinct_seeds_and_one_writer(tmp_path):
    port = str(free_port())
    nodes = []
    for node_rank in (0, 1):
        node_dir = tmp_path / f"node{node_rank}"
        node_dir.mkdir()
        cmd = [
            sys.executable,
            "-m",
            "torch.distributed.run",
            "--nnodes=2",
            f"--node_rank={node_rank}",
            "--nproc_per_node=1",
            "--master_addr=127.0.0.1",
            f"--master_port={port}",
            TRAIN,
            *dist_train_args(str(node_dir / "logs"), iterations=2),
        ]
        nodes.append(
            subprocess.Popen(
                cmd, cwd=node_dir, env=clean_env(), text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE
            )
        )
    outs = [p.communicate(timeout=300) for p in nodes]
    for p, (_, err) in zip(nodes, outs):
        assert p.returncode == 0, err[-3000:]
    assert "rank 0/2 (local rank 0, launcher torchrun): device cpu, seed 42" in outs[0][0]
    assert "rank 1/2 (local rank 0, launcher torchrun): device cpu, seed 43" in outs[1][0]
    assert len(list((tmp_path / "node0" / "logs" / "go2_flat").iterdir())) == 1
    assert list((tmp_path / "node1").iterdir()) == []  # global rank 1 created no file at all
