#!/usr/bin/env python3
"""The network, data and SGD step of examples/train_cnn.cc in PyTorch, for
timing the two on the same machine.

usage: train_cnn_torch.py [--steps 400] [--batch 64] [--lr 0.1] [--threads N] [--device cpu|cuda]

On a GPU the batch is copied to the device each step and the loss read
back, as xonnx's Jit does with its inputs and outputs.
"""
import argparse
import time

import numpy as np
import torch

SIZE, CLASSES = 16, 3


def make_data(n, rng):
    labels = rng.integers(0, CLASSES, n)
    at = rng.integers(2, SIZE - 2, n)
    y, x = np.mgrid[0:SIZE, 0:SIZE]
    images = rng.normal(0, 0.3, (n, 1, SIZE, SIZE)).astype(np.float32)
    for i in range(n):
        c, a = labels[i], at[i]
        on = (y == a) if c == 0 else (x == a) if c == 1 else (x - y == a - SIZE // 2)
        images[i, 0] += on
    return torch.from_numpy(images), torch.from_numpy(labels)


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.c1 = torch.nn.Conv2d(1, 8, 3, padding=1)
        self.c2 = torch.nn.Conv2d(8, 16, 3, stride=2, padding=1)
        self.fc = torch.nn.Linear(256, CLASSES)

    def forward(self, x):
        h = torch.nn.functional.avg_pool2d(torch.relu(self.c1(x)), 2)
        h = torch.relu(self.c2(h))
        return self.fc(h.reshape(x.shape[0], 256))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=400)
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--lr", type=float, default=0.1)
    p.add_argument("--threads", type=int, default=0)
    p.add_argument("--device", default="cpu")
    a = p.parse_args()
    if a.threads:
        torch.set_num_threads(a.threads)
    torch.manual_seed(42)
    rng = np.random.default_rng(42)
    dev = torch.device(a.device)
    net = Net().to(dev)
    opt = torch.optim.SGD(net.parameters(), lr=a.lr)
    ms, first, last = [], None, None
    for s in range(a.steps):
        images, labels = make_data(a.batch, rng)
        t0 = time.perf_counter()
        images, labels = images.to(dev), labels.to(dev)
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(net(images), labels)
        loss.backward()
        opt.step()
        last = loss.item()
        ms.append((time.perf_counter() - t0) * 1e3)
        first = last if first is None else first
        if s % 50 == 0 or s == a.steps - 1:
            print(f"step {s:4d}  loss {last:.4f}")
    images, labels = make_data(1024, rng)
    images, labels = images.to(dev), labels.to(dev)
    with torch.no_grad():
        acc = (net(images).argmax(1) == labels).float().mean().item()
    print(f"loss {first:.4f} -> {last:.4f}; accuracy {acc:.3f} on 1024 new images; "
          f"{np.median(ms[1:]):.3f} ms per step (median; batch {a.batch})")


if __name__ == "__main__":
    main()
