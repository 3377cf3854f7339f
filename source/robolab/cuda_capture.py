"""Recording a CUDA graph: the set-up that the captured steps share (the env's control step, ``env.cuda_graph``, and
PPO's minibatch step and policy inference, ``agent.algorithm.cuda_graph``)."""

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


def module_buffers(models) -> list[tuple[torch.nn.Module, str, torch.Tensor]]:
    """Every buffer of ``models`` as (owner, name, tensor): what a graph over their forward reads besides the
    parameters, recorded before its capture for ``rebind_buffers``."""
    return [
        (module, name, buffer)
        for model in models
        for module in model.modules()
        for name, buffer in module.named_buffers(recurse=False)
    ]


def rebind_buffers(buffers: list[tuple[torch.nn.Module, str, torch.Tensor]]) -> bool:
    """Put every recorded buffer back in its owner, holding the owner's current value; False when one changed shape or
    type (a graph cannot read it then). Owners may replace a buffer with a new tensor instead of writing it in place
    (rsl_rl's ``EmpiricalNormalization`` assigns a new ``_std`` at every statistics update): a graph that read the
    replaced, freed tensor would normalise with garbage."""
    for module, name, recorded in buffers:
        current = getattr(module, name)
        if current is recorded:
            continue
        if current is None or current.shape != recorded.shape or current.dtype != recorded.dtype:
            return False
        recorded.copy_(current)
        setattr(module, name, recorded)
    return True
