#!/usr/bin/env python3
"""bench/lora_bench_torch.py: PyTorch's side of bench/lora_bench.cpp.

One LoRA fine-tuning step on Qwen3-0.6B's shape (28 layers, d_model 1024, 16 query / 8 kv heads
of 128, FFN 3072, vocab 151936, tied embeddings): a frozen f32 base with random weights, PEFT's
LoRA (rank 16, alpha 32, no dropout) on q, k, v, o, gate, up and down of every layer, one
sequence of 256 tokens, the per-head q/k RMS norms and NeoX rope of Qwen3, causal grouped-query
attention, next-token cross entropy over the 255 predictions, backward, AdamW(lr 1e-4) over the
adapters. Plain torch 1.13 (no F.scaled_dot_product_attention, no F.rms_norm). Prints the
harness's `us_per_step` line (bench/train_harness_torch.py) and, on stderr, the peak RSS.
"""
import resource
import sys

import torch
import torch.nn.functional as F

import train_harness_torch  # beside this script

LAYERS, DIM, Q_HEADS, KV_HEADS, HEAD_DIM, FFN, VOCAB, SEQ = 28, 1024, 16, 8, 128, 3072, 151936, 256
RANK, ALPHA, EPS, FREQ_BASE = 16, 32.0, 1e-6, 1e6


def rms_norm(x, w):
    return x * torch.rsqrt((x * x).mean(-1, keepdim=True) + EPS) * w


def main():
    args = train_harness_torch.setup(steps=2, warmup=1)
    torch.set_grad_enabled(False)

    def frozen(n_out, n_in):
        return torch.randn(n_out, n_in) * n_in ** -0.5

    shapes = {"q": (Q_HEADS * HEAD_DIM, DIM), "k": (KV_HEADS * HEAD_DIM, DIM), "v": (KV_HEADS * HEAD_DIM, DIM),
              "o": (DIM, Q_HEADS * HEAD_DIM), "gate": (FFN, DIM), "up": (FFN, DIM), "down": (DIM, FFN)}
    embd = torch.randn(VOCAB, DIM) * 0.02
    layers, adapters = [], []
    for _ in range(LAYERS):
        layer = {t: frozen(*s) for t, s in shapes.items()}
        layer.update(attn_norm=torch.ones(DIM), q_norm=torch.ones(HEAD_DIM), k_norm=torch.ones(HEAD_DIM),
                     ffn_norm=torch.ones(DIM))
        lora = {}
        for t, (n_out, n_in) in shapes.items():
            a = torch.nn.Parameter(torch.empty(RANK, n_in).uniform_(-n_in ** -0.5, n_in ** -0.5))
            b = torch.nn.Parameter(torch.zeros(n_out, RANK))
            lora[t] = (a, b)
            adapters += [a, b]
        layers.append(layer)
        layers[-1]["lora"] = lora
    out_norm = torch.ones(DIM)
    torch.set_grad_enabled(True)
    opt = torch.optim.AdamW(adapters, lr=1e-4, weight_decay=0.0)

    tokens = torch.tensor([(i * 7919 + 17) % 32000 for i in range(SEQ)])
    targets = torch.cat([tokens[1:], torch.tensor([-100])])
    half = HEAD_DIM // 2
    theta = torch.arange(SEQ, dtype=torch.float32)[:, None] * FREQ_BASE ** (-2.0 * torch.arange(half) / HEAD_DIM)
    cos, sin = torch.cos(theta)[:, None, :], torch.sin(theta)[:, None, :]  # [T, 1, half]
    mask = torch.full((SEQ, SEQ), float("-inf")).triu(1)
    scale = ALPHA / RANK

    def rope(x):  # [T, H, D]
        x0, x1 = x[..., :half], x[..., half:]
        return torch.cat([x0 * cos - x1 * sin, x0 * sin + x1 * cos], dim=-1)

    def proj(x, layer, t):
        a, b = layer["lora"][t]
        return F.linear(x, layer[t]) + scale * F.linear(F.linear(x, a), b)

    def step():
        x = embd[tokens]
        for layer in layers:
            h = rms_norm(x, layer["attn_norm"])
            q = rope(rms_norm(proj(h, layer, "q").view(SEQ, Q_HEADS, HEAD_DIM), layer["q_norm"]))
            k = rope(rms_norm(proj(h, layer, "k").view(SEQ, KV_HEADS, HEAD_DIM), layer["k_norm"]))
            v = proj(h, layer, "v").view(SEQ, KV_HEADS, HEAD_DIM)
            group = Q_HEADS // KV_HEADS
            k = k.repeat_interleave(group, dim=1).transpose(0, 1)
            v = v.repeat_interleave(group, dim=1).transpose(0, 1)
            scores = q.transpose(0, 1) @ k.transpose(-1, -2) * HEAD_DIM ** -0.5 + mask
            o = (torch.softmax(scores, dim=-1) @ v).transpose(0, 1).reshape(SEQ, Q_HEADS * HEAD_DIM)
            x = x + proj(o, layer, "o")
            h2 = rms_norm(x, layer["ffn_norm"])
            x = x + proj(F.silu(proj(h2, layer, "gate")) * proj(h2, layer, "up"), layer, "down")
        logits = F.linear(rms_norm(x, out_norm), embd)
        loss = F.cross_entropy(logits, targets, ignore_index=-100)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)

    train_harness_torch.report(step, args)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
    print(f"torch peak RSS {peak:.0f} MiB", file=sys.stderr)


if __name__ == "__main__":
    main()
