#!/usr/bin/env python3
"""scripts/nanochat/sft_data.py: the chat fine-tuning set of nanochat's stage 3, generated.

Conversations in the {"messages": [...]} JSON Lines format `tempra train` reads (the loss counts
the assistant's tokens only), from templates and from the training text itself:
  - greetings and questions about the model, answered by a few fixed replies;
  - arithmetic: sums, differences and small products, answered "a + b = c.";
  - the text: "Continue this sentence: <first half>" answered by the rest of a sentence drawn
    from the corpus, and "Repeat after me: <sentence>" answered by the sentence.
Deterministic for a seed (Python's random.Random), so the pipeline is reproducible.

Usage: sft_data.py --corpus TRAIN.txt [--corpus ...] --out SFT.jsonl [--n 20000] [--seed 0]
"""
import argparse
import os
import json
import random
import re
import sys

GREETINGS = ["Hello!", "Hi", "Hi there!", "Good morning.", "Good evening!", "Hey, how are you?", "Hello, who are you?"]
GREETING_REPLIES = ["Hello! How can I help you today?", "Hi! What would you like to talk about?",
                    "Hello! I am a small language model. Ask me something."]
ABOUT = ["Who are you?", "What are you?", "Who made you?", "How were you trained?"]
ABOUT_REPLY = ("I am a small chat model trained from scratch with tempra on two CPU cores, from the Python "
               "documentation, the Debian reference and the Brown corpus.")
THANKS = ["Thank you!", "Thanks.", "Thanks a lot!"]
THANKS_REPLIES = ["You are welcome!", "Glad to help."]


def sentences(paths, rng, limit=200000):
    """Prose sentences of 6 to 30 words from the corpus (code and markup left out)."""
    out = []
    for path in paths:
        text = open(path, encoding="utf-8").read().replace("<|endoftext|>", "\n\n")
        for paragraph in text.split("\n\n"):
            if paragraph.startswith((" ", "\t")) or ">>>" in paragraph:
                continue
            flat = " ".join(paragraph.split())
            for s in re.split(r"(?<=[.!?])\s+(?=[A-Z])", flat):
                words = s.split()
                if 6 <= len(words) <= 30 and s[-1] in ".!?" and re.fullmatch(r"[A-Za-z0-9 ,;:'\"()\-.!?]+", s):
                    out.append(s)
    rng.shuffle(out)
    return out[:limit]


def arithmetic(rng):
    op = rng.choice("+-*")
    if op == "*":
        a, b = rng.randint(0, 12), rng.randint(0, 12)
        c, sign = a * b, "*"
    else:
        a, b = rng.randint(0, 99), rng.randint(0, 99)
        c, sign = (a + b, "+") if op == "+" else (a - b, "-")
    q = rng.choice(["What is {a} {s} {b}?", "Compute {a} {s} {b}.", "{a} {s} {b} = ?"]).format(a=a, s=sign, b=b)
    return q, f"{a} {sign} {b} = {c}."


def conversation(rng, text):
    kind = rng.random()
    if kind < 0.10:
        return [("user", rng.choice(GREETINGS)), ("assistant", rng.choice(GREETING_REPLIES))]
    if kind < 0.15:
        return [("user", rng.choice(ABOUT)), ("assistant", ABOUT_REPLY)]
    if kind < 0.45:
        q, a = arithmetic(rng)
        turns = [("user", q), ("assistant", a)]
        if rng.random() < 0.2:
            turns += [("user", rng.choice(THANKS)), ("assistant", rng.choice(THANKS_REPLIES))]
        return turns
    s = rng.choice(text)
    if kind < 0.80:
        words = s.split()
        cut = len(words) // 2
        return [("user", "Continue this sentence: " + " ".join(words[:cut])), ("assistant", " ".join(words[cut:]))]
    return [("user", "Repeat after me: " + s), ("assistant", s)]


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--corpus", action="append", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--n", type=int, default=20000)
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args()
    rng = random.Random(args.seed)
    text = sentences(args.corpus, rng)
    if not text:
        sys.exit("sft_data.py: no prose sentences in " + ", ".join(args.corpus))
    with open(args.out + ".tmp", "w", encoding="utf-8") as f:
        for _ in range(args.n):
            messages = [{"role": r, "content": c} for r, c in conversation(rng, text)]
            f.write(json.dumps({"messages": messages}, ensure_ascii=False) + "\n")

    os.replace(args.out + ".tmp", args.out)
    print(f"{args.out}: {args.n} conversations ({len(text)} corpus sentences to draw from)")


if __name__ == "__main__":
    main()
