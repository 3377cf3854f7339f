"""An optimiser whose learning rate is a tensor on the device, so an adaptive schedule never reads back to the host.

rsl_rl's adaptive schedule compares the KL with its target in Python and writes a float into every parameter
group, once per minibatch: each comparison waits for the GPU. Here the learning rate is one float32 tensor that the
schedule changes in place (``adapt_learning_rate``) and the optimiser's kernels read on the device: fused Adam,
AdamW and SGD on CUDA, capturable kernels for the other optimisers, torch's default kernels on the CPU (which take a
tensor learning rate as they are).

Checkpoints keep rsl_rl's format: the saved learning rate is a float, and loading a checkpoint (saved on any
device) puts the value into the same tensor, with this device's kernel settings.
"""

from __future__ import annotations

import inspect

import torch

_KERNEL_FLAGS = ("foreach", "fused", "capturable", "differentiable")
_FUSED_ON_CUDA = (torch.optim.Adam, torch.optim.AdamW, torch.optim.SGD)


def kernel_flags(optimizer_class: type[torch.optim.Optimizer], device: torch.device) -> dict[str, bool]:
    """The settings under which ``optimizer_class`` reads a tensor learning rate on ``device`` without a host read and
    can be captured in a CUDA graph: fused kernels where torch has them (Adam, AdamW, SGD), capturable ones."""
    if device.type != "cuda":
        return {}
    accepted = inspect.signature(optimizer_class.__init__).parameters
    flags = {"fused": issubclass(optimizer_class, _FUSED_ON_CUDA), "capturable": True}  # capturable: CUDA graphs too
    return {k: v for k, v in flags.items() if k in accepted and v}


def device_lr_optimizer(optimizer: torch.optim.Optimizer, lr: torch.Tensor) -> torch.optim.Optimizer:
    """``optimizer``'s class, parameter groups and settings, reading its learning rate from the tensor ``lr``.

    ``lr`` stays the optimiser's through ``load_state_dict`` (a load writes the saved value into it), and
    ``state_dict`` saves it as a float, so a checkpoint reads the same as rsl_rl's.
    """
    cls = type(optimizer)
    accepted = inspect.signature(cls.__init__).parameters  # AdamW keeps a default its constructor does not take
    settings = {k: v for k, v in optimizer.defaults.items() if k in accepted and k != "lr" and k not in _KERNEL_FLAGS}
    flags = kernel_flags(cls, lr.device)
    groups = [{"params": group["params"]} for group in optimizer.param_groups]
    rebuilt = cls(groups, lr=lr, **settings, **flags)  # type: ignore[call-arg]

    def saved_with_float_lr(_optimizer, state_dict: dict) -> dict:
        for group in state_dict["param_groups"]:
            group["lr"] = float(group["lr"])
        return state_dict

    def loaded_with_this_devices_kernels(_optimizer, state_dict: dict) -> dict:
        # The saved kernel settings decide where torch puts Adam's step counter (host or device): take this
        # device's, so a checkpoint from a CPU run resumes on a GPU and back.
        groups = [
            {**group, **{k: flags.get(k, False) for k in ("fused", "capturable")}}
            for group in state_dict["param_groups"]
        ]
        return {**state_dict, "param_groups": groups}

    def lr_tensor_kept(optimizer_: torch.optim.Optimizer) -> None:
        lr.fill_(float(optimizer_.param_groups[0]["lr"]))
        for group in optimizer_.param_groups:
            group["lr"] = lr

    rebuilt.register_state_dict_post_hook(saved_with_float_lr)
    rebuilt.register_load_state_dict_pre_hook(loaded_with_this_devices_kernels)
    rebuilt.register_load_state_dict_post_hook(lr_tensor_kept)
    return rebuilt


def adapt_learning_rate(lr: torch.Tensor, kl_mean: torch.Tensor, desired_kl: float) -> None:
    """rsl_rl's adaptive schedule, on the device: ``lr`` / 1.5 (not below 1e-5) when the KL is over twice the target,
    x 1.5 (not above 1e-2) when it is positive and under half of it, unchanged otherwise. In place."""
    kl = kl_mean.float()
    shrunk = torch.clamp(lr / 1.5, min=1e-5)
    grown = torch.clamp(lr * 1.5, max=1e-2)
    grow = (kl < desired_kl / 2.0) & (kl > 0.0)
    lr.copy_(torch.where(kl > desired_kl * 2.0, shrunk, torch.where(grow, grown, lr)))
