#!/usr/bin/python3
"""Golden-file generator for the tempra C++ test suite.

Builds small reference cases with PyTorch and writes them as safetensors
files, one per op family, into tests/goldens/:

    unary, binary, cast, reduce, softmax, matmul, structure, neural

Run (Debian's python3 with python3-torch / python3-numpy, torch 1.13.x):

    /usr/bin/python3 tools/gen_goldens.py [--out tests/goldens] [--check]

    --check   only re-read the existing files and validate them; write nothing.

The generated files are committed to the repository, so building and running
the tests never needs torch or Python. Rerun this script only when cases
change; it is deterministic (each case seeds torch with zlib.crc32 of its
name), so a rerun produces byte-identical files.

File format: plain safetensors written by hand (no `safetensors` package):
8-byte little-endian u64 header length N, N bytes of JSON header (padded with
spaces so N is a multiple of 8), then the raw little-endian tensor data.
Tensors are stored contiguous, ordered by element size (largest first) then by
name, with no gaps, so every tensor's data is naturally aligned.

Case schema: header "__metadata__" = {"cases": <JSON string>}, a list of
    {"name", "op", "inputs": [tensor names], "views": [null|"T"|"S2", ...],
     "params": {...}, "outputs": [tensor names]}
Tensor names are "<case>.in<i>" and "<case>.out" (single output) or
"<case>.out<i>" (several outputs: split). "views" is always present and has
one entry per input: null = as stored, "T" = x.transpose(-1, -2),
"S2" = x[..., ::2]. The op is computed on the viewed inputs.
"""

import argparse
import json
import math
import os
import struct
import sys
import zlib

import numpy as np
import torch
import torch.nn.functional as F

assert sys.byteorder == "little", "goldens are written in native (little-endian) byte order"

F32, F64, F16, BF16 = torch.float32, torch.float64, torch.float16, torch.bfloat16
I8, U8, I16, I32, I64, BOOL = torch.int8, torch.uint8, torch.int16, torch.int32, torch.int64, torch.bool

DTYPE_TO_ST = {F32: "F32", F64: "F64", F16: "F16", BF16: "BF16", I8: "I8", U8: "U8",
               I16: "I16", I32: "I32", I64: "I64", BOOL: "BOOL"}
ST_TO_DTYPE = {v: k for k, v in DTYPE_TO_ST.items()}
ST_ITEMSIZE = {"F32": 4, "F64": 8, "F16": 2, "BF16": 2, "I8": 1, "U8": 1, "I16": 2,
               "I32": 4, "I64": 8, "BOOL": 1}
ST_NUMPY = {"F32": np.float32, "F64": np.float64, "F16": np.float16, "BF16": np.int16,
            "I8": np.int8, "U8": np.uint8, "I16": np.int16, "I32": np.int32,
            "I64": np.int64, "BOOL": np.uint8}
INF = float("inf")


# ----------------------------------------------------------------------------
# safetensors writer / reader
# ----------------------------------------------------------------------------

def tensor_bytes(t):
    t = t.detach().contiguous()
    if t.dtype == BF16:
        return t.view(I16).numpy().tobytes()
    if t.dtype == BOOL:
        return t.to(U8).numpy().tobytes()
    return t.numpy().tobytes()


def write_safetensors(path, tensors, metadata):
    names = sorted(tensors, key=lambda n: (-ST_ITEMSIZE[DTYPE_TO_ST[tensors[n].dtype]], n))
    header = {"__metadata__": metadata}
    blobs = []
    offset = 0
    for n in names:
        t = tensors[n]
        b = tensor_bytes(t)
        assert len(b) == t.numel() * ST_ITEMSIZE[DTYPE_TO_ST[t.dtype]]
        header[n] = {"dtype": DTYPE_TO_ST[t.dtype], "shape": list(t.shape),
                     "data_offsets": [offset, offset + len(b)]}
        blobs.append(b)
        offset += len(b)
    hjson = json.dumps(header, separators=(",", ":"), ensure_ascii=True).encode("utf-8")
    hjson += b" " * ((-len(hjson)) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(hjson)))
        f.write(hjson)
        for b in blobs:
            f.write(b)


def read_safetensors(path):
    """Returns (tensors: dict name -> torch.Tensor, metadata: dict)."""
    with open(path, "rb") as f:
        data = f.read()
    (n,) = struct.unpack("<Q", data[:8])
    assert n % 8 == 0, f"{path}: header length {n} not a multiple of 8"
    header = json.loads(data[8:8 + n].decode("utf-8"))
    body = data[8 + n:]
    metadata = header.pop("__metadata__", {})
    assert all(isinstance(k, str) and isinstance(v, str) for k, v in metadata.items())
    tensors = {}
    spans = []
    for name, info in header.items():
        assert set(info) == {"dtype", "shape", "data_offsets"}, (path, name, info)
        st = info["dtype"]
        begin, end = info["data_offsets"]
        numel = math.prod(info["shape"])
        assert end - begin == numel * ST_ITEMSIZE[st], (path, name)
        assert begin % ST_ITEMSIZE[st] == 0 and (8 + n + begin) % ST_ITEMSIZE[st] == 0, (path, name)
        spans.append((begin, end))
        arr = np.frombuffer(body[begin:end], dtype=ST_NUMPY[st]).copy().reshape(info["shape"])
        t = torch.from_numpy(arr)
        if st == "BF16":
            t = t.view(BF16)
        elif st == "BOOL":
            assert ((t == 0) | (t == 1)).all(), (path, name)
            t = t.to(BOOL)
        tensors[name] = t
    spans.sort()
    pos = 0
    for b, e in spans:
        assert b == pos, f"{path}: gap/overlap in data at {b}"
        pos = e
    assert pos == len(body), f"{path}: trailing bytes"
    return tensors, metadata


# ----------------------------------------------------------------------------
# case builder
# ----------------------------------------------------------------------------

def seed(name):
    torch.manual_seed(zlib.crc32(name.encode("utf-8")))


def apply_view(t, v):
    if v is None:
        return t
    if v == "T":
        return t.transpose(-1, -2)
    if v == "S2":
        return t[..., ::2]
    raise ValueError(v)


def stored_shape(shape, v):
    """Shape to store so that applying view v gives `shape`."""
    shape = list(shape)
    if v == "T":
        shape[-1], shape[-2] = shape[-2], shape[-1]
    elif v == "S2":
        shape[-1] = 2 * shape[-1] - 1 if shape[-1] % 2 else 2 * shape[-1]
    return shape


class Family:
    def __init__(self, fname):
        self.fname = fname
        self.tensors = {}
        self.cases = []
        self.names = set()

    def add(self, name, op, inputs, outputs, views=None, params=None):
        """inputs: stored (contiguous) tensors; outputs: golden tensors."""
        assert name not in self.names, name
        self.names.add(name)
        if views is None:
            views = [None] * len(inputs)
        assert len(views) == len(inputs)
        in_names = []
        for i, t in enumerate(inputs):
            n = f"{name}.in{i}"
            self.tensors[n] = t.detach().contiguous().clone()
            in_names.append(n)
        out_names = []
        for i, t in enumerate(outputs):
            n = f"{name}.out" if len(outputs) == 1 else f"{name}.out{i}"
            if t.is_floating_point():
                assert not torch.isnan(t).any(), f"NaN in golden {n}"
            self.tensors[n] = t.detach().contiguous().clone()
            out_names.append(n)
        self.cases.append({"name": name, "op": op, "inputs": in_names, "views": list(views),
                           "params": dict(params or {}), "outputs": out_names})

    def write(self, outdir):
        path = os.path.join(outdir, f"{self.fname}.safetensors")
        meta = {"cases": json.dumps(self.cases, separators=(",", ":"), ensure_ascii=True)}
        write_safetensors(path, self.tensors, meta)
        return path


def randn(*shape, dtype=F32):
    return torch.randn(*shape, dtype=F32).to(dtype)


def positive(*shape, dtype=F32, hi=3.0):
    return (torch.rand(*shape, dtype=F32) * hi + 0.1).to(dtype)


def causal_mask(q, k):
    """Bool [q, k]: True where key j is masked for query i (j > i + (k - q))."""
    i = torch.arange(q)[:, None]
    j = torch.arange(k)[None, :]
    return j > i + (k - q)


def additive_mask(shape, frac=0.25):
    """f32 additive mask: small finite offsets plus some -inf; key column 0 is
    never -inf, so no row is fully masked (even combined with causal)."""
    m = torch.randn(*shape) * 0.5
    m[torch.rand(*shape) < frac] = -INF
    m[..., 0] = torch.randn(m[..., 0].shape) * 0.5
    return m


# ----------------------------------------------------------------------------
# unary
# ----------------------------------------------------------------------------

UNARY = {
    "neg": torch.neg,
    "abs": torch.abs,
    "exp": torch.exp,
    "log": torch.log,
    "sqrt": torch.sqrt,
    "rsqrt": torch.rsqrt,
    "square": lambda x: x * x,
    "tanh": torch.tanh,
    "sigmoid": torch.sigmoid,
    "relu": torch.relu,
    # The gelus are torch's definitions, evaluated in forms without the cancellation of
    # 1 + tanh(u) and 1 + erf(z) for very negative x, which even f64 loses (x < -19 gives 0
    # instead of ~1e-18). 0.5 (1 + tanh(u)) == sigmoid(2u); 1 + erf(z) == erfc(-z).
    "gelu_tanh": lambda x: x * torch.sigmoid(2.0 * 0.7978845608028654 * (x + 0.044715 * x * x * x)),
    "gelu_erf": lambda x: 0.5 * x * torch.special.erfc(-x * 0.7071067811865476),
    "silu": F.silu,
    "softplus": F.softplus,
    "sin": torch.sin,
    "cos": torch.cos,
}
POSITIVE_UNARY = {"log", "sqrt", "rsqrt"}


def unary_golden(op, x_view):
    """f32/f64 inputs: computed in f64, rounded to the input dtype.
    f16/bf16 inputs: computed in f32, rounded once to the input dtype."""
    if x_view.dtype in (F16, BF16):
        return UNARY[op](x_view.float()).to(x_view.dtype)
    return UNARY[op](x_view.double()).to(x_view.dtype)


def unary_input(op, shape, dtype=F32):
    if op in POSITIVE_UNARY:
        return positive(*shape, dtype=F32, hi=10.0).to(dtype)
    return randn(*shape, dtype=F32).mul(2.0).to(dtype)


def wide_input(shape):
    """Large magnitudes (|x| up to 80) mixed with values near 0."""
    x = (torch.randn(*shape) * 12.0).clamp(-80.0, 80.0)
    flat = x.view(-1)
    flat[::4] = torch.randn(flat[::4].shape) * 1e-3
    flat[1::7] = torch.randn(flat[1::7].shape) * 30.0
    return x.clamp(-80.0, 80.0)


def gen_unary():
    fam = Family("unary")
    shapes = [[17], [7, 13], [3, 5, 7], [2, 3, 4, 5], [1], [65], [3, 33], [2, 1, 7]]
    for idx, op in enumerate(UNARY):
        # contiguous, rank cycles through 1..4 and odd sizes
        for k in range(2):
            shape = shapes[(2 * idx + k) % len(shapes)]
            name = f"{op}_f32_{'x'.join(map(str, shape))}"
            seed(name)
            x = unary_input(op, shape)
            fam.add(name, op, [x], [unary_golden(op, x)])
        # non-contiguous
        view = "T" if idx % 2 == 0 else "S2"
        shape = [5, 9] if view == "T" else [3, 4, 9]
        name = f"{op}_f32_view{view}"
        seed(name)
        x = unary_input(op, stored_shape(shape, view))
        fam.add(name, op, [x], [unary_golden(op, apply_view(x, view))], views=[view])

    # large magnitude and near-zero values
    for op in ["exp", "tanh", "sigmoid", "softplus", "silu", "gelu_erf", "gelu_tanh"]:
        name = f"{op}_f32_wide"
        seed(name)
        x = wide_input([8, 33])
        fam.add(name, op, [x], [unary_golden(op, x)])

    # half precision inputs: output has the input dtype, computed through f32
    for op in ["exp", "tanh", "silu"]:
        for dt, tag in [(F16, "f16"), (BF16, "bf16")]:
            name = f"{op}_{tag}"
            seed(name)
            x = torch.randn(7, 33) * 3.0
            if op == "exp" and dt == F16:
                x = x.clamp(-10.0, 10.0)  # keep exp(x) < 65504
            x = x.to(dt)
            fam.add(name, op, [x], [unary_golden(op, x)])
        name = f"{op}_f16_viewT"
        seed(name)
        x = (torch.randn(13, 6) * 2.0).to(F16)
        fam.add(name, op, [x], [unary_golden(op, x.transpose(-1, -2))], views=["T"])

    # f64 inputs, f64 outputs
    for op in ["exp", "log", "tanh", "sigmoid", "gelu_erf", "sqrt", "softplus"]:
        name = f"{op}_f64"
        seed(name)
        x = unary_input(op, [5, 17], dtype=F64)
        fam.add(name, op, [x], [unary_golden(op, x)])
    return fam


# ----------------------------------------------------------------------------
# binary
# ----------------------------------------------------------------------------

BINARY = {
    "add": torch.add,
    "sub": torch.sub,
    "mul": torch.mul,
    "div": torch.div,
    "pow": torch.pow,
    "maximum": torch.maximum,
    "minimum": torch.minimum,
}


def binary_operand(op, which, shape, dtype=F32):
    if op == "pow" and which == 0:
        return positive(*shape, hi=4.0).to(dtype)
    if op == "pow" and which == 1:
        return (torch.randn(*shape) * 1.5).to(dtype)
    x = torch.randn(*shape) * 2.0
    if op == "div" and which == 1:
        x = torch.sign(x) * (x.abs() + 0.5)  # |b| >= 0.5
    return x.to(dtype)


def binary_golden(op, a, b):
    """f32/f64: computed in f64, rounded to the input dtype.
    f16/bf16: computed in f32, rounded once to the input dtype."""
    dt = a.dtype
    wide = F32 if dt in (F16, BF16) else F64
    if isinstance(b, float):
        return BINARY[op](a.to(wide), torch.tensor(b, dtype=wide)).to(dt)
    return BINARY[op](a.to(wide), b.to(wide)).to(dt)


def gen_binary():
    fam = Family("binary")
    layouts = [
        ("same", [7, 13], [7, 13]),
        ("row", [3, 5], [5]),
        ("col", [4, 6], [4, 1]),
        ("colL", [4, 1], [4, 6]),
        ("both", [3, 1, 5], [1, 4, 1]),
        ("rank", [2, 3, 4, 5], [4, 1]),
        ("rankL", [5], [2, 3, 5]),
        ("r1", [17], [17]),
    ]
    scalars = {"add": 2.5, "sub": -1.25, "mul": 2.5, "div": 2.5, "pow": 2.5,
               "maximum": 0.25, "minimum": -0.5}
    for op in BINARY:
        for tag, sa, sb in layouts:
            name = f"{op}_{tag}"
            seed(name)
            a = binary_operand(op, 0, sa)
            b = binary_operand(op, 1, sb)
            fam.add(name, op, [a, b], [binary_golden(op, a, b)])
        # scalar form: a OP scalar
        name = f"{op}_scalar"
        seed(name)
        a = binary_operand(op, 0, [3, 7])
        s = scalars[op]
        fam.add(name, op, [a], [binary_golden(op, a, s)], params={"scalar": s})
        # views
        name = f"{op}_viewT_row"
        seed(name)
        a = binary_operand(op, 0, [5, 3])  # viewed as [3, 5]
        b = binary_operand(op, 1, [5])
        fam.add(name, op, [a, b], [binary_golden(op, a.transpose(-1, -2), b)], views=["T", None])
        name = f"{op}_viewS2_T"
        seed(name)
        a = binary_operand(op, 0, [4, 11])  # S2 -> [4, 6]
        b = binary_operand(op, 1, [6, 4])   # T  -> [4, 6]
        fam.add(name, op, [a, b], [binary_golden(op, a[..., ::2], b.transpose(-1, -2))],
                views=["S2", "T"])
    # extra scalar forms for pow
    for s in [2.0, 0.5, -1.5]:
        name = f"pow_scalar_{s:+g}"
        seed(name)
        a = binary_operand("pow", 0, [5, 7])
        fam.add(name, "pow", [a], [binary_golden("pow", a, s)], params={"scalar": s})

    # half precision (add): output dtype = input dtype, computed through f32
    for dt, tag in [(F16, "f16"), (BF16, "bf16")]:
        name = f"add_{tag}_same"
        seed(name)
        a, b = (torch.randn(7, 13) * 4).to(dt), (torch.randn(7, 13) * 4).to(dt)
        fam.add(name, "add", [a, b], [binary_golden("add", a, b)])
        name = f"add_{tag}_both"
        seed(name)
        a, b = torch.randn(3, 1, 5).to(dt), (torch.randn(1, 4, 1) * 100).to(dt)
        fam.add(name, "add", [a, b], [binary_golden("add", a, b)])
        name = f"add_{tag}_scalar"
        seed(name)
        a = (torch.randn(3, 7) * 4).to(dt)
        fam.add(name, "add", [a], [binary_golden("add", a, 2.5)], params={"scalar": 2.5})
        name = f"add_{tag}_viewT"
        seed(name)
        a, b = (torch.randn(6, 4) * 4).to(dt), (torch.randn(4, 6) * 4).to(dt)
        fam.add(name, "add", [a, b], [binary_golden("add", a.transpose(-1, -2), b)], views=["T", None])
    # f64
    for op in ["add", "mul", "div", "pow"]:
        name = f"{op}_f64_row"
        seed(name)
        a = binary_operand(op, 0, [3, 5], dtype=F64)
        b = binary_operand(op, 1, [5], dtype=F64)
        fam.add(name, op, [a, b], [binary_golden(op, a, b)])
    return fam


# ----------------------------------------------------------------------------
# cast
# ----------------------------------------------------------------------------

F16_EDGE = [0.0, -0.0, 1.0, -1.0, 1 + 2 ** -11, 1 + 3 * 2 ** -11, -(1 + 2 ** -11), 1 + 2 ** -12,
            2 ** -24, 2 ** -25, 3 * 2 ** -26, 1e-6, -1e-6, 3e-7, 6.1e-5, 2 ** -14, 65504.0,
            65519.0, 65520.0, 1e5, -1e5, 3.4e38, 0.1, 0.2, 1.0 / 3.0, 2048.0 + 1.0, 2048.0 + 3.0]
BF16_EDGE = [0.0, -0.0, 1.0, -1.0, 1 + 2 ** -8, 1 + 3 * 2 ** -8, -(1 + 2 ** -8), 1 + 2 ** -9,
             1e-38, 1e-40, 3.3895e38, 3.4028235e38, -3.4028235e38, 0.1, 1.0 / 3.0, 257.0, 259.0,
             65504.0, 1e5, 1e-6]


def gen_cast():
    fam = Family("cast")

    def cast_case(name, x, dt, view=None):
        xv = apply_view(x, view)
        fam.add(name, "cast", [x], [xv.to(dt)], views=[view], params={"dtype": DTYPE_TO_ST[dt]})

    # f32 -> f16 / bf16: random values exercising rounding, plus edge values
    for dt, tag, edge in [(F16, "f16", F16_EDGE), (BF16, "bf16", BF16_EDGE)]:
        name = f"f32_to_{tag}_random"
        seed(name)
        x = torch.randn(7, 33) * torch.exp(torch.randn(7, 33) * 3.0)
        cast_case(name, x, dt)
        name = f"f32_to_{tag}_edge"
        cast_case(name, torch.tensor(edge, dtype=F32), dt)
        name = f"f32_to_{tag}_tiny"
        seed(name)
        cast_case(name, torch.randn(65) * 1e-6, dt)
        name = f"f32_to_{tag}_viewT"
        seed(name)
        cast_case(name, torch.randn(9, 5) * 100.0, dt, view="T")
    name = "f32_to_f16_overflow"
    seed(name)
    cast_case(name, torch.randn(3, 17) * 1e5, F16)

    # f16 / bf16 -> f32 (exact)
    name = "f16_to_f32"
    seed(name)
    x = torch.cat([torch.randn(40) * 1e3, torch.randn(20) * 1e-6,
                   torch.tensor([65504.0, -65504.0, 2 ** -24, -0.0, INF, -INF])]).to(F16)
    cast_case(name, x.view(2, 33), F32)
    name = "bf16_to_f32"
    seed(name)
    x = (torch.randn(3, 17) * torch.exp(torch.randn(3, 17) * 5.0)).to(BF16)
    cast_case(name, x, F32)
    name = "f16_to_f32_viewS2"
    seed(name)
    cast_case(name, (torch.randn(5, 14) * 10).to(F16), F32, view="S2")

    # f32 -> f64 (exact)
    name = "f32_to_f64"
    seed(name)
    cast_case(name, torch.randn(4, 9) * 1e3, F64)

    # float -> integer: truncation toward zero, values in range
    for dt, tag in [(I32, "i32"), (I64, "i64"), (I8, "i8")]:
        name = f"f32_to_{tag}"
        seed(name)
        x = (torch.randn(5, 13) * 20.0).clamp(-120.0, 120.0)
        x.view(-1)[:6] = torch.tensor([0.5, -0.5, 1.999, -1.999, -0.0, 127.0 if dt == I8 else 1e4])
        cast_case(name, x, dt)
    name = "f32_to_u8"
    seed(name)
    x = torch.rand(5, 13) * 200.0
    x.view(-1)[:4] = torch.tensor([0.0, 0.999, 254.5, 255.0])
    cast_case(name, x, U8)
    name = "f32_to_i32_viewT"
    seed(name)
    cast_case(name, (torch.randn(7, 3) * 50.0), I32, view="T")
    name = "f32_to_i64_large"
    seed(name)
    cast_case(name, torch.randn(17) * 1e6, I64)

    # float -> bool: nonzero -> true
    name = "f32_to_bool"
    seed(name)
    x = torch.randn(6, 7)
    x[torch.rand(6, 7) < 0.4] = 0.0
    x.view(-1)[:4] = torch.tensor([-0.0, 1e-30, -1e-30, 0.0])
    cast_case(name, x, BOOL)
    name = "f32_to_bool_viewS2"
    seed(name)
    x = torch.randn(4, 10)
    x[torch.rand(4, 10) < 0.5] = 0.0
    cast_case(name, x, BOOL, view="S2")
    return fam


# ----------------------------------------------------------------------------
# reductions
# ----------------------------------------------------------------------------

def reduce_golden(op, x, dim, keepdim, correction=None):
    xd = x.double()
    if op == "sum":
        y = xd.sum(dim, keepdim=keepdim)
    elif op == "mean":
        y = xd.mean(dim, keepdim=keepdim)
    elif op == "max":
        y = torch.max(xd, dim, keepdim=keepdim).values
    elif op == "min":
        y = torch.min(xd, dim, keepdim=keepdim).values
    elif op == "argmax":
        return torch.argmax(x, dim, keepdim=keepdim).to(I64)
    elif op == "var":
        y = torch.var(xd, dim, unbiased=(correction == 1), keepdim=keepdim)
    elif op == "logsumexp":
        y = torch.logsumexp(xd, dim, keepdim=keepdim)
    else:
        raise ValueError(op)
    return y.to(x.dtype)


def no_ties(x, dim):
    s, _ = torch.sort(x, dim=dim)
    return bool((s.diff(dim=dim) != 0).all())


def gen_reduce():
    fam = Family("reduce")
    configs = [
        # (tag, logical shape, dim, keepdim, view)
        ("r1", [17], 0, False, None),
        ("r1k", [33], -1, True, None),
        ("r2d1", [7, 13], 1, False, None),
        ("r2d0k", [7, 13], 0, True, None),
        ("r3dm2", [3, 5, 7], -2, False, None),
        ("r3d0", [3, 5, 7], 0, False, None),
        ("r4dm1k", [2, 3, 4, 5], -1, True, None),
        ("r4d1", [2, 3, 4, 5], 1, False, None),
        ("long", [3, 257], 1, False, None),
        ("viewT", [7, 13], -1, False, "T"),
        ("viewT_d0", [4, 7, 6], -2, True, "T"),
        ("viewS2", [5, 17], 0, False, "S2"),
    ]
    for op in ["sum", "mean", "max", "min", "argmax", "var", "logsumexp"]:
        for ci, (tag, shape, dim, keepdim, view) in enumerate(configs):
            corrections = [ci % 2] if op == "var" else [None]
            if op == "var" and tag in ("r2d1", "r3dm2"):
                corrections = [0, 1]
            for corr in corrections:
                name = f"{op}_{tag}" + ("" if corr is None else f"_c{corr}")
                seed(name)
                for _ in range(100):
                    x = torch.randn(*stored_shape(shape, view)) * 3.0
                    if op == "logsumexp" and tag == "long":
                        x = x * 30.0  # needs the max-subtraction for stability
                    if op not in ("max", "min", "argmax") or no_ties(apply_view(x, view), dim):
                        break
                else:
                    raise RuntimeError(f"ties in {name}")
                params = {"dim": dim, "keepdim": keepdim}
                if corr is not None:
                    params["correction"] = corr
                y = reduce_golden(op, apply_view(x, view), dim, keepdim, corr)
                fam.add(name, op, [x], [y], views=[view], params=params)
    return fam


# ----------------------------------------------------------------------------
# softmax / log_softmax
# ----------------------------------------------------------------------------

def softmax_golden(op, x, mask, dim, scale, causal):
    s = x.double() * scale
    if mask is not None:
        s = s + mask.double()
    if causal:
        assert dim in (-1, x.dim() - 1)
        q, k = x.shape[-2], x.shape[-1]
        s = s.masked_fill(causal_mask(q, k), -INF)
    y = torch.softmax(s, dim) if op == "softmax" else torch.log_softmax(s, dim)
    return y.to(x.dtype)


def gen_softmax():
    fam = Family("softmax")
    configs = [
        # (tag, x shape (logical), dim, scale, causal, mask shape or None, view)
        ("r1", [7], 0, 1.0, False, None, None),
        ("r2", [3, 17], -1, 1.0, False, None, None),
        ("r3_dim1", [2, 3, 5], 1, 1.0, False, None, None),
        ("r2_dim0", [5, 4], 0, 1.0, False, None, None),
        ("scale", [4, 33], -1, 0.125, False, None, None),
        ("large", [3, 65], -1, 1.0, False, None, None),
        ("causal_sq", [2, 5, 5], -1, 1.0, True, None, None),
        ("causal_q3k8", [2, 3, 8], -1, 0.5, True, None, None),
        ("causal_q1k9", [2, 1, 9], -1, 1.0, True, None, None),
        ("causal_r4", [2, 2, 4, 6], -1, 0.25, True, None, None),
        ("mask_qk", [2, 4, 6], -1, 1.0, False, [4, 6], None),
        ("mask_1k_causal", [4, 7], -1, 0.5, True, [1, 7], None),
        ("mask_qk_causal", [3, 5, 5], -1, 1.0, True, [5, 5], None),
        ("viewT", [4, 9], -1, 1.0, False, None, "T"),
        ("viewS2_causal", [3, 3, 6], -1, 2.0, True, None, "S2"),
        ("viewT_dim0", [6, 5], 0, 1.0, False, None, "T"),
    ]
    for op in ["softmax", "log_softmax"]:
        for tag, shape, dim, scale, causal, mshape, view in configs:
            name = f"{op}_{tag}"
            seed(name)
            x = torch.randn(*stored_shape(shape, view)) * 2.0
            if tag == "large":
                x = x * 40.0
            inputs, views = [x], [view]
            mask = None
            if mshape is not None:
                mask = additive_mask(mshape)
                inputs.append(mask)
                views.append(None)
            y = softmax_golden(op, apply_view(x, view), mask, dim, scale, causal)
            fam.add(name, op, inputs, [y], views=views,
                    params={"dim": dim, "scale": scale, "causal": causal})
    return fam


# ----------------------------------------------------------------------------
# matmul / bmm / einsum
# ----------------------------------------------------------------------------

def gen_matmul():
    fam = Family("matmul")

    def mm_case(name, op, sa, sb, va=None, vb=None, params=None):
        seed(name)
        a = torch.randn(*stored_shape(sa, va))
        b = torch.randn(*stored_shape(sb, vb))
        av, bv = apply_view(a, va), apply_view(b, vb)
        if op == "einsum":
            y = torch.einsum(params["eq"], av.double(), bv.double())
        else:
            y = torch.matmul(av.double(), bv.double())
        fam.add(name, op, [a, b], [y.to(F32)], views=[va, vb], params=params or {})

    mm_case("mm_1x1x1", "matmul", [1, 1], [1, 1])
    mm_case("mm_1x7x1", "matmul", [1, 7], [7, 1])
    mm_case("mm_7x13x5", "matmul", [7, 13], [13, 5])
    mm_case("mm_33x65x17", "matmul", [33, 65], [65, 17])
    mm_case("mm_16x64x32", "matmul", [16, 64], [64, 32])
    mm_case("mm_b4_r2", "matmul", [2, 3, 4, 5], [5, 6])
    mm_case("mm_b_bcast", "matmul", [3, 1, 4, 5], [2, 5, 7])
    mm_case("mm_r2_r3", "matmul", [4, 5], [3, 5, 6])
    mm_case("mm_r3_r3", "matmul", [2, 7, 13], [2, 13, 5])
    mm_case("mm_viewT_a", "matmul", [7, 13], [13, 5], va="T")
    mm_case("mm_viewT_b", "matmul", [7, 13], [13, 5], vb="T")
    mm_case("mm_viewT_ab", "matmul", [33, 17], [17, 9], va="T", vb="T")
    mm_case("mm_b4_viewT_b", "matmul", [2, 3, 4, 5], [2, 3, 5, 6], vb="T")
    mm_case("mm_viewS2_a", "matmul", [7, 13], [13, 5], va="S2")
    mm_case("mm_bcast_viewT_a", "matmul", [3, 1, 4, 5], [2, 5, 7], va="T")

    mm_case("bmm_3x4x5x6", "bmm", [3, 4, 5], [3, 5, 6])
    mm_case("bmm_1x1x1x1", "bmm", [1, 1, 1], [1, 1, 1])
    mm_case("bmm_2x17x9x33", "bmm", [2, 17, 9], [2, 9, 33])
    mm_case("bmm_viewT_b", "bmm", [4, 7, 8], [4, 8, 3], vb="T")

    einsums = [
        ("ein_bik_bkj", "bik,bkj->bij", [2, 3, 4], [2, 4, 5], None, None),
        ("ein_ik_jk", "ik,jk->ij", [5, 7], [6, 7], None, None),
        ("ein_bhqd_bhkd", "bhqd,bhkd->bhqk", [2, 3, 5, 8], [2, 3, 7, 8], None, None),
        ("ein_bhqk_bhkd", "bhqk,bhkd->bhqd", [2, 3, 5, 7], [2, 3, 7, 8], None, None),
        ("ein_bi_oi", "bi,oi->bo", [4, 13], [6, 13], None, None),
        ("ein_ij_jk_ki", "ij,jk->ki", [3, 5], [5, 4], None, None),
        ("ein_bti_i", "bti,i->bt", [2, 5, 7], [7], None, None),
        ("ein_outer", "i,j->ij", [5], [3], None, None),
        ("ein_bhqd_bhkd_viewT", "bhqd,bhkd->bhqk", [1, 2, 4, 6], [1, 2, 5, 6], None, "T"),
        ("ein_ik_jk_viewS2", "ik,jk->ij", [5, 7], [6, 7], "S2", None),
    ]
    for name, eq, sa, sb, va, vb in einsums:
        mm_case(name, "einsum", sa, sb, va=va, vb=vb, params={"eq": eq})
    return fam


# ----------------------------------------------------------------------------
# structure
# ----------------------------------------------------------------------------

def gen_structure():
    fam = Family("structure")

    # concat
    for name, shapes, dim, views in [
        ("concat_d0", [[3, 4], [2, 4]], 0, [None, None]),
        ("concat_d1_three", [[2, 3, 4], [2, 5, 4], [2, 1, 4]], 1, [None, None, None]),
        ("concat_dm1", [[2, 3, 1], [2, 3, 7]], -1, [None, None]),
        ("concat_r1", [[5], [17]], 0, [None, None]),
        ("concat_viewT", [[3, 4], [3, 6]], 1, ["T", None]),
        ("concat_viewS2_d0", [[2, 5], [3, 5], [1, 5]], 0, [None, "S2", "T"]),
    ]:
        seed(name)
        ts = [torch.randn(*stored_shape(s, v)) for s, v in zip(shapes, views)]
        y = torch.cat([apply_view(t, v) for t, v in zip(ts, views)], dim)
        fam.add(name, "concat", ts, [y], views=views, params={"dim": dim})

    # stack
    for name, shape, n, dim, views in [
        ("stack_d0", [3, 4], 3, 0, None),
        ("stack_d1", [3, 4], 2, 1, None),
        ("stack_dlast", [3, 4], 2, 2, None),
        ("stack_dm1", [2, 3, 5], 3, -1, None),
        ("stack_r1", [7], 2, 0, None),
        ("stack_viewT", [4, 5], 2, 1, ["T", None]),
    ]:
        seed(name)
        views = views or [None] * n
        ts = [torch.randn(*stored_shape(shape, v)) for v in views]
        y = torch.stack([apply_view(t, v) for t, v in zip(ts, views)], dim)
        fam.add(name, "stack", ts, [y], views=views, params={"dim": dim})

    # split
    for name, shape, dim, sizes, view in [
        ("split_d0", [10, 6], 0, [3, 3, 4], None),
        ("split_dm1", [4, 6], -1, [1, 5], None),
        ("split_d1_r3", [2, 7, 3], 1, [2, 1, 4], None),
        ("split_one", [5, 3], 0, [5], None),
        ("split_viewT", [6, 4], -1, [2, 2], "T"),
        ("split_viewS2", [3, 9], 1, [4, 5], "S2"),
    ]:
        seed(name)
        x = torch.randn(*stored_shape(shape, view))
        pieces = torch.split(apply_view(x, view), sizes, dim)
        fam.add(name, "split", [x], list(pieces), views=[view],
                params={"dim": dim, "sizes": sizes})

    # gather
    for name, xshape, ishape, dim, view in [
        ("gather_d1", [4, 6], [4, 3], 1, None),
        ("gather_d0_r3", [5, 4, 3], [2, 4, 3], 0, None),
        ("gather_dm1_small", [5, 4, 6], [3, 2, 8], -1, None),
        ("gather_viewT", [4, 6], [4, 5], 1, "T"),
    ]:
        seed(name)
        x = torch.randn(*stored_shape(xshape, view))
        n = xshape[dim]
        idx = torch.randint(0, n, ishape, dtype=I64)
        y = torch.gather(apply_view(x, view), dim, idx)
        fam.add(name, "gather", [x, idx], [y], views=[view, None], params={"dim": dim})

    # index_select
    for name, xshape, n_idx, dim, view in [
        ("index_select_d0", [5, 7], 3, 0, None),
        ("index_select_d1_rep", [5, 7], 9, 1, None),
        ("index_select_dm1_r3", [2, 3, 6], 4, -1, None),
        ("index_select_viewT", [5, 7], 4, 0, "T"),
    ]:
        seed(name)
        x = torch.randn(*stored_shape(xshape, view))
        idx = torch.randint(0, xshape[dim], [n_idx], dtype=I64)
        y = torch.index_select(apply_view(x, view), dim, idx)
        fam.add(name, "index_select", [x, idx], [y], views=[view, None], params={"dim": dim})

    # embedding
    for name, V, D, ishape, view in [
        ("embedding_2x5", 11, 8, [2, 5], None),
        ("embedding_r1", 17, 3, [7], None),
        ("embedding_r3", 5, 16, [2, 2, 3], None),
        ("embedding_viewT", 9, 6, [4], "T"),
    ]:
        seed(name)
        table = torch.randn(*stored_shape([V, D], view))
        ids = torch.randint(0, V, ishape, dtype=I64)
        ids.view(-1)[0] = V - 1
        y = F.embedding(ids, apply_view(table, view))
        fam.add(name, "embedding", [table, ids], [y], views=[view, None])

    # where
    for name, cs, as_, bs, views in [
        ("where_bcast", [4, 1], [4, 6], [6], [None, None, None]),
        ("where_same", [3, 7], [3, 7], [3, 7], [None, None, None]),
        ("where_r3", [2, 1, 5], [3, 1], [2, 3, 5], [None, None, None]),
        ("where_viewT", [4, 5], [4, 5], [1, 5], ["T", "T", None]),
    ]:
        seed(name)
        cond = torch.rand(*stored_shape(cs, views[0])) < 0.5
        a = torch.randn(*stored_shape(as_, views[1]))
        b = torch.randn(*stored_shape(bs, views[2]))
        y = torch.where(apply_view(cond, views[0]), apply_view(a, views[1]), apply_view(b, views[2]))
        fam.add(name, "where", [cond, a, b], [y], views=views)

    # pad (constant)
    for name, shape, pads, value, view in [
        ("pad_r2", [3, 4], [[1, 2], [0, 3]], 0.0, None),
        ("pad_r3", [2, 3, 5], [[0, 0], [2, 1], [1, 0]], -1.5, None),
        ("pad_r1", [7], [[3, 2]], 2.0, None),
        ("pad_r4", [1, 2, 3, 2], [[1, 0], [0, 1], [0, 0], [2, 2]], 0.5, None),
        ("pad_none", [2, 3], [[0, 0], [0, 0]], 0.0, None),
        ("pad_viewT", [4, 3], [[1, 1], [2, 0]], 0.0, "T"),
    ]:
        seed(name)
        x = torch.randn(*stored_shape(shape, view))
        flat = []
        for before, after in reversed(pads):
            flat += [before, after]
        y = F.pad(apply_view(x, view), flat, mode="constant", value=value)
        fam.add(name, "pad", [x], [y], views=[view], params={"pads": pads, "value": value})

    # tril / triu
    for op, fn in [("tril", torch.tril), ("triu", torch.triu)]:
        for tag, shape, view in [("5x5", [5, 5], None), ("4x7", [4, 7], None),
                                 ("r3_6x3", [2, 6, 3], None), ("viewT_5x6", [5, 6], "T")]:
            for k in [-1, 0, 2]:
                name = f"{op}_{tag}_k{k:+d}"
                seed(name)
                x = torch.randn(*stored_shape(shape, view))
                y = fn(apply_view(x, view), k)
                fam.add(name, op, [x], [y], views=[view], params={"diagonal": k})
    return fam


# ----------------------------------------------------------------------------
# neural
# ----------------------------------------------------------------------------

def rope_golden(x, pos, mode, nd, base, fscale):
    xd = x.double()
    half = nd // 2
    i = torch.arange(half, dtype=F64)
    inv = torch.pow(torch.tensor(base, dtype=F64), -2.0 * i / nd)          # [nd/2]
    theta = pos.to(F64)[:, None] * fscale * inv[None, :]                   # [T, nd/2]
    cos = torch.cos(theta)[:, None, :]                                     # [T, 1, nd/2]
    sin = torch.sin(theta)[:, None, :]
    out = xd.clone()
    if mode == "normal":
        x0, x1 = xd[..., 0:nd:2], xd[..., 1:nd:2]
        out[..., 0:nd:2] = x0 * cos - x1 * sin
        out[..., 1:nd:2] = x0 * sin + x1 * cos
    elif mode == "neox":
        x0, x1 = xd[..., 0:half], xd[..., half:nd]
        out[..., 0:half] = x0 * cos - x1 * sin
        out[..., half:nd] = x0 * sin + x1 * cos
    else:
        raise ValueError(mode)
    return out.to(x.dtype)


def attention_golden(q, k, v, mask, causal, scale):
    q, k, v = q.double(), k.double(), v.double()
    B, Hq, Tq, D = q.shape
    Hkv, Tk = k.shape[1], k.shape[2]
    assert Hq % Hkv == 0
    rep = Hq // Hkv
    k = k.repeat_interleave(rep, dim=1)
    v = v.repeat_interleave(rep, dim=1)
    s = (q @ k.transpose(-1, -2)) * (1.0 / math.sqrt(D) if scale is None else scale)
    if mask is not None:
        s = s + mask.double()
    if causal:
        s = s.masked_fill(causal_mask(Tq, Tk), -INF)
    return (torch.softmax(s, -1) @ v).to(F32)


def gen_neural():
    fam = Family("neural")

    # rms_norm
    for name, shape, view in [("rms_norm_4x16", [4, 16], None), ("rms_norm_r3", [2, 3, 33], None),
                              ("rms_norm_r1", [65], None), ("rms_norm_viewT", [5, 7], "T"),
                              ("rms_norm_viewS2", [3, 9], "S2")]:
        seed(name)
        x = torch.randn(*stored_shape(shape, view)) * 3.0
        w = torch.randn(shape[-1]) * 0.5 + 1.0
        xd = apply_view(x, view).double()
        y = xd * torch.rsqrt((xd * xd).mean(-1, keepdim=True) + 1e-6) * w.double()
        fam.add(name, "rms_norm", [x, w], [y.to(F32)], views=[view, None], params={"eps": 1e-6})

    # layer_norm
    for name, shape, view in [("layer_norm_4x16", [4, 16], None),
                              ("layer_norm_r3", [2, 3, 33], None),
                              ("layer_norm_r1", [17], None),
                              ("layer_norm_viewT", [5, 7], "T")]:
        seed(name)
        x = torch.randn(*stored_shape(shape, view)) * 2.0 + 1.5
        w = torch.randn(shape[-1]) * 0.5 + 1.0
        b = torch.randn(shape[-1]) * 0.3
        y = F.layer_norm(apply_view(x, view).double(), [shape[-1]], w.double(), b.double(), 1e-5)
        fam.add(name, "layer_norm", [x, w, b], [y.to(F32)], views=[view, None, None],
                params={"eps": 1e-5})

    # rope
    for name, shape, pos, mode, nd, base, fscale, view in [
        ("rope_normal_r3", [4, 2, 8], [0, 1, 2, 3], "normal", 8, 10000.0, 1.0, None),
        ("rope_neox_r3", [4, 2, 8], [0, 1, 2, 3], "neox", 8, 10000.0, 1.0, None),
        ("rope_normal_pos", [4, 3, 16], [5, 6, 7, 100], "normal", 16, 10000.0, 1.0, None),
        ("rope_neox_pos", [4, 3, 16], [5, 6, 7, 100], "neox", 16, 10000.0, 1.0, None),
        ("rope_normal_partial_r4", [2, 5, 3, 12], [0, 3, 9, 10, 11], "normal", 6, 10000.0, 1.0, None),
        ("rope_neox_partial_r4", [2, 5, 3, 12], [0, 3, 9, 10, 11], "neox", 8, 10000.0, 1.0, None),
        ("rope_neox_scaled", [3, 2, 32], [17, 1000, 4095], "neox", 32, 500000.0, 0.25, None),
        ("rope_normal_scaled", [3, 2, 10], [2, 40, 77], "normal", 10, 1000.0, 0.5, None),
        ("rope_normal_viewT", [4, 3, 8], [0, 1, 2, 50], "normal", 8, 10000.0, 1.0, "T"),
        ("rope_neox_viewS2", [2, 3, 4, 8], [7, 8, 9], "neox", 4, 10000.0, 1.0, "S2"),
    ]:
        seed(name)
        x = torch.randn(*stored_shape(shape, view))
        p = torch.tensor(pos, dtype=I32)
        assert len(pos) == shape[-3]
        y = rope_golden(apply_view(x, view), p, mode, nd, base, fscale)
        fam.add(name, "rope", [x, p], [y], views=[view, None],
                params={"mode": mode, "n_dims": nd, "freq_base": base, "freq_scale": fscale})

    # attention
    for name, B, Hq, Hkv, Tq, Tk, D, Dv, causal, scale, mshape, kview in [
        ("attn_mha", 2, 3, 3, 5, 5, 8, 8, False, None, None, None),
        ("attn_gqa_4_2", 1, 4, 2, 6, 6, 16, 16, False, None, None, None),
        ("attn_mqa_6_1", 2, 6, 1, 4, 7, 8, 8, False, 0.3, None, None),
        ("attn_decode", 2, 4, 2, 1, 9, 16, 16, False, None, None, None),
        ("attn_decode_causal", 1, 2, 2, 1, 9, 8, 8, True, None, None, None),
        ("attn_causal_17", 1, 2, 1, 17, 17, 8, 8, True, None, None, None),
        ("attn_causal_q3k8", 2, 2, 2, 3, 8, 8, 8, True, None, None, None),
        ("attn_d_ne_dv", 1, 2, 2, 5, 6, 8, 12, False, None, None, None),
        ("attn_causal_d_ne_dv_gqa", 2, 4, 2, 4, 6, 6, 10, True, 0.5, None, None),
        ("attn_mask_qk", 1, 2, 2, 4, 6, 8, 8, False, None, [4, 6], None),
        ("attn_mask_causal", 2, 2, 1, 5, 7, 8, 8, True, None, [5, 7], None),
        ("attn_mask_b11k", 2, 4, 2, 3, 5, 8, 8, False, None, [2, 1, 1, 5], None),
        ("attn_viewT_k", 1, 2, 2, 4, 5, 8, 8, True, None, None, "T"),
    ]:
        seed(name)
        q = torch.randn(B, Hq, Tq, D)
        k = torch.randn(*stored_shape([B, Hkv, Tk, D], kview))
        v = torch.randn(B, Hkv, Tk, Dv)
        inputs, views = [q, k, v], [None, kview, None]
        mask = None
        if mshape is not None:
            mask = additive_mask(mshape)
            inputs.append(mask)
            views.append(None)
        y = attention_golden(q, apply_view(k, kview), v, mask, causal, scale)
        fam.add(name, "attention", inputs, [y], views=views,
                params={"causal": causal, "scale": scale})

    # cross_entropy
    for name, N, C, red, n_ignored, view in [
        ("ce_mean", 8, 10, "mean", 0, None),
        ("ce_sum", 8, 10, "sum", 0, None),
        ("ce_none", 6, 33, "none", 0, None),
        ("ce_mean_ignore", 9, 7, "mean", 3, None),
        ("ce_none_ignore", 5, 7, "none", 2, None),
        ("ce_sum_ignore_viewT", 6, 5, "sum", 1, "T"),
    ]:
        seed(name)
        logits = torch.randn(*stored_shape([N, C], view)) * 2.0
        target = torch.randint(0, C, [N], dtype=I64)
        if n_ignored:
            target[torch.randperm(N)[:n_ignored]] = -100
        y = F.cross_entropy(apply_view(logits, view).double(), target, ignore_index=-100,
                            reduction=red)
        fam.add(name, "cross_entropy", [logits, target], [y.to(F32)], views=[view, None],
                params={"ignore_index": -100, "reduction": red})

    # mse
    for name, shape, red, views in [
        ("mse_mean", [4, 6], "mean", [None, None]),
        ("mse_sum", [3, 17], "sum", [None, None]),
        ("mse_none", [2, 3, 5], "none", [None, None]),
        ("mse_mean_view", [5, 4], "mean", ["T", "S2"]),
    ]:
        seed(name)
        a = torch.randn(*stored_shape(shape, views[0]))
        b = torch.randn(*stored_shape(shape, views[1]))
        y = F.mse_loss(apply_view(a, views[0]).double(), apply_view(b, views[1]).double(),
                       reduction=red)
        fam.add(name, "mse", [a, b], [y.to(F32)], views=views, params={"reduction": red})

    # conv1d
    for name, B, Cin, T, Cout, K, s, p, d, g, causal, bias, view in [
        ("conv1d_k3", 2, 4, 17, 6, 3, 1, 0, 1, 1, False, False, None),
        ("conv1d_k3_pad1_bias", 2, 4, 17, 6, 3, 1, 1, 1, 1, False, True, None),
        ("conv1d_k1", 2, 5, 9, 3, 1, 1, 0, 1, 1, False, True, None),
        ("conv1d_dil2", 1, 3, 20, 4, 3, 1, 2, 2, 1, False, False, None),
        ("conv1d_dil4", 2, 2, 33, 3, 3, 1, 0, 4, 1, False, True, None),
        ("conv1d_groups2", 2, 4, 15, 6, 3, 1, 1, 1, 2, False, True, None),
        ("conv1d_stride2", 2, 3, 17, 4, 3, 2, 1, 1, 1, False, False, None),
        ("conv1d_stride2_k1", 1, 4, 10, 2, 1, 2, 0, 1, 1, False, False, None),
        ("conv1d_causal_k3", 2, 4, 16, 4, 3, 1, 0, 1, 1, True, False, None),
        ("conv1d_causal_dil2_bias", 2, 4, 16, 4, 3, 1, 0, 2, 1, True, True, None),
        ("conv1d_causal_dil4_g2", 1, 4, 21, 6, 3, 1, 0, 4, 2, True, True, None),
        ("conv1d_causal_k1", 2, 3, 7, 5, 1, 1, 0, 1, 1, True, False, None),
        ("conv1d_viewT", 2, 5, 8, 3, 3, 1, 1, 1, 1, False, True, "T"),
    ]:
        seed(name)
        x = torch.randn(*stored_shape([B, Cin, T], view))
        w = torch.randn(Cout, Cin // g, K) * (1.0 / math.sqrt(Cin // g * K))
        bb = torch.randn(Cout) * 0.2 if bias else None
        xv = apply_view(x, view).double()
        if causal:
            assert p == 0
            xv = F.pad(xv, ((K - 1) * d, 0))
        y = F.conv1d(xv, w.double(), None if bb is None else bb.double(), stride=s, padding=p,
                     dilation=d, groups=g)
        inputs = [x, w] + ([bb] if bias else [])
        fam.add(name, "conv1d", inputs, [y.to(F32)], views=[view] + [None] * (len(inputs) - 1),
                params={"stride": s, "padding": p, "dilation": d, "groups": g, "causal": causal})
    return fam


# ----------------------------------------------------------------------------
# self-check
# ----------------------------------------------------------------------------

VALID_VIEWS = {None, "T", "S2"}


def check_file(path, expected=None):
    """Validate one file with the reader above. Returns number of cases."""
    tensors, meta = read_safetensors(path)
    assert set(meta) == {"cases"}, f"{path}: metadata keys {sorted(meta)}"
    cases = json.loads(meta["cases"])
    seen_names, used = set(), set()
    for c in cases:
        assert set(c) == {"name", "op", "inputs", "views", "params", "outputs"}, c
        assert c["name"] not in seen_names, f"{path}: duplicate case {c['name']}"
        seen_names.add(c["name"])
        assert len(c["views"]) == len(c["inputs"]), c["name"]
        assert all(v in VALID_VIEWS for v in c["views"]), c["name"]
        assert isinstance(c["params"], dict) and c["outputs"], c["name"]
        for n in c["inputs"] + c["outputs"]:
            assert n in tensors, f"{path}: case {c['name']} references missing tensor {n}"
            used.add(n)
        for n, v in zip(c["inputs"], c["views"]):
            t = tensors[n]
            if v == "T":
                assert t.dim() >= 2, f"{path}: view T on rank<2 tensor {n}"
            if v == "S2":
                assert t.dim() >= 1, f"{path}: view S2 on rank-0 tensor {n}"
    orphans = set(tensors) - used
    assert not orphans, f"{path}: unreferenced tensors {sorted(orphans)[:5]}"
    if expected is not None:
        assert set(expected) == set(tensors), path
        for n, t in expected.items():
            r = tensors[n]
            assert r.dtype == t.dtype and list(r.shape) == list(t.shape), n
            assert tensor_bytes(r) == tensor_bytes(t), f"{path}: round-trip mismatch for {n}"
    return len(cases)


GENERATORS = [gen_unary, gen_binary, gen_cast, gen_reduce, gen_softmax, gen_matmul,
              gen_structure, gen_neural]
FILES = ["unary", "binary", "cast", "reduce", "softmax", "matmul", "structure", "neural"]
MAX_FILE_BYTES = 300 * 1024


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    here = os.path.dirname(os.path.abspath(__file__))
    ap.add_argument("--out", default=os.path.join(here, "..", "tests", "goldens"))
    ap.add_argument("--check", action="store_true", help="only validate existing files")
    args = ap.parse_args()
    out = os.path.normpath(args.out)

    torch.set_num_threads(1)  # deterministic reductions regardless of machine
    total = 0
    if args.check:
        for f in FILES:
            path = os.path.join(out, f"{f}.safetensors")
            n = check_file(path)
            size = os.path.getsize(path)
            total += size
            print(f"{f:10s} {n:4d} cases {size:8d} bytes  OK")
        print(f"total      {total:8d} bytes")
        return

    os.makedirs(out, exist_ok=True)
    for gen in GENERATORS:
        fam = gen()
        path = fam.write(out)
        n = check_file(path, expected=fam.tensors)
        size = os.path.getsize(path)
        assert size <= MAX_FILE_BYTES, f"{path} is {size} bytes"
        total += size
        ops = {}
        for c in fam.cases:
            ops[c["op"]] = ops.get(c["op"], 0) + 1
        print(f"{fam.fname:10s} {n:4d} cases {size:8d} bytes  "
              + " ".join(f"{k}={v}" for k, v in ops.items()))
    print(f"total      {total:8d} bytes")


if __name__ == "__main__":
    main()
