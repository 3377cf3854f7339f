"""Compiling a MuJoCo Warp step's kernels in parallel, on a cold kernel cache.

Warp compiles a module the first time one of its kernels is launched, so a step's first run compiles its modules one
after another: on one H200, the Go2's 155 files in 109.5 s, against 35.5 s over 16 threads with this module
(docs/performance.md, "A cold start"). ``wp.force_load`` compiles modules in
parallel threads (warp's compiler releases the interpreter while it works), but only modules that exist: most of
MuJoCo Warp's kernels are made by factories (``module="unique"``) the first time the step calls them with a model's
settings, and ``force_load`` of every module warp knows compiles many the step never runs.

So the step is first run *dry*: ``warp.launch`` and ``warp.launch_tiled`` record the kernel, device and block size
they were asked for and launch nothing; a ``capture_while`` or ``capture_if`` runs each of its bodies once, so the
kernels of every branch are met. The factories run as in a real step, so the recorded modules are exactly the ones
the step will load; they are then compiled (or, from a warm cache, loaded) by ``wp.force_load`` over a pool of
threads. The dry run leaves the simulation's arrays as they were, apart from what a step writes without a kernel
(copies, fills): the caller starts over from the model's initial state after it, as it does after any first step.

Anything the dry run misses (a generic kernel's overload, a kernel behind a branch on data) still compiles at its
first launch, as before: the preload only moves work earlier. If the dry run fails, nothing is preloaded and the step
compiles lazily, with the reason logged.
"""

from __future__ import annotations

import contextlib
import logging
import math
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import warp as wp

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Launch:
    """A launch the dry run met: what loading its kernel needs."""

    module: Any
    """The kernel's ``warp`` module."""
    device: Any
    """The warp device it would run on."""
    block_dim: int | None
    """The block size asked for (a module is compiled once per block size); None: warp's default."""


@contextlib.contextmanager
def dry_launches() -> Iterator[list[Launch]]:
    """Within the block, ``warp.launch`` and ``warp.launch_tiled`` record their launches into the yielded list and
    launch nothing, and ``warp.capture_while`` / ``warp.capture_if`` run each body once. Restored on exit."""
    launches: list[Launch] = []

    def record(kernel, dim=None, *args, device=None, block_dim=None, **kwargs) -> None:
        del args, kwargs
        if not isinstance(kernel, wp.Kernel) or kernel.is_generic:  # a generic kernel's overload needs its arguments
            return
        if math.prod([dim] if isinstance(dim, int) else (dim or [0])) == 0:  # warp loads nothing for an empty launch
            return
        launches.append(Launch(kernel.module, wp.get_device(device), block_dim))

    def while_once(condition, while_body, stream=None, **kwargs) -> None:
        del condition, stream
        if callable(while_body):
            while_body(**kwargs)

    def if_once(condition, on_true=None, on_false=None, stream=None, **kwargs) -> None:
        del condition, stream
        for body in (on_true, on_false):
            if callable(body):
                body(**kwargs)

    replaced = {"launch": record, "launch_tiled": record, "capture_while": while_once, "capture_if": if_once}
    saved = {name: getattr(wp, name) for name in replaced}
    try:
        for name, fn in replaced.items():
            setattr(wp, name, fn)
        yield launches
    finally:
        for name, fn in saved.items():
            setattr(wp, name, fn)


@dataclass
class PreloadReport:
    """What the parallel preload did."""

    modules: int
    """Distinct (module, device, block size) loads the dry run found."""
    workers: int
    seconds: float
    """The dry run and the loads together."""
    error: str | None = None
    """Why nothing was preloaded (the dry run failed), else None."""


def preload_step_kernels(run_step: Callable[[], None], workers: int) -> PreloadReport:
    """Run ``run_step`` dry (``dry_launches``) and compile or load every module it would launch, over ``workers``
    threads. ``workers`` <= 1 does nothing (warp's own lazy loading, one module at a time)."""
    start = time.perf_counter()
    if workers <= 1:
        return PreloadReport(0, workers, 0.0)
    try:
        with dry_launches() as launches:
            run_step()
    except Exception as err:
        logger.info("MuJoCo Warp kernels not preloaded (the dry run failed: %s); they compile at first launch", err)
        return PreloadReport(0, workers, time.perf_counter() - start, error=f"{type(err).__name__}: {err}")
    unique = list({(id(x.module), x.device.alias, x.block_dim): x for x in launches}.values())

    def load(x: Launch) -> None:
        wp.force_load(device=x.device, modules=[x.module], block_dim=x.block_dim, max_workers=0)

    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="warp-compile") as pool:
        for future in [pool.submit(load, x) for x in unique]:
            future.result()
    return PreloadReport(len(unique), workers, time.perf_counter() - start)
