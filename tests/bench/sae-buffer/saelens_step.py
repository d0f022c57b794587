"""saelens_step.py - the peer's training throughput: SAELens's TopK training
SAE stepped the way its SAETrainer._train_step does (training_forward_pass,
backward, grad-norm clip, Adam, dead-latent bookkeeping), on activations
preloaded from an HDF5 file, torch on the CPU with --threads threads.

usage: saelens_step.py ACTS.h5 --latents N --k K --batch B --steps S [--sparse]
prints one line: samples_per_second=... seconds=... steps=... sparse=...
"""
import argparse, time

import h5py
import numpy as np
import torch
from sae_lens import TopKTrainingSAE, TopKTrainingSAEConfig
from sae_lens.saes.sae import TrainStepInput

ap = argparse.ArgumentParser()
ap.add_argument("acts")
ap.add_argument("--latents", type=int, required=True)
ap.add_argument("--k", type=int, required=True)
ap.add_argument("--batch", type=int, default=4096)
ap.add_argument("--steps", type=int, default=20)
ap.add_argument("--warmup", type=int, default=3)
ap.add_argument("--threads", type=int, default=2)
ap.add_argument("--sparse", action="store_true", help="use_sparse_activations=True (sparse decode)")
args = ap.parse_args()
torch.set_num_threads(args.threads)
torch.manual_seed(0)

x = torch.from_numpy(h5py.File(args.acts, "r")["/acts"][()].astype(np.float32))
m = x.shape[1]
cfg = TopKTrainingSAEConfig(d_in=m, d_sae=args.latents, k=args.k, aux_loss_coefficient=1 / 32,
                            use_sparse_activations=args.sparse, device="cpu", dtype="float32")
sae = TopKTrainingSAE(cfg)
opt = torch.optim.Adam(sae.parameters(), lr=4e-4, betas=(0.9, 0.999))
dead = torch.zeros(args.latents, dtype=torch.bool)
since_fired = torch.zeros(args.latents)
rows = x.shape[0]


def step(i):
    start = (i * args.batch) % max(1, rows - args.batch + 1)
    batch = x[start:start + args.batch]
    out = sae.training_forward_pass(TrainStepInput(sae_in=batch, coefficients={}, dead_neuron_mask=dead,
                                                   n_training_steps=i, is_logging_step=False))
    with torch.no_grad():
        fired = out.feature_acts.bool().float().sum(-2).bool()
        if fired.is_sparse:
            fired = fired.to_dense()
        since_fired.add_(1)
        since_fired[fired] = 0
    out.loss.backward()
    torch.nn.utils.clip_grad_norm_(sae.parameters(), 1.0)
    opt.step()
    opt.zero_grad()


for i in range(args.warmup):
    step(i)
t0 = time.perf_counter()
for i in range(args.steps):
    step(args.warmup + i)
seconds = time.perf_counter() - t0
print(f"samples_per_second={args.steps * args.batch / seconds:.1f} seconds={seconds:.3f} steps={args.steps} sparse={int(args.sparse)}")
