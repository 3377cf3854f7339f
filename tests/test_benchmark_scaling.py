"""``scripts/benchmark.py --scaling``: every world size benchmarks the invocation's own task, sizes, device and
overrides under torchrun, and bad sizes are one-line errors."""

from __future__ import annotations

import itertools
import json
import sys

import pytest

from conftest import ROOT, run
from robolab.benchmarking import scaling_rank_command, scaling_sizes
from robolab.cli.benchmark import build_parser

BENCHMARK = str(ROOT / "scripts" / "benchmark.py")


def test_each_world_size_is_launched_with_the_invocations_task_sizes_device_and_overrides():
    args, overrides = build_parser().parse_known_args(
        [
            "--scaling",
            "1,2",
            "--task",
            "RoboLab-Velocity-Rough-Go2-v0",
            "--num_envs",
            "64",
            "--iterations",
            "3",
            "--device",
            "cuda",
            "env.backend=warp",
        ]
    )
    cmd = scaling_rank_command(args, overrides, 2, "/tmp/out.json")
    flags = dict(itertools.pairwise(cmd))  # each flag to its value
    assert "--nproc_per_node=2" in cmd and "--distributed" in cmd
    assert flags["--task"] == "RoboLab-Velocity-Rough-Go2-v0"
    assert (flags["--num_envs"], flags["--iterations"], flags["--device"]) == ("64", "3", "cuda")
    assert flags["--output"] == "/tmp/out.json" and cmd[-1] == "env.backend=warp"
    assert "--scaling" not in cmd  # a rank benchmarks itself, it does not launch more


@pytest.mark.parametrize("text", ["2,1", "1,1", "0,1", "2", "1,x", ""])
def test_bad_world_sizes_are_refused(text):
    with pytest.raises(ValueError, match="rising world sizes starting with 1"):
        scaling_sizes(text)


@pytest.mark.parametrize(
    ("extra", "message"),
    [(["--scaling", "1,0"], "--scaling='1,0'"), (["--scaling", "1,2", "--update"], "cannot be combined")],
)
def test_bad_scaling_invocations_fail_in_one_line_before_any_launch(extra, message):
    res = run([sys.executable, BENCHMARK, *extra, "--device", "cpu"], timeout=120)
    assert res.returncode == 2, res.stderr
    assert res.stderr.strip().count("\n") == 0 and message in res.stderr, res.stderr
    assert "torch.distributed.run" not in res.stderr


@pytest.mark.slow
def test_scaling_benchmarks_the_asked_task_at_every_world_size(tmp_path):
    """Two real torchrun jobs (1 and 2 gloo ranks) on a task other than the default: each reports that task and its
    world size, and the efficiency is computed against the 1-rank baseline."""
    out = tmp_path / "scaling.json"
    task = "RoboLab-Velocity-Flat-Go2-Teacher-v0"  # not the default task
    res = run(
        [
            sys.executable,
            BENCHMARK,
            "--scaling",
            "1,2",
            "--task",
            task,
            "--num_envs",
            "8",
            "--iterations",
            "1",
            "--device",
            "cpu",
            "--output",
            str(out),
            "env.backend.num_threads=1",
            "agent.num_steps_per_env=4",
        ],
        timeout=240,
    )
    assert res.returncode == 0, res.stderr[-3000:]
    runs = json.loads(out.read_text())["scaling"]
    assert sorted(runs) == ["1", "2"]
    for n, r in runs.items():
        assert (r["task"], r["world_size"], r["num_envs_per_rank"]) == (task, int(n), 8), r
    assert runs["1"]["scaling_efficiency"] == 1.0
    expected = runs["2"]["train_env_steps_per_s"] / (2 * runs["1"]["train_env_steps_per_s"])
    assert runs["2"]["scaling_efficiency"] == pytest.approx(expected, abs=1e-4)
