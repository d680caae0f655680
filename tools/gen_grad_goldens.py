#!/usr/bin/python3
"""PyTorch gradient goldens for tempra's autograd (tests/ag/torch_golden_test.cpp).

Three models, computed in float64 by torch.autograd, each saved with its seeded inputs and
parameters, its loss and the gradient of the loss with respect to every parameter:

    grad_mlp     2-layer MLP: linear -> tanh -> linear, mean squared error
    grad_block   pre-norm transformer block: rms_norm, q/k/v projections, rope (NeoX layout),
                 causal grouped-query attention, output projection, residual; rms_norm,
                 SwiGLU MLP, residual; mean squared error against a target
    grad_qwen3_lora  a 2-layer Qwen3 (q/k head norms) with frozen weights and LoRA adapters on
                 all seven projections; next-token cross entropy (tests/train/lora_golden_test.cpp)

Run (Debian's python3 with python3-torch 1.13, which has neither
F.scaled_dot_product_attention nor F.rms_norm, so both are written out in plain torch):

    /usr/bin/python3 tools/gen_grad_goldens.py [--out tests/goldens] [--check]

The formulas match tempra's ops exactly (src/tempra/backend/scalar/neural.cpp):
  rms_norm   y = x / sqrt(mean(x^2) + eps) * w
  rope       theta_i = pos * freq_base^(-2i / n_dims); NeoX pairs (x[i], x[i + n_dims/2]):
             y[i] = x[i] cos - x[i+h] sin, y[i+h] = x[i] sin + x[i+h] cos
  attention  softmax(q k^T * D^-1/2, causal: key j hidden from query i when j > i + (Tk - Tq)) v;
             query head h reads kv head h // (Hq / Hkv)
  linear     y = x w^T + b (torch.nn.functional.linear)

File format and writer: tools/gen_goldens.py (safetensors with a "cases" list in the metadata).
Each file holds one case whose "inputs" name the data tensors then the parameters, in order,
and whose "outputs" are the loss then one gradient per parameter ("<case>.grad.<param>").
Deterministic: torch is seeded with zlib.crc32 of the case name, so a rerun writes identical
bytes; --check recomputes and compares with the committed files.
"""

import argparse
import json
import os
import sys
import zlib

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gen_goldens import read_safetensors, write_safetensors  # noqa: E402

F64 = torch.float64


def seeded(name):
    torch.manual_seed(zlib.crc32(name.encode()))


def randn(*shape, scale=1.0):
    return torch.randn(*shape, dtype=F64) * scale


# ---------------------------------------------------------------------------
# the models
# ---------------------------------------------------------------------------

def mlp_case():
    name = "mlp"
    seeded(name)
    batch, n_in, hidden, n_out = 8, 4, 16, 3
    data = {"x": randn(batch, n_in), "target": randn(batch, n_out)}
    params = {
        "w1": randn(hidden, n_in, scale=0.5), "b1": randn(hidden, scale=0.1),
        "w2": randn(n_out, hidden, scale=0.5), "b2": randn(n_out, scale=0.1),
    }
    for p in params.values():
        p.requires_grad_(True)

    def loss_fn(x, target, w1, b1, w2, b2):
        h = torch.tanh(torch.nn.functional.linear(x, w1, b1))
        y = torch.nn.functional.linear(h, w2, b2)
        return ((y - target) ** 2).mean()

    loss = loss_fn(data["x"], data["target"], **params)
    return name, data, params, loss, {"batch": batch, "in": n_in, "hidden": hidden, "out": n_out}


def rms_norm(x, w, eps):
    return x / torch.sqrt((x * x).mean(-1, keepdim=True) + eps) * w


def rope_neox(x, positions, n_dims, freq_base):
    """x [B, T, H, D]; positions [T] (int). Rotates (x[i], x[i + n_dims/2]) for i < n_dims/2."""
    half = n_dims // 2
    i = torch.arange(half, dtype=F64)
    theta = positions.to(F64)[:, None] * torch.pow(torch.tensor(freq_base, dtype=F64), -2.0 * i / n_dims)
    c = torch.cos(theta)[None, :, None, :]  # [1, T, 1, half]
    s = torch.sin(theta)[None, :, None, :]
    x0, x1, rest = x[..., :half], x[..., half:n_dims], x[..., n_dims:]
    return torch.cat([x0 * c - x1 * s, x0 * s + x1 * c, rest], dim=-1)


def attention(q, k, v, causal):
    """q [B, Hq, Tq, D], k/v [B, Hkv, Tk, D]: grouped-query attention written out."""
    group = q.shape[1] // k.shape[1]
    k = k.repeat_interleave(group, dim=1)
    v = v.repeat_interleave(group, dim=1)
    scores = q @ k.transpose(-1, -2) / (q.shape[-1] ** 0.5)
    if causal:
        tq, tk = q.shape[2], k.shape[2]
        i = torch.arange(tq)[:, None]
        j = torch.arange(tk)[None, :]
        scores = scores.masked_fill(j > i + (tk - tq), float("-inf"))
    return torch.softmax(scores, dim=-1) @ v


def block_case():
    name = "block"
    seeded(name)
    batch, seq, dim, q_heads, kv_heads, head_dim, ffn = 2, 5, 16, 4, 2, 8, 24
    eps, freq_base = 1e-6, 10000.0
    data = {
        "x": randn(batch, seq, dim),
        "target": randn(batch, seq, dim),
        "positions": torch.arange(seq, dtype=torch.int32) + 3,
    }
    params = {
        "attn_norm": 1.0 + randn(dim, scale=0.1),
        "wq": randn(q_heads * head_dim, dim, scale=dim ** -0.5),
        "wk": randn(kv_heads * head_dim, dim, scale=dim ** -0.5),
        "wv": randn(kv_heads * head_dim, dim, scale=dim ** -0.5),
        "wo": randn(dim, q_heads * head_dim, scale=(q_heads * head_dim) ** -0.5),
        "ffn_norm": 1.0 + randn(dim, scale=0.1),
        "w_gate": randn(ffn, dim, scale=dim ** -0.5),
        "w_up": randn(ffn, dim, scale=dim ** -0.5),
        "w_down": randn(dim, ffn, scale=ffn ** -0.5),
    }
    for p in params.values():
        p.requires_grad_(True)

    def loss_fn(x, target, positions, attn_norm, wq, wk, wv, wo, ffn_norm, w_gate, w_up, w_down):
        F = torch.nn.functional
        h = rms_norm(x, attn_norm, eps)
        q = F.linear(h, wq).reshape(batch, seq, q_heads, head_dim)
        k = F.linear(h, wk).reshape(batch, seq, kv_heads, head_dim)
        v = F.linear(h, wv).reshape(batch, seq, kv_heads, head_dim)
        q = rope_neox(q, positions, head_dim, freq_base)
        k = rope_neox(k, positions, head_dim, freq_base)
        o = attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), causal=True)
        x1 = x + F.linear(o.transpose(1, 2).reshape(batch, seq, q_heads * head_dim), wo)
        h2 = rms_norm(x1, ffn_norm, eps)
        x2 = x1 + F.linear(F.silu(F.linear(h2, w_gate)) * F.linear(h2, w_up), w_down)
        return ((x2 - target) ** 2).mean()

    loss = loss_fn(data["x"], data["target"], data["positions"], **params)
    return name, data, params, loss, {
        "batch": batch, "seq": seq, "dim": dim, "q_heads": q_heads, "kv_heads": kv_heads,
        "head_dim": head_dim, "ffn": ffn, "eps": eps, "freq_base": freq_base, "causal": True}


LORA_TARGETS = ("q", "k", "v", "o", "gate", "up", "down")


def qwen3_lora_case():
    """A 2-layer Qwen3 (llama.cpp's src/models/qwen3.cpp graph: per-head q/k RMS norms before NeoX
    rope) with frozen base weights (data) and LoRA adapters on all seven projections (the
    parameters): y = x W^T + (alpha / rank) (x A^T) B^T. B is drawn nonzero so every gradient is.
    Loss: the mean cross entropy of the logits against next-token targets, -100 ignored."""
    name = "qwen3_lora"
    seeded(name)
    n_layer, batch, seq, dim, q_heads, kv_heads, head_dim, ffn, vocab = 2, 2, 5, 16, 4, 2, 8, 24, 24
    rank, alpha, eps, freq_base = 2, 4.0, 1e-6, 1e6
    q_dim, kv_dim = q_heads * head_dim, kv_heads * head_dim
    shapes = {"q": (q_dim, dim), "k": (kv_dim, dim), "v": (kv_dim, dim), "o": (dim, q_dim),
              "gate": (ffn, dim), "up": (ffn, dim), "down": (dim, ffn)}
    tokens = torch.randint(0, vocab, (batch, seq), dtype=torch.int32)
    targets = torch.randint(0, vocab, (batch, seq), dtype=torch.int32)
    targets[0, 0] = -100
    targets[1, 2] = -100
    data = {"tokens": tokens, "targets": targets,
            "token_embd": randn(vocab, dim, scale=0.5), "output_norm": 1.0 + randn(dim, scale=0.1),
            "output": randn(vocab, dim, scale=dim ** -0.5)}
    params = {}
    for il in range(n_layer):
        p = f"blk{il}."
        data[p + "attn_norm"] = 1.0 + randn(dim, scale=0.1)
        data[p + "attn_q_norm"] = 1.0 + randn(head_dim, scale=0.1)
        data[p + "attn_k_norm"] = 1.0 + randn(head_dim, scale=0.1)
        data[p + "ffn_norm"] = 1.0 + randn(dim, scale=0.1)
        for t, (n_out, n_in) in shapes.items():
            data[p + t] = randn(n_out, n_in, scale=n_in ** -0.5)
        for t, (n_out, n_in) in shapes.items():
            params[p + t + ".lora_a"] = randn(rank, n_in, scale=n_in ** -0.5)
            params[p + t + ".lora_b"] = randn(n_out, rank, scale=0.2)
    for v in params.values():
        v.requires_grad_(True)

    def loss_fn(d, prm):
        F = torch.nn.functional
        positions = torch.arange(seq, dtype=torch.int32)
        scale = alpha / rank

        def proj(x, il, t):
            p = f"blk{il}.{t}"
            return F.linear(x, d[p]) + scale * F.linear(F.linear(x, prm[p + ".lora_a"]), prm[p + ".lora_b"])

        x = d["token_embd"][d["tokens"].long()]
        for il in range(n_layer):
            p = f"blk{il}."
            h = rms_norm(x, d[p + "attn_norm"], eps)
            q = rms_norm(proj(h, il, "q").reshape(batch, seq, q_heads, head_dim), d[p + "attn_q_norm"], eps)
            k = rms_norm(proj(h, il, "k").reshape(batch, seq, kv_heads, head_dim), d[p + "attn_k_norm"], eps)
            v = proj(h, il, "v").reshape(batch, seq, kv_heads, head_dim)
            q = rope_neox(q, positions, head_dim, freq_base)
            k = rope_neox(k, positions, head_dim, freq_base)
            o = attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), causal=True)
            x = x + proj(o.transpose(1, 2).reshape(batch, seq, q_dim), il, "o")
            h2 = rms_norm(x, d[p + "ffn_norm"], eps)
            x = x + proj(F.silu(proj(h2, il, "gate")) * proj(h2, il, "up"), il, "down")
        logits = F.linear(rms_norm(x, d["output_norm"], eps), d["output"])
        return F.cross_entropy(logits.reshape(-1, vocab), d["targets"].long().reshape(-1), ignore_index=-100)

    loss = loss_fn(data, params)
    return name, data, params, loss, {
        "n_layer": n_layer, "batch": batch, "seq": seq, "dim": dim, "q_heads": q_heads, "kv_heads": kv_heads,
        "head_dim": head_dim, "ffn": ffn, "vocab": vocab, "rank": rank, "alpha": alpha, "eps": eps,
        "freq_base": freq_base}


# ---------------------------------------------------------------------------
# files
# ---------------------------------------------------------------------------

def build(case_fn):
    name, data, params, loss, config = case_fn()
    grads = torch.autograd.grad(loss, list(params.values()))
    tensors = {}
    for k, t in data.items():
        tensors[f"{name}.{k}"] = t.detach().contiguous()
    for k, t in params.items():
        tensors[f"{name}.{k}"] = t.detach().contiguous()
    tensors[f"{name}.loss"] = loss.detach().reshape(())
    for k, g in zip(params, grads):
        tensors[f"{name}.grad.{k}"] = g.detach().contiguous()
    case = {
        "name": name, "op": f"grad_{name}",
        "inputs": [f"{name}.{k}" for k in list(data) + list(params)],
        "views": [None] * (len(data) + len(params)),
        "params": config,
        "outputs": [f"{name}.loss"] + [f"{name}.grad.{k}" for k in params],
    }
    return f"grad_{name}", tensors, {"cases": json.dumps([case], separators=(",", ":"))}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "goldens"))
    ap.add_argument("--check", action="store_true", help="recompute and compare with the files; write nothing")
    args = ap.parse_args()
    ok = True
    for case_fn in (mlp_case, block_case, qwen3_lora_case):
        fname, tensors, meta = build(case_fn)
        path = os.path.join(args.out, f"{fname}.safetensors")
        if args.check:
            have, have_meta = read_safetensors(path)
            same = have_meta == meta and set(have) == set(tensors) and all(
                torch.equal(have[k], tensors[k]) for k in tensors)
            print(f"{path}: {'matches' if same else 'DIFFERS'}")
            ok = ok and same
        else:
            write_safetensors(path, tensors, meta)
            print(f"wrote {path} ({os.path.getsize(path)} bytes, {len(tensors)} tensors)")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
