"""The parallel preload of a MuJoCo Warp step's kernels (``robolab.envs.backends.warp_compile``).

Its promise: the dry run finds exactly the modules the real step launches (so the threads compile what the step needs
and nothing else), it runs no kernel, and it leaves warp as it found it. CI runs these on warp's CPU device;
``ROBOLAB_TEST_DEVICE=cuda`` runs them on a GPU (docs/benchmarks/h200_graph.sh, ``PART=tests``). The seconds it saves
on a cold cache are measured there (``PART=compile``; docs/gpu.md).
"""

# Warp reads the kernels' annotations as kernel types, which type checkers cannot read.
# pyright: reportInvalidTypeForm=false

from __future__ import annotations

import math
import os
from typing import Any

import pytest

pytest.importorskip("mujoco_warp", reason="the warp extra is part of the test extra")

import warp as wp

from conftest import go2_servo_robot
from robolab.assets import load_robot
from robolab.distributed import MAX_COMPILE_WORKERS, default_compile_workers
from robolab.envs.backends.warp_compile import dry_launches, preload_step_kernels

DEVICE = os.environ.get("ROBOLAB_TEST_DEVICE", "cpu")


@wp.kernel
def _write_one(out: wp.array(dtype=int)):
    out[wp.tid()] = 1


@wp.kernel
def _generic_fill(out: wp.array(dtype=Any), value: Any):
    out[wp.tid()] = value


def _device():
    return wp.get_device("cpu" if DEVICE == "cpu" else DEVICE)


def test_a_dry_launch_records_and_runs_nothing_and_warp_is_restored():
    device = _device()
    out = wp.zeros(4, dtype=int, device=device)
    original = (wp.launch, wp.launch_tiled, wp.capture_while, wp.capture_if)
    with dry_launches() as launches:
        wp.launch(_write_one, dim=4, outputs=[out], device=device)
        wp.launch(_write_one, dim=(2, 0), outputs=[out], device=device)  # empty: warp loads nothing for it
        wp.launch(_generic_fill, dim=4, inputs=[out, 3], device=device)  # generic: its overload needs the arguments
        wp.launch_tiled(_write_one, dim=[4], outputs=[out], device=device, block_dim=32)
    assert out.numpy().tolist() == [0, 0, 0, 0], "a dry launch ran its kernel"
    assert [(x.module, x.block_dim) for x in launches] == [(_write_one.module, None), (_write_one.module, 32)]
    assert all(x.device == device for x in launches)
    assert (wp.launch, wp.launch_tiled, wp.capture_while, wp.capture_if) == original
    wp.launch(_write_one, dim=4, outputs=[out], device=device)
    assert out.numpy().tolist() == [1, 1, 1, 1]


def test_a_dry_loop_runs_its_body_once_and_both_branches_of_an_if():
    device = _device()
    forever = wp.ones(1, dtype=wp.int32, device=device)  # a real capture_while would loop until a kernel cleared it
    calls = []
    with dry_launches():
        wp.capture_while(forever, lambda: calls.append("body"))
        wp.capture_if(forever, on_true=lambda: calls.append("true"), on_false=lambda: calls.append("false"))
    assert calls == ["body", "true", "false"]


def test_warp_is_restored_after_an_error_in_the_dry_run():
    original = wp.launch
    with pytest.raises(RuntimeError, match="boom"), dry_launches():
        raise RuntimeError("boom")
    assert wp.launch is original


def test_the_dry_run_finds_exactly_the_modules_a_real_step_launches():
    """Recorded by the dry run of a Go2 step == launched by the real step (recorded by a pass-through wrapper); the
    preload then has every one of them loaded on the device."""
    from robolab.envs.backends.warp_backend import WarpBackend

    backend = WarpBackend(load_robot(go2_servo_robot(), timestep=0.005), 4, DEVICE, compile_workers=2)
    assert backend.preload.modules > 10 and backend.preload.error is None

    def step():
        backend._physics_step(decimation=1)

    with dry_launches() as dry:
        step()
    real = []
    launch, launch_tiled = wp.launch, wp.launch_tiled

    def recording(original):
        def wrapper(kernel, *args, **kwargs):
            dim = kwargs.get("dim", args[0] if args else None)
            size = dim if isinstance(dim, int) else (0 if not dim else math.prod(dim))
            if isinstance(kernel, wp.Kernel) and not kernel.is_generic and size:
                real.append(kernel.module)
            return original(kernel, *args, **kwargs)

        return wrapper

    wp.launch, wp.launch_tiled = recording(launch), recording(launch_tiled)
    try:
        with wp.ScopedDevice(backend.wp_device):
            step()
    finally:
        wp.launch, wp.launch_tiled = launch, launch_tiled
    assert {id(m) for m in real} == {id(x.module) for x in dry}
    assert all(x.module.execs for x in dry), "a module the dry run found was not loaded"


def test_a_failing_dry_run_preloads_nothing_and_reports_why():
    def broken_step():
        raise ValueError("no model")

    report = preload_step_kernels(broken_step, workers=2)
    assert report.modules == 0 and report.error == "ValueError: no model"
    assert preload_step_kernels(broken_step, workers=1).error is None  # one worker: no dry run at all


def test_bad_compile_workers_is_a_one_line_error():
    from robolab.envs.backends.warp_backend import WarpBackend

    robot = load_robot(go2_servo_robot(), timestep=0.005)
    for bad in (-1, 2.5, "four", True):
        with pytest.raises(ValueError, match=r"env.backend.compile_workers=.*must be an integer >= 0"):
            WarpBackend(robot, 2, DEVICE, compile_workers=bad)  # type: ignore[arg-type]
    assert 1 <= default_compile_workers() <= MAX_COMPILE_WORKERS
    assert [default_compile_workers(n) for n in (1, 4, 16, 64)] == [1, 4, 16, MAX_COMPILE_WORKERS]


def test_ranks_on_one_node_split_the_compile_threads_as_they_split_the_cores(monkeypatch):
    """Each of a node's ranks compiles over its share of the cores (``session.share_cpu_cores``), so 8 ranks on a
    16-core node do not run 128 compile threads; an explicit setting is kept."""
    import torch

    from robolab import distributed
    from robolab.distributed import DistributedContext
    from robolab.envs.velocity_env_cfg import VelocityEnvCfg
    from robolab.session import share_cpu_cores

    monkeypatch.setattr(distributed.os, "sched_getaffinity", lambda _pid: set(range(16)), raising=False)
    threads = torch.get_num_threads()
    try:
        for ranks, explicit, expected in ((1, None, 16), (4, None, 4), (8, None, 2), (8, 6, 6)):
            cfg = VelocityEnvCfg()
            cfg.backend.compile_workers = explicit
            share_cpu_cores(cfg, DistributedContext(world_size=ranks, local_world_size=ranks))
            assert cfg.backend.compile_workers == expected, (ranks, explicit)
    finally:
        torch.set_num_threads(threads)


def test_a_bad_compile_workers_is_refused_on_any_backend_before_the_terrain_is_made(monkeypatch):
    """The setting is MuJoCo Warp's, but a CPU run (MuJoCo C) given a bad value is told so too, in one line, before
    the env builds anything (the terrain generator is never called)."""
    from robolab.envs import velocity_env
    from robolab.tasks.velocity.go2.env_cfgs import Go2RoughEnvCfg

    def no_terrain(_cfg):
        raise AssertionError("the terrain was generated before the settings were checked")

    monkeypatch.setattr(velocity_env, "generate", no_terrain)
    cfg = Go2RoughEnvCfg(num_envs=2)
    cfg.backend.name = "mujoco"
    cfg.backend.compile_workers = -2
    with pytest.raises(ValueError, match=r"^env.backend.compile_workers=-2: must be an integer >= 0 .*at most 16\)$"):
        velocity_env.VelocityEnv(cfg)
