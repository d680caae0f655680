#!/usr/bin/env python3
"""tools/bpe_reference.py: byte-level BPE training in plain Python, the reference for
tempra's trainer (src/tempra/llm/tokenizer/bpe_trainer.h), written from the rule alone.

The rule: cut the special tokens' texts out of the text; split the rest into words with the
qwen2 pre-tokenizer's regex (Qwen2's tokenizer.json, through the `regex` module); count each
word's UTF-8 bytes. Start from the 256 byte tokens (id = byte). Repeat: count every adjacent pair
of symbols over all words (weighted by the word's count); take the most frequent, ties to the
smaller (left id, right id); stop if it is seen fewer than MIN_COUNT times; its bytes become a
new token unless a token already has them; replace it in every word, left to right, without
overlap. Stop at VOCAB_SIZE tokens with the specials.

Slow on purpose (every pair recounted after every merge): use it on small corpora.

Usage: bpe_reference.py VOCAB_SIZE MIN_COUNT FILE...  -> the merges, one "left right" per line,
in GGUF's byte-level alphabet;
       bpe_reference.py --check VOCAB.gguf VOCAB_SIZE MIN_COUNT FILE...  -> exit 0 when the vocab's
tokenizer.ggml.merges are these merges, else 1 naming the first that differs.
"""
import sys

import regex

QWEN2_SPLIT = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}"
               r"| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")
SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]


def bytes_to_unicode():
    """GPT-2's byte-level alphabet: printable bytes as themselves, the rest from U+0100 on."""
    printable = list(range(33, 127)) + list(range(161, 173)) + list(range(174, 256))
    out, extra = {}, 0
    for b in range(256):
        if b in printable:
            out[b] = chr(b)
        else:
            out[b] = chr(256 + extra)
            extra += 1
    return out


def count_words(texts):
    counts = {}
    cut = regex.compile("|".join(regex.escape(s) for s in sorted(SPECIALS, key=len, reverse=True)))
    split = regex.compile(QWEN2_SPLIT)
    for text in texts:
        for fragment in cut.split(text):
            for word in split.findall(fragment):
                b = word.encode("utf-8")
                counts[b] = counts.get(b, 0) + 1
    return counts


def train(counts, vocab_size, min_count):
    token_bytes = [bytes([b]) for b in range(256)]
    id_of = {t: i for i, t in enumerate(token_bytes)}
    words = [(list(w), c) for w, c in counts.items()]
    merges = []
    while len(token_bytes) < vocab_size - len(SPECIALS):
        pairs = {}
        for symbols, c in words:
            for a, b in zip(symbols, symbols[1:]):
                pairs[(a, b)] = pairs.get((a, b), 0) + c
        if not pairs:
            break
        best = min(pairs, key=lambda p: (-pairs[p], p))
        if pairs[best] < min_count:
            break
        merged_bytes = token_bytes[best[0]] + token_bytes[best[1]]
        if merged_bytes not in id_of:
            id_of[merged_bytes] = len(token_bytes)
            token_bytes.append(merged_bytes)
        new_id = id_of[merged_bytes]
        merges.append((token_bytes[best[0]], token_bytes[best[1]]))
        for symbols, _ in words:
            i, out = 0, []
            while i < len(symbols):
                if i + 1 < len(symbols) and (symbols[i], symbols[i + 1]) == best:
                    out.append(new_id)
                    i += 2
                else:
                    out.append(symbols[i])
                    i += 1
            symbols[:] = out
    return merges


def main(argv):
    check = len(argv) > 1 and argv[1] == "--check"
    if check:
        gguf, argv = argv[2], argv[2:]
    if len(argv) < 4:
        sys.exit(__doc__)
    vocab_size, min_count = int(argv[1]), int(argv[2])
    texts = [open(path, encoding="utf-8", newline="").read() for path in argv[3:]]
    alphabet = bytes_to_unicode()
    merges = ["".join(alphabet[b] for b in left) + " " + "".join(alphabet[b] for b in right)
              for left, right in train(count_words(texts), vocab_size, min_count)]
    if not check:
        sys.stdout.write("".join(m + "\n" for m in merges))
        return
    from qwen3_reference import GgufFile  # the same folder's GGUF reader
    theirs = GgufFile(gguf).metadata["tokenizer.ggml.merges"]
    for i, (a, b) in enumerate(zip(merges, theirs)):
        if a != b:
            sys.exit(f"merge {i} differs: reference {a!r}, {gguf} {b!r}")
    if len(merges) != len(theirs):
        sys.exit(f"the reference learned {len(merges)} merges, {gguf} holds {len(theirs)}")
    print(f"{gguf}: its {len(theirs)} merges are the reference's")


if __name__ == "__main__":
    main(sys.argv)
