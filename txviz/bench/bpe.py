"""Recording BPE trainer vs the `tokenizers` BpeTrainer: same corpus, same merges, one run."""

from __future__ import annotations

import argparse
import random
import time
from itertools import accumulate

from txviz.tokenization import bpe

_ONSETS = (
    "",
    "b",
    "c",
    "d",
    "f",
    "g",
    "h",
    "l",
    "m",
    "n",
    "p",
    "r",
    "s",
    "t",
    "th",
    "st",
    "w",
)
_VOWELS = ("a", "e", "i", "o", "u", "ea", "ou", "ai")
_CODAS = ("", "", "n", "r", "s", "t", "l", "nd", "ng", "st")


def synthetic_corpus(n_bytes: int = 1_000_000, seed: int = 0, n_words: int = 20_000) -> str:
    """Deterministic English-like text: Zipf-distributed words built from syllables."""
    rng = random.Random(seed)
    lexicon: list[str] = []
    seen: set[str] = set()
    while len(lexicon) < n_words:
        word = "".join(
            rng.choice(_ONSETS) + rng.choice(_VOWELS) + rng.choice(_CODAS)
            for _ in range(rng.choice((1, 1, 2, 2, 2, 3, 3, 4)))
        )
        if word not in seen:
            seen.add(word)
            lexicon.append(word)
    cum_weights = list(accumulate(1.0 / (rank + 1) for rank in range(n_words)))  # Zipf, s = 1
    parts: list[str] = []
    size = 0
    while size < n_bytes:
        line = " ".join(rng.choices(lexicon, cum_weights=cum_weights, k=12)) + "\n"
        parts.append(line)
        size += len(line)
    return "".join(parts)[:n_bytes]


def main(argv: list[str] | None = None) -> int:
    """Time both trainers on ~1 MB and 1,000 merges; print the ratio and whether they agree."""
    parser = argparse.ArgumentParser(prog="python -m txviz bench bpe", description=__doc__)
    parser.add_argument("--bytes", type=int, default=1_000_000, help="corpus size")
    parser.add_argument("--merges", type=int, default=1_000, help="merges to learn")
    parser.add_argument("--file", help="a UTF-8 text file instead of the synthetic corpus")
    args = parser.parse_args(argv)

    if args.file:
        with open(args.file, encoding="utf-8") as handle:
            text = handle.read()[: args.bytes]
    else:
        text = synthetic_corpus(args.bytes)
    corpus = bpe.normalize_corpus(text)
    vocab_size = bpe.alphabet_size(corpus) + args.merges

    start, cpu = time.perf_counter(), time.process_time()
    trace = bpe.train_bpe_on_words(bpe.count_words(corpus), vocab_size=vocab_size, max_merges=None)
    ours, ours_cpu = time.perf_counter() - start, time.process_time() - cpu

    start, cpu = time.perf_counter(), time.process_time()
    theirs_merges = bpe.tokenizers_merges(corpus, vocab_size)
    theirs, theirs_cpu = time.perf_counter() - start, time.process_time() - cpu

    agree = trace.merges == theirs_merges
    print(f"corpus: {len(corpus.encode('utf-8')):,} bytes, {len(trace.word_counts):,} distinct words")
    print(f"merges: {trace.n_steps:,} (recorded, every step's counts)")
    print(f"txviz.bpe (pure Python, recording): {ours:.3f} s wall, {ours_cpu:.3f} s CPU")
    print(f"tokenizers BpeTrainer (Rust):        {theirs:.3f} s wall, {theirs_cpu:.3f} s CPU (all threads)")
    print(
        f"ratio txviz / tokenizers: {ours / theirs:.1f}x wall (goal: within 10x), {ours_cpu / theirs_cpu:.1f}x CPU"
    )
    print(f"same merges in the same order: {'yes' if agree else 'NO'}")
    return 0 if agree else 1
