"""scripts/slurm/train.sbatch submitted to a real one-node Slurm cluster (Debian's slurm-wlm and munge), which a
fixture brings up with this machine's cores and stops afterwards. `.ci/run` installs Slurm and sets
ROBOLAB_REQUIRE_LAUNCHERS=1, so there these tests cannot be skipped; elsewhere they run wherever Slurm is installed
and the tests run as root (slurmd starts jobs as their user)."""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from conftest import ROOT, TINY, clean_env, free_port, require_launcher

DAEMONS = ("munged", "slurmctld", "slurmd", "sbatch", "scontrol", "sinfo")
JOB_ARGS = ["--task", "RoboLab-Velocity-Flat-Go2-v0", "--device", "cpu", *TINY]


def _missing() -> str | None:
    absent = [d for d in DAEMONS if shutil.which(d) is None]
    if absent:
        return f"Slurm not installed ({', '.join(absent)} missing; .ci/run installs slurmctld slurmd munge)"
    if os.geteuid() != 0:
        return "a one-node Slurm cluster needs root here (slurmd runs jobs as their user)"
    return None


class Cluster:
    def __init__(self, root: Path):
        self.root = root
        self.conf = root / "slurm.conf"
        self.env = clean_env(SLURM_CONF=str(self.conf), PYTHON=sys.executable)
        self.started_munged = False

    def write_conf(self) -> None:
        host = socket.gethostname()
        cpus = os.cpu_count() or 1
        for d in ("state", "spool"):
            (self.root / d).mkdir(exist_ok=True)
        self.conf.write_text(
            f"""ClusterName=robolabtest
SlurmctldHost={host}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
StateSaveLocation={self.root}/state
SlurmdSpoolDir={self.root}/spool
SlurmctldPidFile={self.root}/slurmctld.pid
SlurmdPidFile={self.root}/slurmd.pid
SlurmctldLogFile={self.root}/slurmctld.log
SlurmdLogFile={self.root}/slurmd.log
SlurmctldPort={free_port()}
SlurmdPort={free_port()}
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
JobCompType=jobcomp/none
MpiDefault=none
ReturnToService=2
NodeName={host} CPUs={cpus} State=UNKNOWN
PartitionName=test Nodes=ALL Default=YES MaxTime=INFINITE State=UP
"""
        )

    def sh(self, *cmd: str, timeout: float = 60) -> subprocess.CompletedProcess:
        return subprocess.run(cmd, env=self.env, capture_output=True, text=True, timeout=timeout, cwd=ROOT)

    def start(self) -> None:
        self.write_conf()
        if subprocess.run("munge -n | unmunge", shell=True, capture_output=True).returncode != 0:
            Path("/run/munge").mkdir(parents=True, exist_ok=True)
            shutil.chown("/run/munge", "munge", "munge")
            subprocess.run(["munged", "--force", f"--pid-file={self.root}/munged.pid"], check=True, capture_output=True)
            self.started_munged = True
        for daemon in ("slurmctld", "slurmd"):
            res = self.sh(daemon)
            assert res.returncode == 0, f"{daemon}: {res.stderr}"
        deadline = time.monotonic() + 60
        while self.sh("sinfo", "-h", "-o", "%t").stdout.strip() != "idle":
            assert time.monotonic() < deadline, (self.root / "slurmctld.log").read_text()[-2000:]
            time.sleep(0.5)

    def stop(self) -> None:
        self.sh("scancel", "--full", "--partition=test")
        deadline = time.monotonic() + 30  # the jobs' steps end before the daemons that watch them
        while self.sh("squeue", "-h").stdout.strip() and time.monotonic() < deadline:
            time.sleep(0.5)
        for daemon in ("slurmd", "slurmctld", *(["munged"] if self.started_munged else [])):
            pid_file = self.root / f"{daemon}.pid"
            if pid_file.exists():
                subprocess.run(["kill", pid_file.read_text().strip()], capture_output=True)

    def sbatch(self, *args: str, launch: str = "srun", wait: bool = True) -> int:
        """Submit; with ``wait``, return once the job ended COMPLETED. (``sbatch --wait`` polls with a growing
        interval, up to half a minute after the job ended: this polls every 0.3 s.)"""
        env = {**self.env, "LAUNCH": launch, "MASTER_PORT": str(free_port())}
        cmd = ["sbatch", "--parsable", *args]
        res = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=60, cwd=ROOT)
        job = int(res.stdout.strip().split(";")[0]) if res.stdout.strip() else -1
        assert res.returncode == 0, f"{cmd}: {res.stderr}"
        if wait:
            state = self.wait_for_end(job)
            assert state == "COMPLETED", f"{cmd}: {state}\n{self.output(job)[-3000:]}"
        return job

    def wait_for_end(self, job: int, timeout: float = 600) -> str:
        deadline = time.monotonic() + timeout
        while (state := self.state(job)) in ("PENDING", "CONFIGURING", "RUNNING", "COMPLETING", "REQUEUED", "UNKNOWN"):
            assert time.monotonic() < deadline, f"job {job} still {state}: {self.output(job)[-3000:]}"
            time.sleep(0.3)
        return state

    def output(self, job: int) -> str:
        path = self.root / f"slurm-{job}.out"
        return path.read_text() if path.exists() else ""

    def state(self, job: int) -> str:
        return self.field(job, "JobState") or "UNKNOWN"

    def field(self, job: int, name: str) -> str | None:
        """One field of ``scontrol show job`` (None when the job or the field is not there)."""
        res = self.sh("scontrol", "show", "job", str(job), "-o")
        return next((f.split("=", 1)[1] for f in res.stdout.split() if f.startswith(f"{name}=")), None)


@pytest.fixture(scope="module")
def slurm(tmp_path_factory):
    require_launcher(_missing())
    # One cluster at a time on this machine: pytest-xdist workers that both run tests of this file take turns
    # (two clusters would share munged, and one's teardown would stop it under the other's jobs).
    with open(Path(tempfile.gettempdir()) / "robolab-test-slurm.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        cluster = Cluster(tmp_path_factory.mktemp("slurm"))
        try:
            cluster.start()
            yield cluster
        finally:
            cluster.stop()


SBATCH = str(ROOT / "scripts" / "slurm" / "train.sbatch")


def _output_args(cluster: Cluster) -> list[str]:
    # submitted from the repository root (the script runs its scripts/), the output beside the cluster's files
    return [f"--output={cluster.root}/slurm-%j.out"]


@pytest.mark.slow
def test_srun_mode_runs_one_rank_per_task_with_the_replication_check(slurm, tmp_path):
    job = slurm.sbatch(
        *_output_args(slurm), "--ntasks=2", SBATCH, *JOB_ARGS, "--max_iterations", "2",
        "--check_replication_every", "1", "--log_root", str(tmp_path),
    )  # fmt: skip
    out = slurm.output(job)
    assert slurm.state(job) == "COMPLETED", out[-3000:]
    assert "rank 1/2 (local rank 1, launcher slurm)" in out
    assert out.count("replication check passed") >= 2
    # srun -n 2 with no --ntasks-per-node: each rank knows it shares the node (half the cores each, not all)
    assert out.count("2 process(es) on this node") == 2, out[-3000:]
    runs = [r.name for r in (tmp_path / "go2_flat").iterdir() if r.is_dir()]
    assert len(runs) == 1 and runs[0].endswith(f"_slurm-{job}")


@pytest.mark.slow
def test_torchrun_mode_starts_one_torchrun_per_node_and_ends_completed(slurm, tmp_path):
    # Before: one torchrun per Slurm task, two rendezvous on one node, and the job FAILED after training.
    job = slurm.sbatch(
        *_output_args(slurm), "--ntasks=2", SBATCH, *JOB_ARGS, "--max_iterations", "2",
        "--check_replication_every", "1", "--log_root", str(tmp_path), launch="torchrun",
    )  # fmt: skip
    out = slurm.output(job)
    assert slurm.state(job) == "COMPLETED", out[-3000:]
    assert out.count("launcher torchrun): device cpu") == 2, out[-3000:]
    assert out.count("replication check passed") >= 2


@pytest.mark.slow
def test_a_requeued_job_resumes_its_own_checkpoint(slurm, tmp_path):
    job = slurm.sbatch(
        *_output_args(slurm), "--ntasks=1", SBATCH, *JOB_ARGS, "--max_iterations", "100",
        "agent.save_interval=5", "--log_root", str(tmp_path), wait=False,
    )  # fmt: skip
    deadline = time.monotonic() + 240
    while not list(tmp_path.glob("go2_flat/*/model_10.pt")):
        assert time.monotonic() < deadline and slurm.state(job) in ("PENDING", "RUNNING"), slurm.output(job)[-3000:]
        time.sleep(0.5)
    assert slurm.sh("scontrol", "requeue", str(job)).returncode == 0
    # The requeue is asynchronous: the job is requeued once Slurm counts a restart and holds it PENDING. (Moving its
    # start time while the first session is still ending, RUNNING or COMPLETING, left it FAILED instead.)
    deadline = time.monotonic() + 120
    while not (slurm.field(job, "Restarts") == "1" and slurm.state(job) == "PENDING"):
        assert time.monotonic() < deadline, f"{slurm.state(job)}: {slurm.output(job)[-3000:]}"
        time.sleep(0.2)
    # Slurm holds a requeued job for about two minutes before it may start again; no need to wait that here
    slurm.sh("scontrol", "update", f"jobid={job}", "starttime=now")
    deadline = time.monotonic() + 400
    while (state := slurm.state(job)) != "COMPLETED":
        assert time.monotonic() < deadline and state not in ("FAILED", "CANCELLED"), slurm.output(job)[-3000:]
        time.sleep(0.3)
    runs = [r for r in (tmp_path / "go2_flat").iterdir() if r.is_dir()]
    assert len(runs) == 1, runs  # the same run folder, continued
    sessions = (runs[0] / "sessions.jsonl").read_text().splitlines()
    assert len(sessions) == 2, sessions
    assert (runs[0] / "model_99.pt").exists(), sorted(p.name for p in runs[0].glob("model_*.pt"))
    assert "resum" in slurm.output(job).lower()


@pytest.mark.slow
def test_a_hydra_sweep_with_the_slurm_launcher_runs_each_point_as_a_slurm_job(slurm, tmp_path):
    # Before: the launcher's defaults asked for 8 GPUs a node, which a node without them refuses (invalid gres).
    sweep = tmp_path / "sweep"
    cmd = [
        sys.executable, "scripts/train.py", "-m", "--device", "cpu", *TINY, "--max_iterations", "1",
        "hydra/launcher=slurm", "seed=1,2", "--sweep_dir", str(sweep),
    ]  # fmt: skip
    res = subprocess.run(cmd, env=slurm.env, capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert res.returncode == 0, res.stderr[-3000:]
    results = [json.loads((sweep / str(i) / "job_result.json").read_text()) for i in (0, 1)]
    assert [(r["status"], r["iterations"]) for r in results] == [("ok", 1), ("ok", 1)]
    # each point ran as a task of one Slurm array job (submitit's folders are named <job>_<task>)
    arrays = sorted(p.name for p in (sweep / ".submitit").iterdir() if p.is_dir() and "_" in p.name)
    assert len(arrays) == 2 and arrays[0].split("_")[0] == arrays[1].split("_")[0], arrays
    assert slurm.state(int(arrays[0].split("_")[0])) in ("COMPLETED", "UNKNOWN")  # UNKNOWN: forgotten already
