#!/usr/bin/env python3
"""bench/train_bench_torch.py: PyTorch's side of bench/train_bench.cpp.

One training step of the spirals MLP (Linear 2->64, tanh, Linear 64->64, tanh, Linear 64->2),
batch 256, F.cross_entropy, backward, AdamW(lr 1e-2, betas (0.9, 0.999), eps 1e-8, weight decay
1e-4), zero_grad(set_to_none=True), as apps/spirals trains it. Prints `us_per_step <mean> cpu_us_per_step <mean>` (wall, process CPU time) over
--steps timed steps after --warmup untimed ones. The batch is random points with labels: the
step's cost does not depend on the values. Runs on Debian's python3-torch (1.13).
"""
import argparse
import time

import torch
import torch.nn.functional as F


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--steps", type=int, default=500)
    parser.add_argument("--warmup", type=int, default=50)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(1)

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

    for _ in range(args.warmup):
        step()
    start, cpu_start = time.perf_counter(), time.process_time()
    for _ in range(args.steps):
        step()
    elapsed, cpu = time.perf_counter() - start, time.process_time() - cpu_start
    print(f"us_per_step {elapsed / args.steps * 1e6:.3f} cpu_us_per_step {cpu / args.steps * 1e6:.3f}")


if __name__ == "__main__":
    main()
