#!/usr/bin/env python3
"""scripts/nanochat/report.py: nanochat's one-page report, from what scripts/nanochat.sh left in DIR.

Writes DIR/loss.png (pretraining and chat fine-tuning loss per step, validation bits per byte)
and DIR/report.md: the configuration, the bits-per-byte table against two baselines on the same
validation text (a unigram model of the training tokens with add-one smoothing, and gzip -9's
compressed size), throughput, and the sample chats as the model wrote them.

Bits per byte here are over the validation text without its document separators; the model's
figure is `tempra train`'s (the summed cross entropy of every non-special target over the bytes
those targets stand for).
"""
import argparse
import csv
import math
import os
import re
import subprocess
import sys
from collections import Counter

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

SEPARATOR = "<|endoftext|>"


def read_log(path):
    rows = []
    if not os.path.exists(path):
        return rows
    with open(path, newline="") as f:
        for r in csv.DictReader(f):
            rows.append({k: (float(v) if v not in ("", None) else None) for k, v in r.items()})
    return rows


def token_ids(tempra, model, text):
    r = subprocess.run([tempra, "tokenize", "-m", model, "--stdin", "--no-parse-special"], input=text.encode("utf-8"),
                       capture_output=True, check=True)
    return [int(x) for x in re.findall(r"-?\d+", r.stdout.decode())]


def unigram_bpb(tempra, model, n_vocab, train_text, val_text):
    counts = Counter(token_ids(tempra, model, train_text))
    val = token_ids(tempra, model, val_text)
    total = sum(counts.values())
    bits = -sum(math.log2((counts[t] + 1) / (total + n_vocab)) for t in val)
    return bits / len(val_text.encode("utf-8")), len(val)


def gzip_bpb(text):
    raw = text.encode("utf-8")
    packed = subprocess.run(["gzip", "-9", "-c"], input=raw, capture_output=True, check=True).stdout
    return 8.0 * len(packed) / len(raw)


def last_bpb(rows):
    values = [r["val_bpb"] for r in rows if r.get("val_bpb") is not None]
    return values[-1] if values else float("nan")


def throughput(rows, tokens_per_step):
    if not rows:
        return float("nan"), 0.0
    seconds = rows[-1]["seconds"]
    return len(rows) * tokens_per_step / seconds if seconds > 0 else float("nan"), seconds


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--dir", required=True)
    p.add_argument("--tempra", required=True)
    p.add_argument("--preset", default="full")
    p.add_argument("--vocab", type=int, required=True, help="the vocab's size, for the unigram's smoothing")
    a = p.parse_args()
    d = a.dir
    base, chat = read_log(f"{d}/base.csv"), read_log(f"{d}/chat.csv")
    if not base:
        sys.exit(f"report.py: {d}/base.csv is missing or empty")

    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4))
    left.plot([r["step"] for r in base], [r["loss"] for r in base], lw=0.8, label="pretraining loss")
    if chat:
        offset = base[-1]["step"]
        left.plot([offset + r["step"] for r in chat], [r["loss"] for r in chat], lw=0.8, label="chat fine-tuning loss")
    left.set_xlabel("step")
    left.set_ylabel("cross entropy (nats)")
    left.legend()
    left.grid(alpha=0.3)
    points = [(r["step"], r["val_bpb"]) for r in base if r.get("val_bpb") is not None]
    right.plot([s for s, _ in points], [b for _, b in points], "o-", label="validation bits per byte")
    right.set_xlabel("pretraining step")
    right.set_ylabel("bits per byte")
    right.grid(alpha=0.3)
    right.legend()
    fig.tight_layout()
    fig.savefig(f"{d}/loss.png.tmp.png", dpi=110)
    os.replace(f"{d}/loss.png.tmp.png", f"{d}/loss.png")

    train_text = "".join(open(f"{d}/data/{f}", encoding="utf-8").read() for f in sorted(os.listdir(f"{d}/data"))
                         if f.startswith("train_")).replace(SEPARATOR, "\n")
    val_text = open(f"{d}/data/val_000.txt", encoding="utf-8").read().replace(SEPARATOR, "\n")
    uni, val_tokens = unigram_bpb(a.tempra, f"{d}/tokenizer.gguf", a.vocab, train_text, val_text)
    gz = gzip_bpb(val_text)
    model_bpb, chat_bpb = last_bpb(base), last_bpb(chat)
    first_line = open(f"{d}/base.txt").readline().strip() if os.path.exists(f"{d}/base.txt") else ""
    shape = re.search(r"of (\d+) x (\d+) tokens", first_line)
    tokens_per_step = int(shape.group(1)) * int(shape.group(2)) if shape else 0
    base_tps, base_s = throughput(base, tokens_per_step)
    chat_tps, chat_s = throughput(chat, tokens_per_step)
    cpu = subprocess.run(["sh", "-c", "lscpu | sed -n 's/^Model name: *//p'"], capture_output=True, text=True).stdout.strip()

    def read(name):
        path = f"{d}/{name}"
        return open(path, encoding="utf-8").read().strip() if os.path.exists(path) else "(missing)"

    lines = [
        f"# nanochat in tempra: report ({a.preset} preset)",
        "",
        f"Machine: {cpu}, {os.cpu_count()} CPUs. Produced by `scripts/nanochat.sh`; every figure below is",
        "from this run's own logs.",
        "",
        "## Data and tokenizer",
        "```",
        read("data.txt"),
        read("tokenizer.txt"),
        "```",
        "",
        "## Model and training",
        "```",
        first_line,
        "```",
        f"Pretraining: {len(base)} steps in {base_s / 60:.1f} min, {base_tps:.0f} tokens/s.",
        f"Chat fine-tuning: {len(chat)} steps in {chat_s / 60:.1f} min, {chat_tps:.0f} tokens/s." if chat else "",
        "",
        "![loss curves](loss.png)",
        "",
        "## Bits per byte on the validation text",
        f"({len(val_text.encode('utf-8'))} bytes, {val_tokens} tokens)",
        "",
        "| model | bits per byte |",
        "| --- | --- |",
        f"| unigram over the training tokens (add-one smoothing) | {uni:.4f} |",
        f"| gzip -9 | {gz:.4f} |",
        f"| the base model (after pretraining) | {model_bpb:.4f} |",
        f"| the chat model (after fine-tuning) | {chat_bpb:.4f} |" if chat else "",
        "",
        ("The model beats gzip." if model_bpb < gz else "The model does NOT beat gzip."),
        "",
        "## Sample chats (greedy, unedited)",
        "",
        read("samples.txt"),
        "",
    ]
    with open(f"{d}/report.md.tmp", "w", encoding="utf-8") as f:
        f.write("\n".join(lines))
    os.replace(f"{d}/report.md.tmp", f"{d}/report.md")
    print(f"{d}/report.md: base {model_bpb:.4f} bits per byte, gzip -9 {gz:.4f}, unigram {uni:.4f}")


if __name__ == "__main__":
    main()
