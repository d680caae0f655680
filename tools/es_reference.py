#!/usr/bin/env python3
"""tools/es_reference.py: evolution strategies' algebra (src/tempra/train/es.h) in NumPy, f64.

One generation from a JSON description: the center theta (f32 bit patterns), the seed, the
step, sigma, lr and every member's fitness. Writes each member's parameters, the centered-rank
fitness and the updated center, as JSON (f32 bit patterns, and f64 as float.hex). The test
(tests/train/es_test.cpp) runs tempra's EvolutionStrategy on the same description and compares
bit for bit.

The noise is counter_rng.normal_f64 (the C library's log, cos and sqrt, one element at a time,
as tempra's CounterRng::normal_f64). Sums and products are NumPy's separately rounded f64
operations.

    es_reference.py IN.json OUT.json
"""
import json
import sys

import numpy as np

from counter_rng import MASK64, normal_f64, splitmix64_mix

ES_DOMAIN = 0x65735F6E6F697365  # "es_noise"


def es_stream(seed, step, pair):
    return splitmix64_mix((splitmix64_mix(seed ^ ES_DOMAIN) + ((step << 32) | pair)) & MASK64)


def noise(seed, step, pair, n):
    stream = es_stream(seed, step, pair)
    return np.array([normal_f64(stream, i) for i in range(n)], dtype=np.float64)


def centered_ranks(fitness):
    n = len(fitness)
    order = sorted(range(n), key=lambda m: fitness[m])  # stable, as std::stable_sort
    shaped = [0.0] * n
    first = 0
    while first < n:
        last = first
        while last + 1 < n and fitness[order[last + 1]] == fitness[order[first]]:
            last += 1
        rank = float(first + last) / 2.0
        for j in range(first, last + 1):
            shaped[order[j]] = rank / float(n - 1) - 0.5
        first = last + 1
    return np.array(shaped, dtype=np.float64)


def generation(spec):
    theta = np.array(spec["center"], dtype=np.uint32).view(np.float32)
    seed, step, n = spec["seed"], spec["step"], spec["population"]
    sigma, lr = float.fromhex(spec["sigma"]), float.fromhex(spec["lr"])
    fitness = [float.fromhex(f) for f in spec["fitness"]]
    eps = [noise(seed, step, k, theta.size) for k in range(n // 2)]
    center = theta.astype(np.float64)
    members = []
    for m in range(n):
        signed_sigma = sigma if m % 2 == 0 else -sigma
        members.append((center + signed_sigma * eps[m // 2]).astype(np.float32))
    shaped = centered_ranks(fitness)
    acc = np.zeros(theta.size, dtype=np.float64)
    for k in range(n // 2):
        acc = acc + (shaped[2 * k] - shaped[2 * k + 1]) * eps[k]
    scale = lr / (sigma * float(n))
    updated = (center + scale * acc).astype(np.float32)
    return {
        "members": [m.view(np.uint32).tolist() for m in members],
        "shaped": [float(s).hex() for s in shaped],
        "updated": updated.view(np.uint32).tolist(),
    }


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    with open(sys.argv[1]) as f:
        spec = json.load(f)
    with open(sys.argv[2], "w") as f:
        json.dump(generation(spec), f)


if __name__ == "__main__":
    main()
