"""Why a PPO update's CUDA graph capture fails in the real task (issue 31): run ``scripts/benchmark.py --update`` with
``agent.algorithm.cuda_graph=true`` and, around the capture, (1) the warm-up minibatch step under
``torch.cuda.set_sync_debug_mode("error")`` (a torch op that waits for the GPU raises where it is called), and (2) the
capture in the stream-capture mode MODE (global: a CUDA call of any thread that capture forbids fails where it is
made). Prints the first error with its traceback.

    MODE=global python3 docs/benchmarks/capture_probe.py --task T --device cuda --num_envs 4096 --update ...
"""

import contextlib
import os
import sys
import traceback

import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "source"))
from robolab.algorithms import captured_update
from robolab.cli.benchmark import run

MODE = os.environ.get("MODE", "global")
real_graph = torch.cuda.graph


class graph_in_mode(real_graph):
    def __init__(self, cuda_graph, pool=None, stream=None, capture_error_mode="global", **kw):
        print(f"probe: capturing in mode {MODE} (asked: {capture_error_mode})", flush=True)
        super().__init__(cuda_graph, pool=pool, stream=stream, capture_error_mode=MODE, **kw)


real_warm = captured_update.CapturedStep._warm_up_and_capture


def warm_and_capture(self):
    real_minibatch = self.alg.minibatch_step
    calls = {"n": 0}

    def checked(batch):
        calls["n"] += 1
        if calls["n"] == 1:  # the eager warm-up step: any op that waits for the GPU raises here
            torch.cuda.set_sync_debug_mode("error")
            try:
                return real_minibatch(batch)
            finally:
                torch.cuda.set_sync_debug_mode("default")
        return real_minibatch(batch)

    self.alg.minibatch_step = checked
    try:
        real_warm(self)
        print("probe: capture succeeded", flush=True)
    except BaseException:
        print("probe: capture failed:\n" + traceback.format_exc(), flush=True)
        raise
    finally:
        del self.alg.minibatch_step


torch.cuda.graph = graph_in_mode
captured_update.CapturedStep._warm_up_and_capture = warm_and_capture
with contextlib.suppress(SystemExit):
    run(sys.argv[1:])
