"""The float32 matrix-multiply precision of the models' arithmetic (policy inference and the updates), not the env's.

On GPUs with tensor cores (Ampere and later) cuBLAS can multiply float32 matrices as TF32: inputs rounded to a
10-bit mantissa, products summed in float32, several times the throughput of IEEE float32. PyTorch's default is
IEEE. TF32 shortens the update's matrix multiplies, not its elementwise work: on an H200 the flat Go2's PPO update
took 148 ms instead of 204 at 65536 envs (docs/performance.md). JAX, and so Brax and MuJoCo Playground, multiply
float32 on GPUs this way by default.

The choice is applied only around the runner's model calls (``models_precision``): an env's own torch arithmetic
(frames, height scans, rewards) keeps IEEE float32 whatever is chosen here, and so does everything outside training
(``play.py``, exported policies). CPU matmuls are IEEE either way. A CUDA graph keeps the kernels chosen when it was
captured, so the update's graph, captured inside the context, replays in the chosen precision.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

MATMUL_PRECISIONS = ("ieee", "tf32")
"""``ieee``: float32 matmuls in IEEE float32 (PyTorch's default); ``tf32``: TF32 tensor cores where the GPU has
them (torch's ``torch.backends.cuda.matmul.fp32_precision`` names)."""


def check_matmul_precision(key: str, precision: str) -> str:
    """``precision`` if it is one of ``MATMUL_PRECISIONS``; else a one-line error naming ``key`` and the choices."""
    if precision not in MATMUL_PRECISIONS:
        raise ValueError(f"{key}={precision!r}: allowed: {', '.join(MATMUL_PRECISIONS)}")
    return precision


@contextmanager
def models_precision(precision: str) -> Iterator[None]:
    """CUDA float32 matmuls in ``precision`` inside the block; the process's previous setting after it, also when
    the block raises. Only torch's current API is read and written (mixing it with the legacy ``allow_tf32`` flag is
    an error in torch). torch is imported here, not at the module's import: the agent configs read the names above,
    and a config check need not load torch."""
    import torch

    matmul = torch.backends.cuda.matmul
    previous = matmul.fp32_precision
    matmul.fp32_precision = precision
    try:
        yield
    finally:
        matmul.fp32_precision = previous
