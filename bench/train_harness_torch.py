"""bench/train_harness_torch.py: what PyTorch's sides of the training benchmarks share
(bench/train_bench_torch.py, bench/train_block_bench_torch.py; the C++ side is
bench/train_harness.h).

setup() reads --threads, --steps and --warmup, sets torch's thread count and seeds it; report()
runs --warmup untimed steps, then --steps timed ones, and prints `us_per_step <mean>
cpu_us_per_step <mean>` (wall, process CPU time), the line train_harness.h reads.
"""
import argparse
import time

import torch


def setup(steps, warmup):
    """The parsed command line (defaults: 2 threads, `steps`, `warmup`), with torch set to it."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--steps", type=int, default=steps)
    parser.add_argument("--warmup", type=int, default=warmup)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(1)
    return args


def report(step, args):
    """Times step() as the harness does and prints the us_per_step line."""
    for _ in range(args.warmup):
        step()
    start, cpu_start = time.perf_counter(), time.process_time()
    for _ in range(args.steps):
        step()
    elapsed, cpu = time.perf_counter() - start, time.process_time() - cpu_start
    print(f"us_per_step {elapsed / args.steps * 1e6:.3f} cpu_us_per_step {cpu / args.steps * 1e6:.3f}")
