"""Open MPI's real `mpirun` starts robolab's ranks (Debian's openmpi-bin; `.ci/run` installs it and sets
ROBOLAB_REQUIRE_LAUNCHERS=1, so there this test cannot be skipped)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest

from conftest import ROOT, TINY, clean_env, free_port, require_launcher


@pytest.mark.slow
def test_mpirun_starts_two_ranks_that_train_and_pass_the_replication_check(tmp_path):
    absent = shutil.which("mpirun") is None
    require_launcher("Open MPI's mpirun is not installed (.ci/run installs openmpi-bin)" if absent else None)
    root = ["--allow-run-as-root"] if os.geteuid() == 0 else []
    cmd = [
        "mpirun", *root, "--oversubscribe", "-np", "2", "-x", f"MASTER_PORT={free_port()}", "-x", "PATH",
        sys.executable, "scripts/train.py", "--distributed", "--device", "cpu", "--task",
        "RoboLab-Velocity-Flat-Go2-v0", *TINY, "--max_iterations", "2", "--check_replication_every", "1",
        "--log_root", str(tmp_path),
    ]  # fmt: skip
    res = subprocess.run(cmd, env=clean_env(), capture_output=True, text=True, timeout=300, cwd=ROOT)
    out = res.stdout + res.stderr
    assert res.returncode == 0, out[-3000:]
    for rank in (0, 1):
        line = f"rank {rank}/2 (local rank {rank}, launcher openmpi): device cpu, seed {42 + rank}"
        assert line in out, out[-3000:]
    assert out.count("2 process(es) on this node") == 2
    assert out.count("replication check passed: ") >= 2
    assert len([r for r in (tmp_path / "go2_flat").iterdir() if r.is_dir()]) == 1
