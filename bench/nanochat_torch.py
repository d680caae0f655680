#!/usr/bin/env python3
"""bench/nanochat_torch.py: one pretraining step of nanochat's model in PyTorch 1.13, the
reference for `tempra train`'s throughput (bench/run_nanochat.sh runs both).

The same model as `tempra synth --layers L --embd E --ff F --heads H --heads-kv K --head-dim D`
(Qwen3: RMSNorm before attention and FFN, per-head RMSNorm of q and k, NeoX rope, grouped-query
causal attention, SwiGLU, tied embedding and head), the same batch of B windows of T tokens, the
same optimizers as tempra's Pretrainer: Muon (momentum 0.95, Nesterov, 5 Newton-Schulz steps
in f32, scale sqrt(max(1, rows/cols))) for the layers' matrices and AdamW (betas 0.9, 0.95, eps
1e-10) for the rest; gradient-norm clipping at 1. Random tokens: throughput does not depend on
them. Prints the median step time and tokens/s over STEPS steps after one warmup step.

Usage: nanochat_torch.py --layers 6 --embd 384 --ff 1024 --heads 6 --heads-kv 2 --head-dim 64
       --vocab 4096 --batch 16 --seq 256 --threads 2 --steps 5
"""
import argparse
import math
import statistics
import time

import torch
import torch.nn.functional as F


def rms_norm(x, w, eps=1e-6):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w


def rope(x, cos, sin):  # x [B, H, T, D], NeoX halves
    d = x.shape[-1] // 2
    x1, x2 = x[..., :d], x[..., d:]
    return torch.cat([x1 * cos - x2 * sin, x2 * cos + x1 * sin], dim=-1)


class Model(torch.nn.Module):
    def __init__(self, a):
        super().__init__()
        self.a = a
        E, H, K, D, Fd = a.embd, a.heads, a.heads_kv, a.head_dim, a.ff
        self.embd = torch.nn.Parameter(torch.randn(a.vocab, E) * 0.02)
        self.out_norm = torch.nn.Parameter(torch.ones(E))
        self.layers = torch.nn.ModuleList()
        for _ in range(a.layers):
            m = torch.nn.Module()
            m.attn_norm = torch.nn.Parameter(torch.ones(E))
            m.q = torch.nn.Parameter(torch.randn(H * D, E) / math.sqrt(E))
            m.k = torch.nn.Parameter(torch.randn(K * D, E) / math.sqrt(E))
            m.v = torch.nn.Parameter(torch.randn(K * D, E) / math.sqrt(E))
            m.o = torch.nn.Parameter(torch.randn(E, H * D) / math.sqrt(H * D))
            m.q_norm = torch.nn.Parameter(torch.ones(D))
            m.k_norm = torch.nn.Parameter(torch.ones(D))
            m.ffn_norm = torch.nn.Parameter(torch.ones(E))
            m.gate = torch.nn.Parameter(torch.randn(Fd, E) / math.sqrt(E))
            m.up = torch.nn.Parameter(torch.randn(Fd, E) / math.sqrt(E))
            m.down = torch.nn.Parameter(torch.randn(E, Fd) / math.sqrt(Fd))
            self.layers.append(m)
        T = a.seq
        inv = 1e6 ** (-torch.arange(0, D // 2, dtype=torch.float32) / (D // 2))
        ang = torch.arange(T, dtype=torch.float32)[:, None] * inv[None, :]
        self.register_buffer("cos", ang.cos())
        self.register_buffer("sin", ang.sin())
        self.register_buffer("mask", torch.full((T, T), float("-inf")).triu(1))

    def forward(self, tokens):
        a = self.a
        B, T = tokens.shape
        H, K, D = a.heads, a.heads_kv, a.head_dim
        x = self.embd[tokens]
        for m in self.layers:
            h = rms_norm(x, m.attn_norm)
            q = rms_norm((h @ m.q.t()).view(B, T, H, D), m.q_norm).transpose(1, 2)
            k = rms_norm((h @ m.k.t()).view(B, T, K, D), m.k_norm).transpose(1, 2)
            v = (h @ m.v.t()).view(B, T, K, D).transpose(1, 2)
            q, k = rope(q, self.cos, self.sin), rope(k, self.cos, self.sin)
            k = k.repeat_interleave(H // K, dim=1)
            v = v.repeat_interleave(H // K, dim=1)
            att = torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(D) + self.mask, dim=-1)
            y = (att @ v).transpose(1, 2).reshape(B, T, H * D)
            x = x + y @ m.o.t()
            h = rms_norm(x, m.ffn_norm)
            x = x + (F.silu(h @ m.gate.t()) * (h @ m.up.t())) @ m.down.t()
        return rms_norm(x, self.out_norm) @ self.embd.t()


def newton_schulz5(g, steps=5):
    a, b, c = 3.4445, -4.7750, 2.0315
    x = g.t() if g.shape[0] > g.shape[1] else g
    x = x / (x.norm() + 1e-7)
    for _ in range(steps):
        A = x @ x.t()
        x = a * x + (b * A + c * A @ A) @ x
    return x.t() if g.shape[0] > g.shape[1] else x


class Muon:
    def __init__(self, params, lr=0.02, momentum=0.95):
        self.params, self.lr, self.momentum = params, lr, momentum
        self.buf = [torch.zeros_like(p) for p in params]

    @torch.no_grad()
    def step(self):
        for p, buf in zip(self.params, self.buf):
            buf.lerp_(p.grad, 1 - self.momentum)
            u = p.grad.lerp(buf, self.momentum)
            p.add_(newton_schulz5(u) * math.sqrt(max(1, p.shape[0] / p.shape[1])), alpha=-self.lr)


def main():
    p = argparse.ArgumentParser()
    for name, default in [("layers", 6), ("embd", 384), ("ff", 1024), ("heads", 6), ("heads-kv", 2), ("head-dim", 64),
                          ("vocab", 4096), ("batch", 16), ("seq", 256), ("threads", 2), ("steps", 5)]:
        p.add_argument("--" + name, type=int, default=default)
    a = p.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    model = Model(a)
    matrices = [t for m in model.layers for t in (m.q, m.k, m.v, m.o, m.gate, m.up, m.down)]
    others = [model.embd, model.out_norm] + [t for m in model.layers for t in (m.attn_norm, m.q_norm, m.k_norm,
                                                                                m.ffn_norm)]
    muon = Muon(matrices)
    adam = torch.optim.AdamW(others, lr=0.004, betas=(0.9, 0.95), eps=1e-10, weight_decay=0)
    tokens = torch.randint(0, a.vocab, (a.batch, a.seq + 1))
    times = []
    for i in range(a.steps + 1):
        t0 = time.perf_counter()
        logits = model(tokens[:, :-1])
        loss = F.cross_entropy(logits.reshape(-1, a.vocab), tokens[:, 1:].reshape(-1))
        for q in matrices + others:
            q.grad = None
        loss.backward()
        torch.nn.utils.clip_grad_norm_(matrices + others, 1.0)
        muon.step()
        adam.step()
        if i > 0:
            times.append(time.perf_counter() - t0)
    s = statistics.median(times)
    print(f"pytorch {torch.__version__}: median step {s:.3f} s over {len(times)} steps, "
          f"{a.batch * a.seq / s:.0f} tokens/s (loss {loss.item():.3f})")


if __name__ == "__main__":
    main()
