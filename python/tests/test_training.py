"""Training with ONNX's Gradient operator: examples/train_mlp.py's steps
follow PyTorch's SGD on the same network, data and initial weights, and the
trained model classifies its data."""
import os
import sys

import numpy as np
import pytest


@pytest.fixture(scope="module")
def train_mlp(example):
    sys.path.insert(0, os.path.dirname(os.path.abspath(example)))
    import train_mlp
    return train_mlp


def torch_losses(train_mlp, steps, lr=0.5):
    torch = pytest.importorskip("torch")
    x, labels = train_mlp.spirals(256)
    w = {k: torch.tensor(v, requires_grad=True) for k, v in train_mlp.initial_weights().items()}
    xt, yt = torch.tensor(x), torch.tensor(labels)
    losses = []
    for _ in range(steps):
        logits = torch.tanh(xt @ w["W1"] + w["b1"]) @ w["W2"] + w["b2"]
        loss = torch.nn.functional.cross_entropy(logits, yt)
        losses.append(float(loss))
        grads = torch.autograd.grad(loss, list(w.values()))
        with torch.no_grad():
            w = {k: (v - lr * g).requires_grad_() for (k, v), g in zip(w.items(), grads)}
    return losses


def test_steps_follow_pytorch(train_mlp, tmp_path):
    losses, _, _ = train_mlp.train(30, str(tmp_path / "m.onnx"), log=None)
    np.testing.assert_allclose(losses, torch_losses(train_mlp, 30), rtol=2e-4)


def test_the_trained_model_classifies_its_data(train_mlp, tmp_path):
    losses, accuracy, _ = train_mlp.train(3000, str(tmp_path / "m.onnx"), log=None)
    assert losses[-1] < 0.05 < losses[0]
    assert accuracy > 0.98
