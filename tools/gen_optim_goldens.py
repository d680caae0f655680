#!/usr/bin/python3
"""Golden files for tempra's optimizers (tests/optim), from torch and reference implementations.

    /usr/bin/python3 tools/gen_optim_goldens.py [--out tests/goldens]

Needs Debian's python3 with python3-torch (1.13.x) and python3-numpy; the python3 on PATH may
have neither. Writes five safetensors files (format and reader: tools/gen_goldens.py,
tests/support/golden.h), deterministic, so a rerun is byte-identical:

  optim_sgd        torch.optim.SGD (foreach=False: torch's own single-tensor code)
  optim_adamw      torch.optim.AdamW (foreach=False)
  optim_muon       Muon: muon_reference() below, written from Keller Jordan's muon.py
  optim_apollo     APOLLO: apollo_reference() below, written from the official APOLLO code
  optim_misc       torch.nn.utils.clip_grad_norm_, and the warmup-cosine lr schedule

Every optimizer case runs >= 10 steps on several seeded params with a fixed, seeded sequence of
gradients (independent of the params), and stores the params after every step. Cases come in
f64 (the strict comparison) and f32 (torch's f32 arithmetic; Muon and APOLLO in f32 run the
same reference code in float32).

Case schema (golden.h): op = "sgd" | "adamw" | "muon" | "apollo" | "clip" | "schedule";
inputs = the initial params "<case>.p<i>"; outputs = the params after the last step. Per step
k = 1..steps: "<case>.p<i>.grad<k>" (absent when param i has no gradient at step k: it is
skipped, as torch skips p.grad = None) and "<case>.p<i>.step<k>". params holds "dtype", "steps",
"names", "groups" (each: "params" (indices), "lr", "weight_decay", the optimizer's options) and
optionally "schedule" {"warmup", "total", "min_lr_ratio"}: before step k (index k - 1) every
group's lr is initial_lr * factor(k - 1).
"""

import argparse
import math
import os
import sys
import zlib

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from counter_rng import bits as rng_bits, normal as rng_normal  # noqa: E402  tempra's counter RNG, for APOLLO's projection
from gen_goldens import read_safetensors, tensor_bytes, write_safetensors  # noqa: E402

import json  # noqa: E402

F32, F64 = torch.float32, torch.float64
MAX_FILE_BYTES = 200 * 1024


def seeded(name):
    torch.manual_seed(zlib.crc32(name.encode()))


# ----------------------------------------------------------------------------
# The lr schedule (tempra/optim/schedule.h: linear warmup, then a half cosine to min_lr_ratio)
# ----------------------------------------------------------------------------

def schedule_factor(step, warmup, total, min_lr_ratio):
    if step < warmup:
        return (step + 1) / warmup
    if step >= total:
        return min_lr_ratio
    progress = (step - warmup) / (total - warmup)
    return min_lr_ratio + (1 - min_lr_ratio) * (1 + math.cos(math.pi * progress)) / 2



# ----------------------------------------------------------------------------
# Muon: written from Keller Jordan's reference (github.com/KellerJordan/Muon, muon.py:
# zeropower_via_newtonschulz5, muon_update, MuonWithAuxAdam). One change: the iteration runs in
# the params' dtype (float64 or float32), not bfloat16, so the golden is exact enough to test.
# ----------------------------------------------------------------------------

def zeropower_via_newtonschulz5(G, steps):
    assert G.ndim == 2
    a, b, c = (3.4445, -4.7750, 2.0315)
    X = G.clone()
    if G.size(-2) > G.size(-1):
        X = X.mT
    X = X / (X.norm(dim=(-2, -1), keepdim=True) + 1e-7)  # spectral norm at most 1
    for _ in range(steps):
        A = X @ X.mT
        B = b * A + c * A @ A
        X = a * X + B @ X
    if G.size(-2) > G.size(-1):
        X = X.mT
    return X


def muon_update(grad, momentum, beta, ns_steps, nesterov):
    grad = grad.clone()  # the reference overwrites p.grad; the golden keeps the gradients
    momentum.lerp_(grad, 1 - beta)
    update = grad.lerp_(momentum, beta) if nesterov else momentum
    update = zeropower_via_newtonschulz5(update, steps=ns_steps)
    update *= max(1, grad.size(-2) / grad.size(-1)) ** 0.5
    return update


def adam_update(grad, buf1, buf2, step, betas, eps):
    buf1.lerp_(grad, 1 - betas[0])
    buf2.lerp_(grad.square(), 1 - betas[1])
    buf1c = buf1 / (1 - betas[0] ** step)
    buf2c = buf2 / (1 - betas[1] ** step)
    return buf1c / (buf2c.sqrt() + eps)


class MuonReference:
    """MuonWithAuxAdam.step for one process (no distributed gather)."""

    def __init__(self, params, groups):
        self.params, self.groups, self.state = params, groups, {}

    def step(self, grads):
        for g in self.groups:
            for i in g["params"]:
                if grads[i] is None:
                    continue
                p, st = self.params[i], self.state.setdefault(i, {})
                if g["use_muon"]:
                    if not st:
                        st["momentum_buffer"] = torch.zeros_like(p)
                    update = muon_update(grads[i], st["momentum_buffer"], g["momentum"], g["ns_steps"],
                                         g["nesterov"])
                else:
                    if not st:
                        st.update(exp_avg=torch.zeros_like(p), exp_avg_sq=torch.zeros_like(p), step=0)
                    st["step"] += 1
                    update = adam_update(grads[i], st["exp_avg"], st["exp_avg_sq"], st["step"],
                                         (g["beta1"], g["beta2"]), g["eps"])
                p.mul_(1 - g["lr"] * g["weight_decay"])
                p.add_(update, alpha=-g["lr"])


# ----------------------------------------------------------------------------
# APOLLO: written from the official implementation (github.com/zhuhanqing/APOLLO,
# apollo_torch/apollo.py AdamW.step with scale_front=False and the norm-growth limiter on;
# apollo_torch/random_projector.py GradientProjector, proj_type "std"), for Zhu et al. 2024,
# "APOLLO: SGD-like Memory, AdamW-level Performance" (arXiv 2412.05270). One change: the
# projection's N(0, 1) entries come from tempra's counter RNG keyed by (seed, param index,
# refresh period) instead of torch.Generator(seed) advanced by next_seed, so both sides draw
# the same matrix.
# ----------------------------------------------------------------------------

def apollo_projection(shape, rank, seed, index, period, dtype):
    m, n = shape
    stream = rng_bits(rng_bits(seed, index), period)
    pshape = (rank, n) if m >= n else (m, rank)
    count = pshape[0] * pshape[1]
    values = torch.tensor([rng_normal(stream, e) for e in range(count)], dtype=F32).reshape(pshape)
    return values.to(dtype) / math.sqrt(rank)


class ApolloReference:
    def __init__(self, params, groups):
        self.params, self.groups, self.state = params, groups, {}

    def step(self, grads):
        for g in self.groups:
            for i in g["params"]:
                if grads[i] is None:
                    continue
                p, full_grad = self.params[i], grads[i]
                st = self.state.setdefault(i, {"step": 0})
                grad = full_grad
                if g["rank"] > 0:
                    # Step 1: project; a fresh random matrix every update_proj_gap updates.
                    period = st["step"] // g["update_proj_gap"]
                    P = apollo_projection(tuple(p.shape), g["rank"], g["seed"], i, period, p.dtype)
                    grad = full_grad @ P.t() if p.shape[0] >= p.shape[1] else P.t() @ full_grad
                if "exp_avg" not in st:
                    st["exp_avg"] = torch.zeros_like(grad)
                    st["exp_avg_sq"] = torch.zeros_like(grad)
                exp_avg, exp_avg_sq = st["exp_avg"], st["exp_avg_sq"]
                beta1, beta2 = g["beta1"], g["beta2"]
                st["step"] += 1
                # Step 2: Adam moments in the projected space.
                exp_avg.mul_(beta1).add_(grad, alpha=1.0 - beta1)
                exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1.0 - beta2)
                denom = exp_avg_sq.sqrt().add_(g["eps"])
                step_size = g["lr"]
                if g["correct_bias"]:
                    bias_correction1 = 1.0 - beta1 ** st["step"]
                    bias_correction2 = 1.0 - beta2 ** st["step"]
                    step_size = step_size * math.sqrt(bias_correction2) / bias_correction1
                norm_grad = exp_avg / denom
                if g["rank"] > 0:
                    # Step 3: the scaling factor, channel-wise or tensor-wise.
                    if g["scale_type"] == "channel":
                        norm_dim = 0 if norm_grad.shape[0] < norm_grad.shape[1] else 1
                        factor = torch.norm(norm_grad, dim=norm_dim) / (torch.norm(grad, dim=norm_dim) + 1e-8)
                        if norm_dim == 1:
                            factor = factor.unsqueeze(1)
                    else:
                        factor = torch.norm(norm_grad) / (torch.norm(grad) + 1e-8)
                    # Step 4: scale the raw gradient; Fira's norm-growth limiter.
                    scaled_grad = full_grad * factor
                    if "scaled_grad" in st:
                        scaled_grad_norm = torch.norm(scaled_grad)
                        limiter = max(scaled_grad_norm / (st["scaled_grad"] + 1e-8), 1.01) / 1.01
                        scaled_grad = scaled_grad / limiter
                        st["scaled_grad"] = scaled_grad_norm / limiter
                    else:
                        st["scaled_grad"] = torch.norm(scaled_grad)
                    norm_grad = scaled_grad * np.sqrt(g["scale"])
                p.add_(norm_grad, alpha=-step_size)
                if g["weight_decay"] > 0.0:
                    p.add_(p, alpha=(-g["lr"] * g["weight_decay"]))


# ----------------------------------------------------------------------------
# Families
# ----------------------------------------------------------------------------

class Family:
    def __init__(self, fname):
        self.fname, self.tensors, self.cases = fname, {}, []

    def add(self, name, t):
        assert name not in self.tensors, name
        self.tensors[name] = t.detach().clone().contiguous()
        return name

    def write(self, out):
        path = os.path.join(out, f"{self.fname}.safetensors")
        write_safetensors(path, self.tensors, {"cases": json.dumps(self.cases, separators=(",", ":"))})
        return path


SHAPES_BASIC = [(4, 3), (5,), (3, 6), (2, 3, 2)]


def run_case(fam, name, op, dtype, shapes, groups, make_optimizer, steps=12, skip=(), schedule=None):
    """Seeded params and gradients; runs make_optimizer(params, groups).step(grads) per step."""
    seeded(name)
    params = [torch.randn(s, dtype=F64).to(dtype) for s in shapes]
    names = [f"w{i}" for i in range(len(shapes))]
    inputs = [fam.add(f"{name}.p{i}", p) for i, p in enumerate(params)]
    grad_seq = [[torch.randn(s, dtype=F64).to(dtype) for s in shapes] for _ in range(steps)]
    opt = make_optimizer(params, groups)
    initial = [g["lr"] for g in groups]
    for k in range(1, steps + 1):
        if schedule is not None:
            f = schedule_factor(k - 1, schedule["warmup"], schedule["total"], schedule["min_lr_ratio"])
            set_lrs(opt, [lr * f for lr in initial])
        grads = [None if (i, k) in skip else grad_seq[k - 1][i] for i in range(len(shapes))]
        for i, gr in enumerate(grads):
            if gr is not None:
                fam.add(f"{name}.p{i}.grad{k}", gr)
        opt.step(grads)
        for i, p in enumerate(params):
            fam.add(f"{name}.p{i}.step{k}", p)
    fam.cases.append({
        "name": name, "op": op, "inputs": inputs, "views": [None] * len(inputs),
        "params": {"dtype": "f64" if dtype == F64 else "f32", "steps": steps, "names": names, "groups": groups,
                   **({"schedule": schedule} if schedule else {})},
        "outputs": [f"{name}.p{i}.step{steps}" for i in range(len(shapes))],
    })


def set_lrs(opt, lrs):
    groups = opt.param_groups if hasattr(opt, "param_groups") else opt.groups
    for g, lr in zip(groups, lrs):
        g["lr"] = lr


class TorchOptimizer:
    """Adapts a torch.optim optimizer to step(grads): sets p.grad (None skips) and steps."""

    def __init__(self, cls, params, groups, **fixed):
        self.params = [p.requires_grad_() for p in params]
        torch_groups = []
        for g in groups:
            opts = {k: v for k, v in g.items() if k != "params"}
            if "beta1" in opts:
                opts["betas"] = (opts.pop("beta1"), opts.pop("beta2"))
            torch_groups.append({"params": [self.params[i] for i in g["params"]], **opts})
        self.opt = cls(torch_groups, **fixed)
        self.param_groups = self.opt.param_groups

    def step(self, grads):
        for p, g in zip(self.params, grads):
            p.grad = None if g is None else g.clone()
        self.opt.step()


ALL4 = [0, 1, 2, 3]


def gen_sgd():
    fam = Family("optim_sgd")
    sgd = lambda params, groups: TorchOptimizer(torch.optim.SGD, params, groups, foreach=False)  # noqa: E731
    all4 = ALL4
    for dtype, tag in ((F64, "f64"), (F32, "f32")):
        def sgd_group(params, lr, wd=0.0, momentum=0.0, dampening=0.0, nesterov=False):
            return {"params": params, "lr": lr, "weight_decay": wd, "momentum": momentum,
                    "dampening": dampening, "nesterov": nesterov}

        run_case(fam, f"sgd_plain_{tag}", "sgd", dtype, SHAPES_BASIC, [sgd_group(all4, 0.1)], sgd)
        run_case(fam, f"sgd_momentum_dampening_wd_{tag}", "sgd", dtype, SHAPES_BASIC,
                 [sgd_group(all4, 0.05, wd=0.01, momentum=0.9, dampening=0.1)], sgd, skip={(1, 3), (1, 4)})
        run_case(fam, f"sgd_nesterov_wd_{tag}", "sgd", dtype, SHAPES_BASIC,
                 [sgd_group(all4, 0.05, wd=0.02, momentum=0.8, nesterov=True)], sgd)
        run_case(fam, f"sgd_groups_{tag}", "sgd", dtype, SHAPES_BASIC,
                 [sgd_group([0, 2], 0.03, momentum=0.9, nesterov=True), sgd_group([1, 3], 0.2, wd=0.1)], sgd)
    return fam


def gen_adamw():
    fam = Family("optim_adamw")
    adamw = lambda params, groups: TorchOptimizer(torch.optim.AdamW, params, groups, foreach=False)  # noqa: E731
    all4 = ALL4
    for dtype, tag in ((F64, "f64"), (F32, "f32")):

        def adamw_group(params, lr, wd=0.01, beta1=0.9, beta2=0.999, eps=1e-8, amsgrad=False):
            return {"params": params, "lr": lr, "weight_decay": wd, "beta1": beta1, "beta2": beta2,
                    "eps": eps, "amsgrad": amsgrad}

        run_case(fam, f"adamw_default_{tag}", "adamw", dtype, SHAPES_BASIC, [adamw_group(all4, 1e-2)], adamw,
                 skip={(2, 5)})
        run_case(fam, f"adamw_amsgrad_{tag}", "adamw", dtype, SHAPES_BASIC,
                 [adamw_group(all4, 3e-2, wd=0.1, beta1=0.8, beta2=0.95, eps=1e-6, amsgrad=True)], adamw)
        run_case(fam, f"adamw_groups_schedule_{tag}", "adamw", dtype, SHAPES_BASIC,
                 [adamw_group([0, 1], 2e-2, wd=0.0), adamw_group([2, 3], 5e-3, wd=0.05, beta2=0.99)], adamw,
                 schedule={"warmup": 3, "total": 10, "min_lr_ratio": 0.1})
    return fam


def gen_muon():
    fam = Family("optim_muon")
    shapes = [(6, 4), (3, 5), (4, 4), (5,), (2, 3, 2)]

    def muon_group(params, lr=0.02, wd=0.0, momentum=0.95, nesterov=True):
        return {"params": params, "lr": lr, "weight_decay": wd, "use_muon": True, "momentum": momentum,
                "nesterov": nesterov, "ns_steps": 5, "beta1": 0.9, "beta2": 0.95, "eps": 1e-10}

    def adam_group(params, lr=3e-3, wd=0.0):
        return {"params": params, "lr": lr, "weight_decay": wd, "use_muon": False, "momentum": 0.95,
                "nesterov": True, "ns_steps": 5, "beta1": 0.9, "beta2": 0.95, "eps": 1e-10}

    for dtype, tag in ((F64, "f64"), (F32, "f32")):
        run_case(fam, f"muon_nesterov_{tag}", "muon", dtype, shapes,
                 [muon_group([0, 1, 2]), adam_group([3, 4])], MuonReference)
        run_case(fam, f"muon_plain_momentum_wd_{tag}", "muon", dtype, shapes,
                 [muon_group([0, 1, 2], lr=0.05, wd=0.1, momentum=0.9, nesterov=False), adam_group([3, 4], wd=0.01)],
                 MuonReference, skip={(1, 4)})
    return fam


def gen_apollo():
    fam = Family("optim_apollo")
    shapes = [(8, 5), (4, 7), (5, 5), (6,)]

    def apollo_group(params, rank, scale_type="channel", scale=1.0, lr=1e-2, wd=0.0, gap=4, seed=7):
        return {"params": params, "lr": lr, "weight_decay": wd, "rank": rank, "update_proj_gap": gap,
                "scale": scale, "scale_type": scale_type, "beta1": 0.9, "beta2": 0.999, "eps": 1e-6,
                "correct_bias": True, "seed": seed}

    for dtype, tag in ((F64, "f64"), (F32, "f32")):
        run_case(fam, f"apollo_channel_{tag}", "apollo", dtype, shapes,
                 [apollo_group([0, 1, 2], rank=2), apollo_group([3], rank=0)], ApolloReference, skip={(1, 6)})
        run_case(fam, f"apollo_mini_wd_{tag}", "apollo", dtype, shapes,
                 [apollo_group([0, 1, 2], rank=1, scale_type="tensor", scale=128, lr=2e-3, wd=0.1, gap=3, seed=11),
                  apollo_group([3], rank=0, wd=0.1)], ApolloReference)
    return fam


def gen_misc():
    fam = Family("optim_misc")
    shapes = [(4, 3), (7,), (2, 2, 3)]
    for dtype, tag in ((F64, "f64"), (F32, "f32")):
        for norm_type, max_norm in ((2.0, 1.0), (2.0, 100.0), (math.inf, 0.5), (1.0, 2.0), (3.0, 0.7)):
            name = f"clip_p{norm_type}_max{max_norm}_{tag}".replace(".", "_")
            seeded(name)
            grads = [torch.randn(s, dtype=F64).to(dtype) for s in shapes]
            inputs = [fam.add(f"{name}.in{i}", g) for i, g in enumerate(grads)]
            params = [torch.zeros(s, dtype=dtype, requires_grad=True) for s in shapes]
            for p, g in zip(params, grads):
                p.grad = g.clone()
            total = torch.nn.utils.clip_grad_norm_(params, max_norm, norm_type=norm_type)
            outputs = [fam.add(f"{name}.out{i}", p.grad) for i, p in enumerate(params)]
            outputs.append(fam.add(f"{name}.total", total.reshape(1)))
            fam.cases.append({"name": name, "op": "clip", "inputs": inputs, "views": [None] * len(inputs),
                              "params": {"norm_type": "inf" if math.isinf(norm_type) else norm_type,
                                         "max_norm": max_norm, "dtype": tag},
                              "outputs": outputs})
    for warmup, total, ratio in ((0, 10, 0.0), (3, 10, 0.1), (5, 5, 0.2), (4, 20, 0.05)):
        name = f"schedule_w{warmup}_t{total}_r{ratio}".replace(".", "_")
        factors = torch.tensor([schedule_factor(s, warmup, total, ratio) for s in range(total + 3)], dtype=F64)
        fam.cases.append({"name": name, "op": "schedule", "inputs": [], "views": [],
                          "params": {"warmup": warmup, "total": total, "min_lr_ratio": ratio},
                          "outputs": [fam.add(f"{name}.out", factors)]})
    return fam


GENERATORS = [gen_sgd, gen_adamw, gen_muon, gen_apollo, gen_misc]


def check_file(path, expected):
    """Reads the file back: every tensor round-trips and every case names tensors it has."""
    tensors, meta = read_safetensors(path)
    assert set(meta) == {"cases"}, f"{path}: metadata keys {sorted(meta)}"
    cases = json.loads(meta["cases"])
    assert len({c["name"] for c in cases}) == len(cases), f"{path}: duplicate case names"
    for c in cases:
        assert set(c) == {"name", "op", "inputs", "views", "params", "outputs"}, c
        assert len(c["views"]) == len(c["inputs"]) and c["outputs"], c["name"]
        for n in c["inputs"] + c["outputs"]:
            assert n in tensors, f"{path}: case {c['name']} references missing tensor {n}"
    assert set(expected) == set(tensors), path
    for n, t in expected.items():
        assert tensor_bytes(tensors[n]) == tensor_bytes(t), f"{path}: round-trip mismatch for {n}"
    return len(cases)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    here = os.path.dirname(os.path.abspath(__file__))
    ap.add_argument("--out", default=os.path.join(here, "..", "tests", "goldens"))
    args = ap.parse_args()
    out = os.path.normpath(args.out)
    torch.set_num_threads(1)  # deterministic reductions regardless of machine
    os.makedirs(out, exist_ok=True)
    for gen in GENERATORS:
        fam = gen()
        path = fam.write(out)
        n = check_file(path, expected=fam.tensors)
        size = os.path.getsize(path)
        assert size <= MAX_FILE_BYTES, f"{path} is {size} bytes"
        print(f"{fam.fname:16s} {n:4d} cases {size:8d} bytes")


if __name__ == "__main__":
    main()
