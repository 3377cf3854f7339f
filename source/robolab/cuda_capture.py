"""Recording a CUDA graph: the set-up that both captured steps share (the env's control step, ``env.cuda_graph``, and
PPO's minibatch step, ``agent.algorithm.cuda_graph``)."""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator

import torch


@contextlib.contextmanager
def recording(
    graph: torch.cuda.CUDAGraph, stream: torch.cuda.Stream, setting: str, what: str, error: type[Exception]
) -> Iterator[None]:
    """Record the body of the ``with`` into ``graph`` on ``stream``. A capture that CUDA refuses (a host read, a call
    on the legacy stream, a synchronising allocation) is raised as ``error``, one line that names the ``setting`` to
    turn off; the caller's current stream waits for ``stream`` afterwards either way."""
    device = stream.device
    stream.wait_stream(torch.cuda.current_stream(device))
    torch.cuda.synchronize(device)
    # A garbage collection during capture could free another library's device memory (a MuJoCo Warp array), a call
    # that voids the capture: collect before, not during.
    gc.collect()
    gc.disable()
    try:
        # thread_local: a CUDA call of another thread (a logger's, a physics library's) does not void the capture.
        with torch.cuda.graph(graph, stream=stream, capture_error_mode="thread_local"):
            yield
    except RuntimeError as refused:
        reason = (str(refused).strip() or type(refused).__name__).splitlines()[0]
        raise error(f"{setting}=true: capturing {what} failed ({reason}); run with {setting}=false") from refused
    finally:
        gc.enable()
        torch.cuda.current_stream(device).wait_stream(stream)
