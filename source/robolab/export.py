"""A trained policy as deployable files: ONNX (self-contained, any batch size, its interface in its metadata) and
TorchScript."""

from __future__ import annotations

import json
import os
import tempfile
import warnings

import torch

from robolab import files


def export_policy(runner, export_dir: str, metadata: dict[str, str] | None = None) -> list[str]:
    """``policy.onnx`` and ``policy.pt`` (TorchScript) in ``export_dir``; ``metadata`` goes into the ONNX file's
    ``metadata_props`` (``policy_metadata`` builds it)."""
    onnx_path, jit_path = os.path.join(export_dir, "policy.onnx"), os.path.join(export_dir, "policy.pt")
    os.makedirs(export_dir, exist_ok=True)
    model = onnx_model(runner.alg.get_policy(), metadata or {})

    def write(f) -> None:
        f.write(model.SerializeToString())

    files.atomic_write(onnx_path, write)
    if os.path.exists(onnx_path + ".data"):  # an older export's weights sidecar: the model above holds its weights
        os.remove(onnx_path + ".data")
    runner.export_policy_to_jit(export_dir, "policy.pt")
    return [onnx_path, jit_path]


def onnx_model(policy, metadata: dict[str, str]):
    """The policy (its observation normaliser included) as one ONNX model whose batch dimension is free: rsl_rl's
    own export fixes it at 1, which a robot runs but a batched evaluation or a second robot cannot. A recurrent
    policy's state inputs and outputs (layers, batch, units) get the free batch on their second axis."""
    import onnx

    module = policy.as_onnx(verbose=False).to("cpu").eval()
    inputs = module.get_dummy_inputs()
    with torch.no_grad():
        outputs = module(*inputs)
    outputs = outputs if isinstance(outputs, tuple) else (outputs,)
    names = [*module.input_names, *module.output_names]
    axes = {name: {0 if t.dim() == 2 else 1: "batch"} for name, t in zip(names, [*inputs, *outputs])}
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "policy.onnx")
        # the TorchScript-based exporter (the one that takes dynamic_axes) warns that it is deprecated
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", (DeprecationWarning, FutureWarning, UserWarning))
            torch.onnx.export(
                module,
                inputs,
                path,
                export_params=True,
                opset_version=18,
                input_names=module.input_names,
                output_names=module.output_names,
                dynamic_axes=axes,
                dynamo=False,
            )
        model = onnx.load(path)  # weights that the exporter left in a sidecar file are read into the one model
    for key, value in metadata.items():
        entry = model.metadata_props.add()
        entry.key, entry.value = key, value
    return model


def policy_metadata(env, policy, task: str) -> dict[str, str]:
    """What a deployment needs beside the weights, as ONNX metadata (strings): the observation groups the policy
    reads; for robolab's own envs also the terms in the order they are concatenated with their widths, the action's
    joints, scale and offsets (``target = offset + scale * action``), the PD gains and the control period, and the
    whole interface as JSON (``robolab.io_descriptors``, ``envs.io_descriptors``)."""
    groups = list(policy.obs_groups)
    meta = {"robolab.task": task, "observation_groups": ",".join(groups), "batch": "dynamic"}
    env = getattr(env, "unwrapped", env)
    if not hasattr(env, "observation_groups"):  # an Isaac Lab env: its interface is Isaac Lab's to describe
        return meta
    from robolab.envs.io_descriptors import io_descriptors

    io = io_descriptors(env)
    terms = [term for group in groups for term in io["observations"][group]["terms"]]
    actions, articulation = io["actions"], io["articulation"]
    meta.update(
        {
            "observation_names": ",".join(term["name"] for term in terms),
            "observation_dims": ",".join(str(term["shape"][0]) for term in terms),
            "joint_names": ",".join(actions["joint_names"]),
            "action_scale": repr(actions["scale"]),
            "default_joint_pos": ",".join(repr(v) for v in actions["offset"]),
            "joint_stiffness": _numbers(articulation["stiffness"]),
            "joint_damping": _numbers(articulation["damping"]),
            "control_dt": repr(io["scene"]["dt"]),
            "robolab.io_descriptors": json.dumps({**io, "observations": {g: io["observations"][g] for g in groups}}),
        }
    )
    return meta


def _numbers(value: float | list[float]) -> str:
    """One gain, or one per joint comma-separated (as ``default_joint_pos``)."""
    return ",".join(repr(v) for v in value) if isinstance(value, list) else repr(value)
