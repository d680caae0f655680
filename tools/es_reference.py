#!/usr/bin/env python3
"""tools/es_reference.py: evolution strategies' algebra (src/tempra/train/es.h) in NumPy, f64.

One generation from a JSON description: the center theta (f32 bit patterns), the seed, the
step, sigma, lr and every member's fitness. Writes each member's parameters, the centered-rank
fitness and the updated center, as JSON (f32 bit patterns, and f64 as float.hex). The test
(tests/train/es_test.cpp) runs tempra's EvolutionStrategy on the same description and compares
bit for bit.

The noise calls the C library's log, cos and sqrt one element at a time (Python's math module),
as tempra's CounterRng::normal_f64 does, and never NumPy's vectorized transcendental functions,
which may round differently. Sums and products are NumPy's separately rounded f64 operations.

    es_reference.py IN.json OUT.json
"""
import json
import math
import sys

import numpy as np

MASK = (1 << 64) - 1
GOLDEN = 0x9E3779B97F4A7C15
ES_DOMAIN = 0x65735F6E6F697365  # "es_noise"


def splitmix64_mix(z):
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
    return z ^ (z >> 31)


def bits(seed, index):
    return splitmix64_mix((splitmix64_mix(seed) + (index + 1) * GOLDEN) & MASK)


def normal_f64(seed, index):
    b = bits(seed, index)
    u1 = (float(b >> 32) + 1.0) * 2.0**-32
    u2 = float(b & 0xFFFFFFFF) * 2.0**-32
    return math.sqrt(-2.0 * math.log(u1)) * math.cos(6.283185307179586 * u2)


def es_stream(seed, step, pair):
    return splitmix64_mix((splitmix64_mix(seed ^ ES_DOMAIN) + ((step << 32) | pair)) & MASK)


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
