#!/usr/bin/python3
"""torch_snn.py TRAIN.h5 TEST.h5 [EPOCHS]: the reference SNN in PyTorch (Debian's
python3-torch) for the throughput comparison: the same network as
`spike-sft pretrain` defaults (784-256-10 LIF, T = 8, beta 0.9, threshold 1,
reset by subtraction differentiated, fast-sigmoid surrogate with slope 25,
direct coding, spike-count readout, cross-entropy, Adam 1e-3, batch 128),
written the usual way (a Python loop over steps, autograd for BPTT).
With NK_SNNTORCH=1 (run by the benchmark venv's python, which has snnTorch
from PyPI) the hidden layer is snnTorch's own neuron instead:
snntorch.Leaky(beta 0.9, threshold 1, surrogate.fast_sigmoid(slope 25),
reset by subtraction; snnTorch subtracts the reset from the next step's
membrane before the decay, so its dynamics differ from ours by a factor
beta on the reset term), the way snnTorch's tutorials train.
With NK_SPIKINGJELLY=1 (the same venv, SpikingJelly from PyPI) it is
SpikingJelly's multi-step LIFNode (tau 10, decay_input False: v = 0.9 v + I;
soft reset v_reset None: v -= threshold s, exactly our dynamics; its
PyTorch code, as on any CPU) over the input current repeated T times,
with the fast sigmoid of slope 25 as its surrogate function (SpikingJelly
has none with a slope inside; its API takes any callable), and
functional.reset_net between batches, the way its tutorials train.
Prints the library versions, then seconds per epoch and test accuracy;
threads = NK_THREADS (default 2)."""
import os
import sys
import time

import h5py
import numpy as np
import torch

torch.set_num_threads(int(os.environ.get("NK_THREADS", "2")))
torch.manual_seed(1)


class Spike(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return (x > 0).float()

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad / (1 + 25.0 * x.abs()) ** 2


def load(path):
    with h5py.File(path, "r") as f:
        x = f["/images"][...].reshape(f["/images"].shape[0], -1).astype(np.float32)
        y = f["/labels"][...].astype(np.int64)
    return torch.from_numpy(x), torch.from_numpy(y)


SNNTORCH = os.environ.get("NK_SNNTORCH") == "1"
SPIKINGJELLY = os.environ.get("NK_SPIKINGJELLY") == "1"
if SPIKINGJELLY:
    import importlib.metadata

    from spikingjelly.activation_based import functional, neuron

    print(f"torch {torch.__version__}, spikingjelly {importlib.metadata.version('spikingjelly')}", flush=True)
elif SNNTORCH:
    import snntorch
    from snntorch import surrogate

    print(f"torch {torch.__version__}, snntorch {snntorch.__version__}", flush=True)
else:
    print(f"torch {torch.__version__}", flush=True)


class SnnTorchNet(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = torch.nn.Linear(784, 256)
        self.lif = snntorch.Leaky(beta=0.9, threshold=1.0, spike_grad=surrogate.fast_sigmoid(slope=25),
                                  reset_mechanism="subtract")
        self.fc2 = torch.nn.Linear(256, 10)

    def forward(self, x, steps=8):
        current = self.fc1(x)
        mem = self.lif.init_leaky()
        count = torch.zeros_like(current)
        for _ in range(steps):
            spk, mem = self.lif(current, mem)
            count = count + spk
        return self.fc2(count / steps)


class FastSigmoid(torch.nn.Module):
    def forward(self, x):
        return Spike.apply(x)


class SpikingJellyNet(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = torch.nn.Linear(784, 256)
        self.lif = neuron.LIFNode(tau=10.0, decay_input=False, v_threshold=1.0, v_reset=None,
                                  surrogate_function=FastSigmoid(), step_mode="m")
        self.fc2 = torch.nn.Linear(256, 10)

    def forward(self, x, steps=8):
        functional.reset_net(self)
        current = self.fc1(x)
        spikes = self.lif(current.unsqueeze(0).repeat(steps, 1, 1))  # [T, B, N]
        return self.fc2(spikes.mean(0))


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = torch.nn.Linear(784, 256)
        self.fc2 = torch.nn.Linear(256, 10)

    def forward(self, x, steps=8, beta=0.9, threshold=1.0):
        current = self.fc1(x)
        u = torch.zeros_like(current)
        count = torch.zeros_like(current)
        for _ in range(steps):
            v = beta * u + current
            s = Spike.apply(v - threshold)
            u = v - threshold * s
            count = count + s
        return self.fc2(count / steps)


def main():
    xtr, ytr = load(sys.argv[1])
    xte, yte = load(sys.argv[2])
    epochs = int(sys.argv[3]) if len(sys.argv) > 3 else 1
    net = SpikingJellyNet() if SPIKINGJELLY else SnnTorchNet() if SNNTORCH else Net()
    opt = torch.optim.Adam(net.parameters(), lr=1e-3)
    batches = xtr.shape[0] // 128
    for epoch in range(epochs):
        order = torch.randperm(xtr.shape[0])
        start = time.perf_counter()
        for k in range(batches):
            idx = order[k * 128:(k + 1) * 128]
            loss = torch.nn.functional.cross_entropy(net(xtr[idx]), ytr[idx])
            opt.zero_grad()
            loss.backward()
            opt.step()
        seconds = time.perf_counter() - start
        with torch.no_grad():
            acc = (net(xte).argmax(1) == yte).float().mean().item()
        print(f"epoch {epoch + 1}: {seconds:.3f} s, test accuracy {acc:.4f}", flush=True)


if __name__ == "__main__":
    main()
