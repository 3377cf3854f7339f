"""A trained policy as deployable files: ONNX (self-contained) and TorchScript."""

from __future__ import annotations

import os

from robolab import files


def export_policy(runner, export_dir: str) -> list[str]:
    """``policy.onnx`` (one self-contained file: rsl_rl's export may leave the weights in a ``.data`` sidecar,
    which a copy of the ``.onnx`` alone would lose) and ``policy.pt`` (TorchScript) in ``export_dir``."""
    import onnx

    onnx_path, jit_path = os.path.join(export_dir, "policy.onnx"), os.path.join(export_dir, "policy.pt")
    runner.export_policy_to_onnx(export_dir, "policy.onnx")
    model = onnx.load(onnx_path)  # reads any external data beside it

    def write(f) -> None:
        f.write(model.SerializeToString())

    files.atomic_write(onnx_path, write)
    sidecar = onnx_path + ".data"
    if os.path.exists(sidecar):
        os.remove(sidecar)
    runner.export_policy_to_jit(export_dir, "policy.pt")
    return [onnx_path, jit_path]
