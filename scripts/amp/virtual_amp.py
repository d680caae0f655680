#!/usr/bin/env python3
"""A guitar test signal and a known "virtual amp", for training NAM profiles without a studio.

    scripts/amp/virtual_amp.py OUT_DIR [--seconds 60] [--seed 1] [--rate 48000] [--latency 17]

writes OUT_DIR/di.wav (the dry signal, as a guitar's direct input would record) and
OUT_DIR/amp.wav (that signal through the virtual amp, delayed by --latency samples as an
interface's round trip would delay it), both mono 32-bit float WAV.

The test signal cycles through material at three levels (-24, -12 and -3 dBFS peaks):
  - a logarithmic sine sweep, 40 Hz to 16 kHz;
  - noise bursts (white and pink) with fast attacks and exponential decays;
  - plucked-string chords (Karplus-Strong strings, strummed low to high) and single notes.

The virtual amp is a chain a guitarist would recognize, every stage a fixed formula:
  1. input EQ: 2nd-order high-pass at 90 Hz, +6 dB peak at 750 Hz (Q 0.8) (a tube screamer's hump);
  2. preamp: gain 12, then an asymmetric waveshaper with bias,
         y = tanh(g+ (x + b)) - tanh(g+ b)   where x + b >= 0,
         y = tanh(g- (x + b)) - tanh(g- b)   otherwise,   b = 0.15, g+ = 1.0, g- = 1.8
     (the bias and the unequal slopes make even harmonics, as a triode does);
  3. tone stack: -5 dB peak at 450 Hz (Q 0.7), +3 dB high shelf from 2.5 kHz;
  4. output EQ: 2nd-order low-pass at 5.5 kHz (a speaker's roll-off), then level 0.5.
Filters are the RBJ Audio EQ Cookbook biquads, run in float64 with scipy.signal.lfilter; the files
are rounded to float32 once at the end. The same arguments give the same files, bit for bit.
"""
import argparse
import math
import os
import sys

import numpy as np
from scipy.io import wavfile
from scipy.signal import lfilter


def biquad(kind, f0, rate, q=0.7071, gain_db=0.0):
    """RBJ cookbook coefficients (b, a), normalized so a[0] = 1."""
    w0 = 2 * math.pi * f0 / rate
    cos_w, sin_w = math.cos(w0), math.sin(w0)
    alpha = sin_w / (2 * q)
    amp = 10 ** (gain_db / 40)
    if kind == "highpass":
        b = [(1 + cos_w) / 2, -(1 + cos_w), (1 + cos_w) / 2]
        a = [1 + alpha, -2 * cos_w, 1 - alpha]
    elif kind == "lowpass":
        b = [(1 - cos_w) / 2, 1 - cos_w, (1 - cos_w) / 2]
        a = [1 + alpha, -2 * cos_w, 1 - alpha]
    elif kind == "peak":
        b = [1 + alpha * amp, -2 * cos_w, 1 - alpha * amp]
        a = [1 + alpha / amp, -2 * cos_w, 1 - alpha / amp]
    elif kind == "highshelf":
        s = 2 * math.sqrt(amp) * alpha
        b = [amp * ((amp + 1) + (amp - 1) * cos_w + s), -2 * amp * ((amp - 1) + (amp + 1) * cos_w),
             amp * ((amp + 1) + (amp - 1) * cos_w - s)]
        a = [(amp + 1) - (amp - 1) * cos_w + s, 2 * ((amp - 1) - (amp + 1) * cos_w), (amp + 1) - (amp - 1) * cos_w - s]
    else:
        raise ValueError(kind)
    return np.array(b) / a[0], np.array(a) / a[0]


def equalize(x, rate, stages):
    """x through biquads (kind, f0, q, gain_db) in order."""
    for kind, f0, q, gain in stages:
        x = lfilter(*biquad(kind, f0, rate, q, gain), x)
    return x


def virtual_amp(x, rate):
    y = equalize(x, rate, [("highpass", 90, 0.7071, 0), ("peak", 750, 0.8, 6)])
    bias, g_pos, g_neg = 0.15, 1.0, 1.8
    u = 12.0 * y + bias
    y = np.where(u >= 0, np.tanh(g_pos * u) - math.tanh(g_pos * bias), np.tanh(g_neg * u) - math.tanh(g_neg * bias))
    y = equalize(y, rate, [("peak", 450, 0.7, -5), ("highshelf", 2500, 0.7071, 3), ("lowpass", 5500, 0.7071, 0)])
    return 0.5 * y


def sweep(rate, seconds, f_lo=40.0, f_hi=16000.0):
    t = np.arange(int(seconds * rate)) / rate
    k = math.log(f_hi / f_lo)
    phase = 2 * math.pi * f_lo * seconds / k * (np.exp(t / seconds * k) - 1)
    fade = np.minimum(1, np.minimum(t, seconds - t) / 0.01)
    return np.sin(phase) * fade


def noise_bursts(rng, rate, seconds):
    n = int(seconds * rate)
    out = np.zeros(n)
    pos = 0
    while pos < n:
        length = int(rng.uniform(0.08, 0.4) * rate)
        white = rng.standard_normal(length)
        # Pink-ish: a one-pole low-pass of white noise, mixed back with some white.
        burst = white if rng.random() < 0.5 else lfilter([0.1], [1, -0.9], white) + 0.3 * white
        env = np.exp(-np.arange(length) / (rng.uniform(0.02, 0.15) * rate))
        env[: int(0.002 * rate)] *= np.linspace(0, 1, int(0.002 * rate))
        end = min(n, pos + length)
        out[pos:end] += (burst * env)[: end - pos] / max(1e-9, np.max(np.abs(burst)))
        pos += length + int(rng.uniform(0.02, 0.2) * rate)
    return out


def string(rng, rate, freq, seconds, brightness):
    """Karplus-Strong: a noise burst in a delay line, averaged (a low-pass) on every pass."""
    n = int(round(seconds * rate))
    period = max(2, int(round(rate / freq)))
    line = rng.uniform(-1, 1, period)
    line = lfilter([brightness], [1, -(1 - brightness)], line)  # the pick's tone
    out = np.empty(n)
    decay = 0.996
    for start in range(0, n, period):
        end = min(n, start + period)
        out[start:end] = line[: end - start]
        line = decay * 0.5 * (line + np.roll(line, -1))
    return out


CHORDS = [[82.41, 123.47, 164.81, 207.65, 246.94, 329.63],  # E major
          [110.0, 164.81, 220.0, 261.63, 329.63],           # A minor
          [146.83, 220.0, 293.66, 369.99],                  # D major
          [98.0, 123.47, 146.83, 196.0, 293.66, 392.0]]     # G major


def plucks(rng, rate, seconds):
    n = int(seconds * rate)
    out = np.zeros(n)
    pos = 0
    while pos < n:
        length = int(rng.uniform(0.6, 1.5) * rate)
        notes = CHORDS[rng.integers(len(CHORDS))] if rng.random() < 0.6 else [rng.uniform(82, 660)]
        strum = int(rng.uniform(0.005, 0.02) * rate)
        brightness = rng.uniform(0.3, 0.9)
        for i, f in enumerate(notes):
            s = string(rng, rate, f, length / rate, brightness)[:length]
            start = pos + i * strum
            end = min(n, start + length)
            if start < n:
                out[start:end] += s[: end - start]
        pos += length
    return out


def test_signal(seconds, rate, seed):
    rng = np.random.default_rng(seed)
    parts, total = [], 0
    levels = [10 ** (-24 / 20), 10 ** (-12 / 20), 10 ** (-3 / 20)]
    cycle = 0
    while total < seconds * rate:
        for material in ("sweep", "noise", "plucks"):
            if material == "sweep":
                x = sweep(rate, 2.0)
            elif material == "noise":
                x = noise_bursts(rng, rate, 2.0)
            else:
                x = plucks(rng, rate, 4.0)
            level = levels[(cycle + len(parts)) % 3]
            parts.append(level * x / max(1e-9, np.max(np.abs(x))))
            parts.append(np.zeros(int(0.1 * rate)))
            total += len(parts[-2]) + len(parts[-1])
        cycle += 1
    return np.concatenate(parts)[: int(seconds * rate)]


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("out_dir")
    p.add_argument("--seconds", type=float, default=60.0)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--rate", type=int, default=48000)
    p.add_argument("--latency", type=int, default=17, help="samples the amp's output is delayed by")
    args = p.parse_args()
    if args.seconds <= 0 or args.rate < 8000 or args.latency < 0:
        sys.exit("virtual_amp.py: --seconds must be positive, --rate at least 8000, --latency at least 0")
    os.makedirs(args.out_dir, exist_ok=True)
    di = test_signal(args.seconds, args.rate, args.seed)
    amp = virtual_amp(di, args.rate)
    amp = np.concatenate([np.zeros(args.latency), amp])[: len(di)]
    for name, x in (("di.wav", di), ("amp.wav", amp)):
        path = os.path.join(args.out_dir, name)
        wavfile.write(path + ".tmp", args.rate, x.astype(np.float32))
        os.replace(path + ".tmp", path)
    print(f"wrote {args.out_dir}/di.wav and amp.wav: {len(di) / args.rate:.1f} s at {args.rate} Hz, "
          f"amp peak {np.max(np.abs(amp)):.3f}, latency {args.latency} samples")


if __name__ == "__main__":
    main()
