#!/usr/bin/python3
"""tools/qwen3_reference.py: a float64 NumPy forward pass of a Qwen3 GGUF, tempra's parity reference.

Usage: qwen3_reference.py MODEL.gguf OUT.npy TOKEN_ID [TOKEN_ID ...]
Writes the logits of every position, float64 [n_tokens, n_vocab], as a .npy file.

The graph follows llama.cpp's src/models/qwen3.cpp (and llm_graph_context's build_norm,
build_attn, build_ffn): per layer rms_norm, q/k/v projections, per-head rms_norm of q and k,
rotary embedding in the NeoX layout (pairs (i, i + head_dim/2), theta = pos * base^(-2i/head_dim),
base from qwen3.rope.freq_base), causal grouped-query attention with scale 1/sqrt(head_dim),
output projection, residual, rms_norm, SwiGLU MLP (down(silu(gate x) * up x)), residual; the
final rms_norm and the LM head (output.weight, or token_embd.weight when tied). Every weight is
widened to float64 once and every product is computed in float64, so the reference's own
rounding error (~1e-15 relative) is far below the tolerances tempra is held to.

Dependencies: Python 3 and NumPy only (Debian python3-numpy); the GGUF reader below handles
v2/v3 files with f32, f16, bf16 and q8_0 tensors (tests/apps/qwen3_fixture writes the first
three; tests/llm/qwen3_test derives q8_0 ones). Quantized weights are decoded exactly (d * q).
"""
import struct
import sys

import numpy as np

GGML_F32, GGML_F16, GGML_Q8_0, GGML_BF16 = 0, 1, 8, 30
_SCALARS = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q", 11: "<q", 12: "<d"}


class GgufFile:
    """metadata: dict key -> value; tensors: dict name -> float64 ndarray in row-major shape (ne reversed)."""

    def __init__(self, path):
        with open(path, "rb") as f:
            self.data = f.read()
        self.pos = 0
        if self.data[:4] != b"GGUF":
            raise ValueError(f"{path}: not a GGUF file")
        self.pos = 4
        version = self._scalar("<I")
        if version not in (2, 3):
            raise ValueError(f"{path}: GGUF version {version} is not supported")
        n_tensors, n_kv = self._scalar("<Q"), self._scalar("<Q")
        self.metadata = {}
        for _ in range(n_kv):
            key = self._string()
            self.metadata[key] = self._value(self._scalar("<I"))
        infos = []
        for _ in range(n_tensors):
            name = self._string()
            n_dims = self._scalar("<I")
            ne = [self._scalar("<Q") for _ in range(n_dims)]
            infos.append((name, ne, self._scalar("<I"), self._scalar("<Q")))
        alignment = self.metadata.get("general.alignment", 32)
        data_start = (self.pos + alignment - 1) // alignment * alignment
        self.tensors = {}
        for name, ne, ggml_type, offset in infos:
            count = int(np.prod(ne))
            start = data_start + offset
            if ggml_type == GGML_F32:
                values = np.frombuffer(self.data, dtype="<f4", count=count, offset=start).astype(np.float64)
            elif ggml_type == GGML_F16:
                values = np.frombuffer(self.data, dtype="<f2", count=count, offset=start).astype(np.float64)
            elif ggml_type == GGML_BF16:
                bits = np.frombuffer(self.data, dtype="<u2", count=count, offset=start).astype(np.uint32) << 16
                values = bits.view(np.float32).astype(np.float64)
            elif ggml_type == GGML_Q8_0:
                # ggml's block_q8_0: an f16 scale d, then 32 int8 quants; x = d * q.
                blocks = np.frombuffer(self.data, dtype=np.uint8, count=count // 32 * 34, offset=start).reshape(-1, 34)
                d = blocks[:, :2].copy().view("<f2").astype(np.float64)
                values = (d * blocks[:, 2:].copy().view(np.int8).astype(np.float64)).reshape(-1)
            else:
                raise ValueError(f"{path}: tensor '{name}' has ggml type {ggml_type}; the reference reads f32/f16/bf16/q8_0")
            self.tensors[name] = values.reshape(list(reversed(ne)))

    def _scalar(self, fmt):
        (v,) = struct.unpack_from(fmt, self.data, self.pos)
        self.pos += struct.calcsize(fmt)
        return v

    def _string(self):
        n = self._scalar("<Q")
        s = self.data[self.pos : self.pos + n].decode("utf-8")
        self.pos += n
        return s

    def _value(self, t):
        if t in _SCALARS:
            return self._scalar(_SCALARS[t])
        if t == 8:
            return self._string()
        if t == 9:
            item_type, n = self._scalar("<I"), self._scalar("<Q")
            return [self._value(item_type) for _ in range(n)]
        raise ValueError(f"unknown GGUF value type {t}")


def rms_norm(x, weight, eps):
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps) * weight


def rope_neox(x, positions, base):
    """x [seq, heads, head_dim]: rotates the pairs (i, i + head_dim/2) by pos * base^(-2i/head_dim)."""
    half = x.shape[-1] // 2
    inv_freq = base ** (-2.0 * np.arange(half, dtype=np.float64) / x.shape[-1])
    theta = positions.astype(np.float64)[:, None] * inv_freq[None, :]  # [seq, half]
    cos, sin = np.cos(theta)[:, None, :], np.sin(theta)[:, None, :]
    x0, x1 = x[..., :half], x[..., half:]
    return np.concatenate([x0 * cos - x1 * sin, x0 * sin + x1 * cos], axis=-1)


def forward(gguf, tokens):
    md, w = gguf.metadata, gguf.tensors
    if md.get("general.architecture") != "qwen3":
        raise ValueError(f"general.architecture is {md.get('general.architecture')!r}, expected 'qwen3'")
    n_layer = md["qwen3.block_count"]
    n_head, n_head_kv = md["qwen3.attention.head_count"], md["qwen3.attention.head_count_kv"]
    head_dim = md.get("qwen3.attention.key_length", md["qwen3.embedding_length"] // n_head)
    eps = float(md["qwen3.attention.layer_norm_rms_epsilon"])
    base = float(md.get("qwen3.rope.freq_base", 10000.0))
    tokens = np.asarray(tokens, dtype=np.int64)
    seq = len(tokens)
    positions = np.arange(seq)
    group = n_head // n_head_kv
    causal = np.tril(np.ones((seq, seq), dtype=bool))

    x = w["token_embd.weight"][tokens]  # [seq, n_embd]
    for il in range(n_layer):
        p = f"blk.{il}."
        attn_in = rms_norm(x, w[p + "attn_norm.weight"], eps)
        q = (attn_in @ w[p + "attn_q.weight"].T).reshape(seq, n_head, head_dim)
        k = (attn_in @ w[p + "attn_k.weight"].T).reshape(seq, n_head_kv, head_dim)
        v = (attn_in @ w[p + "attn_v.weight"].T).reshape(seq, n_head_kv, head_dim)
        q = rope_neox(rms_norm(q, w[p + "attn_q_norm.weight"], eps), positions, base)
        k = rope_neox(rms_norm(k, w[p + "attn_k_norm.weight"], eps), positions, base)
        heads = []
        for h in range(n_head):
            kv = h // group
            scores = (q[:, h, :] @ k[:, kv, :].T) / np.sqrt(head_dim)  # [seq, seq]
            scores = np.where(causal, scores, -np.inf)
            scores = np.exp(scores - scores.max(axis=-1, keepdims=True))
            heads.append((scores / scores.sum(axis=-1, keepdims=True)) @ v[:, kv, :])
        attn = np.stack(heads, axis=1).reshape(seq, n_head * head_dim)
        x = x + attn @ w[p + "attn_output.weight"].T
        ffn_in = rms_norm(x, w[p + "ffn_norm.weight"], eps)
        gate = ffn_in @ w[p + "ffn_gate.weight"].T
        up = ffn_in @ w[p + "ffn_up.weight"].T
        x = x + ((gate / (1.0 + np.exp(-gate))) * up) @ w[p + "ffn_down.weight"].T
    out = rms_norm(x, w["output_norm.weight"], eps)
    head = w.get("output.weight", w["token_embd.weight"])
    return out @ head.T


def main(argv):
    if len(argv) < 4:
        sys.stderr.write(__doc__.split("\n\n")[1] + "\n")
        return 2
    logits = forward(GgufFile(argv[1]), [int(t) for t in argv[3:]])
    np.save(argv[2], logits)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
