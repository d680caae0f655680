#!/usr/bin/env python3
"""bench/train_bench_torch.py: PyTorch's side of bench/train_bench.cpp.

One training step of the spirals MLP (Linear 2->64, tanh, Linear 64->64, tanh, Linear 64->2),
batch 256, F.cross_entropy, backward, AdamW(lr 1e-2, betas (0.9, 0.999), eps 1e-8, weight decay
1e-4), zero_grad(set_to_none=True), as apps/spirals trains it. Prints `us_per_step <mean>
cpu_us_per_step <mean>` (wall, process CPU time) over --steps timed steps after --warmup
untimed ones (bench/train_harness_torch.py). The batch is random points with labels: the step's
cost does not depend on the values. Runs on Debian's python3-torch (1.13).
"""
import torch
import torch.nn.functional as F

import train_harness_torch  # beside this script: python puts the script's folder on sys.path


def main():
    args = train_harness_torch.setup(steps=500, warmup=50)

    model = torch.nn.Sequential(
        torch.nn.Linear(2, 64), torch.nn.Tanh(), torch.nn.Linear(64, 64), torch.nn.Tanh(), torch.nn.Linear(64, 2)
    )
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-4)
    x = torch.rand(256, 2) * 2 - 1
    y = torch.randint(0, 2, (256,))

    def step():
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)

    train_harness_torch.report(step, args)


if __name__ == "__main__":
    main()
