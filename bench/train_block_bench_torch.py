#!/usr/bin/env python3
"""bench/train_block_bench_torch.py: PyTorch's side of bench/train_block_bench.cpp.

One training step of the pre-norm transformer block of tools/gen_grad_goldens.py (rms_norm,
q/k/v projections, rope in the NeoX layout, causal grouped-query attention, output projection and
residual, rms_norm, SwiGLU MLP and residual) at batch 8, seq 128, d_model 256, 4 query / 2 kv
heads of 64, FFN 704, f32; loss = mean squared error against a fixed target; backward; AdamW(lr
1e-3, betas (0.9, 0.999), eps 1e-8, weight decay 1e-2); zero_grad(set_to_none=True). Plain torch
ops (torch 1.13 has neither F.scaled_dot_product_attention nor F.rms_norm). The rope cos/sin
tables and the causal mask are computed once, outside the step (tempra's rope computes its
angles inside the op, so this favours torch slightly). Prints `us_per_step <mean>
cpu_us_per_step <mean>` (wall, process CPU time) over --steps timed steps after --warmup
untimed ones (bench/train_harness_torch.py). Runs on Debian's python3-torch (1.13).
"""
import torch
import torch.nn.functional as F

import train_harness_torch  # beside this script: python puts the script's folder on sys.path

BATCH, SEQ, DIM, Q_HEADS, KV_HEADS, HEAD_DIM, FFN = 8, 128, 256, 4, 2, 64, 704
EPS, FREQ_BASE = 1e-6, 10000.0


def rms_norm(x, w):
    return x * torch.rsqrt((x * x).mean(-1, keepdim=True) + EPS) * w


def main():
    args = train_harness_torch.setup(steps=20, warmup=3)

    def param(*shape, scale=None):
        t = torch.ones(*shape) if scale is None else torch.randn(*shape) * scale
        return torch.nn.Parameter(t)

    p = {
        "attn_norm": param(DIM),
        "wq": param(Q_HEADS * HEAD_DIM, DIM, scale=DIM ** -0.5),
        "wk": param(KV_HEADS * HEAD_DIM, DIM, scale=DIM ** -0.5),
        "wv": param(KV_HEADS * HEAD_DIM, DIM, scale=DIM ** -0.5),
        "wo": param(DIM, Q_HEADS * HEAD_DIM, scale=(Q_HEADS * HEAD_DIM) ** -0.5),
        "ffn_norm": param(DIM),
        "w_gate": param(FFN, DIM, scale=DIM ** -0.5),
        "w_up": param(FFN, DIM, scale=DIM ** -0.5),
        "w_down": param(DIM, FFN, scale=FFN ** -0.5),
    }
    optimizer = torch.optim.AdamW(p.values(), lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2)
    x = torch.randn(BATCH, SEQ, DIM)
    target = torch.randn(BATCH, SEQ, DIM)

    half = HEAD_DIM // 2
    theta = torch.arange(SEQ, dtype=torch.float32)[:, None] * FREQ_BASE ** (
        -2.0 * torch.arange(half, dtype=torch.float32) / HEAD_DIM)
    cos = torch.cos(theta)[None, :, None, :]  # [1, T, 1, half]
    sin = torch.sin(theta)[None, :, None, :]
    mask = torch.ones(SEQ, SEQ, dtype=torch.bool).triu(1)  # key j hidden from query i when j > i
    group = Q_HEADS // KV_HEADS

    def rope(t):
        t0, t1 = t[..., :half], t[..., half:]
        return torch.cat([t0 * cos - t1 * sin, t0 * sin + t1 * cos], dim=-1)

    def loss_fn():
        h = rms_norm(x, p["attn_norm"])
        q = rope(F.linear(h, p["wq"]).view(BATCH, SEQ, Q_HEADS, HEAD_DIM)).transpose(1, 2)
        k = rope(F.linear(h, p["wk"]).view(BATCH, SEQ, KV_HEADS, HEAD_DIM)).transpose(1, 2)
        v = F.linear(h, p["wv"]).view(BATCH, SEQ, KV_HEADS, HEAD_DIM).transpose(1, 2)
        k = k.repeat_interleave(group, dim=1)
        v = v.repeat_interleave(group, dim=1)
        scores = (q @ k.transpose(-1, -2)) * HEAD_DIM ** -0.5
        o = torch.softmax(scores.masked_fill(mask, float("-inf")), dim=-1) @ v
        x1 = x + F.linear(o.transpose(1, 2).reshape(BATCH, SEQ, Q_HEADS * HEAD_DIM), p["wo"])
        h2 = rms_norm(x1, p["ffn_norm"])
        x2 = x1 + F.linear(F.silu(F.linear(h2, p["w_gate"])) * F.linear(h2, p["w_up"]), p["w_down"])
        return ((x2 - target) ** 2).mean()

    def step():
        loss_fn().backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)

    train_harness_torch.report(step, args)


if __name__ == "__main__":
    main()
