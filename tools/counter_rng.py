"""tools/counter_rng.py: tempra's counter RNG (src/tempra/core/rng.h) in Python, bit for bit.

Every value is a pure function of (seed, index): splitmix64's finalizer over a seed-derived
stream key plus index times the golden-ratio increment. The normals call the C library's log,
cos and sqrt one value at a time (Python's math module, the same libm tempra calls), never
NumPy's vectorized functions, which may round differently.
"""
import math

import numpy as np

MASK64 = (1 << 64) - 1
GOLDEN = 0x9E3779B97F4A7C15


def splitmix64_mix(z):
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK64
    return z ^ (z >> 31)


def bits(seed, index):
    """CounterRng::bits: 64 random bits for element `index` of stream `seed`."""
    return splitmix64_mix((splitmix64_mix(seed) + (index + 1) * GOLDEN) & MASK64)


def normal_f64(seed, index):
    """CounterRng::normal_f64: Box-Muller on the two 32-bit halves of one draw, in double."""
    b = bits(seed, index)
    u1 = (float(b >> 32) + 1.0) * 2.0**-32
    u2 = float(b & 0xFFFFFFFF) * 2.0**-32
    return math.sqrt(-2.0 * math.log(u1)) * math.cos(6.283185307179586 * u2)


def normal(seed, index):
    """CounterRng::normal: normal_f64 rounded to f32."""
    return float(np.float32(normal_f64(seed, index)))
