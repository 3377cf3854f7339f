"""The ONNX export: any batch size, recurrent policies included, and the same actions as torch."""

import numpy as np
import pytest
import torch
from rsl_rl.models import MLPModel, RNNModel
from tensordict import TensorDict

from robolab.export import onnx_model

GAUSSIAN = {"class_name": "GaussianDistribution", "init_std": 1.0}


@pytest.mark.parametrize(
    "model_class, extra",
    [(MLPModel, {}), (RNNModel, {"rnn_type": "gru", "rnn_hidden_dim": 16}), (RNNModel, {"rnn_type": "lstm"})],
)
def test_the_onnx_policy_takes_any_batch_and_acts_as_the_torch_one(model_class, extra):
    import onnxruntime as ort

    torch.manual_seed(0)
    obs = TensorDict({"policy": torch.randn(4, 10)}, batch_size=[4])
    groups = {"actor": ["policy"]}
    model = model_class(obs, groups, "actor", 3, [8], obs_normalization=True, distribution_cfg=GAUSSIAN, **extra)
    model.update_normalization(obs)  # a normaliser that is not the identity, exported with the network
    exported = onnx_model(model, {"joint_names": "a,b,c"})
    session = ort.InferenceSession(exported.SerializeToString())
    assert session.get_modelmeta().custom_metadata_map["joint_names"] == "a,b,c"
    feeds = {}
    for spec in session.get_inputs():
        if spec.name == "obs":
            feeds[spec.name] = obs["policy"].numpy()
        else:  # a recurrent state: (layers, batch, units)
            feeds[spec.name] = np.zeros((spec.shape[0], 4, spec.shape[2]), np.float32)
    with torch.no_grad():
        expected = model(obs).numpy()  # deterministic output of the first step from a zero state
    got = session.run(None, feeds)[0]
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-5)
    assert got.shape == (4, 3)
