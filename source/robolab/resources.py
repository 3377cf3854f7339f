"""Whether an allocation fits before it is made: a start that asks for more memory than the machine has is one line
naming the setting, not a process the kernel's OOM killer ends mid-allocation (Linux overcommits: a huge array is
granted and the process dies when it touches it)."""

from __future__ import annotations

import os

import torch


def available_bytes(device: str | torch.device) -> int | None:
    """Memory free for new allocations on ``device``: the host's ``MemAvailable`` (Linux) for the CPU, the GPU's free
    memory for CUDA; None where it cannot be read."""
    device = torch.device(device)
    if device.type == "cuda":
        try:
            return int(torch.cuda.mem_get_info(device)[0])
        except RuntimeError:
            return None
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def check_fits(needed: int, device: str | torch.device, what: str, setting: str) -> None:
    """Refuse ``what`` (needing at least ``needed`` bytes on ``device``) if it cannot fit, naming ``setting``."""
    free = available_bytes(device)
    if free is not None and needed > free:
        raise MemoryFitError(
            f"{setting}: {what} needs at least {needed / 2**30:.1f} GiB of {torch.device(device).type} memory, "
            f"{free / 2**30:.1f} GiB is available"
        )


class MemoryFitError(ValueError):
    """An allocation that cannot fit; the message names the setting to lower."""


if os.name != "posix":  # pragma: no cover - robolab runs on Linux; elsewhere the check is skipped
    available_bytes = lambda device: None
