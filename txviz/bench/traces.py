"""Traces under load: sessions trace their own texts at once, batched in the queue or one pass each.

N threads (8) each trace a different text of about 100 tokens ("explore own text" in the Attention
Explorer) on one model, all released together, through the heavy-pass queue (the server's default
max_jobs): once through txviz.serving.batches (passes shared by texts of similar length), once with
one pass per text. Both in the same run, medians of three rounds; every batched trace is checked
against the text's lone trace. The last line is `ratio queued one at a time / batched = X.XXx`
(slowest session's wait).
"""

from __future__ import annotations

import argparse
import statistics
import threading
import time

import numpy as np

from txviz import models
from txviz.core.config import ServerConfig
from txviz.core.tracing import trace_text
from txviz.serving import batches
from txviz.serving.jobs import JobQueue

SUBJECTS = ["apple", "river", "tiger", "piano", "castle", "winter", "doctor", "garden", "engine", "forest"]
SENTENCES = (
    "The {0} was the first thing the children saw when they came down the hill that morning.",
    "Nobody in the village could say where the {0} had come from, or who had left it there.",
    "By noon the {0} had drawn a small crowd, and the baker sold out of bread before one o'clock.",
    "Some said the {0} brought luck; others kept their distance and watched from the square.",
    "When the rain came, the {0} was still there, and so were we, waiting for someone to explain.",
)


def text_for(tokenizer, index: int, tokens: int) -> str:
    """Sentences about session index's own subject until the text reaches about ``tokens`` tokens."""
    subject, parts = SUBJECTS[index % len(SUBJECTS)], []
    while len(tokenizer(" ".join(parts))["input_ids"]) < tokens:
        parts.append(SENTENCES[len(parts) % len(SENTENCES)].format(subject))
    return " ".join(parts)


def slowest(texts: list[str], trace) -> tuple[float, list]:
    """Every text traced at once, one thread each: the slowest thread's seconds and the traces."""
    gate, results, seconds = threading.Barrier(len(texts)), [None] * len(texts), [0.0] * len(texts)

    def session(i: int) -> None:
        gate.wait()
        began = time.perf_counter()
        results[i] = trace(texts[i], f"session-{i}")
        seconds[i] = time.perf_counter() - began

    threads = [threading.Thread(target=session, args=(i,)) for i in range(len(texts))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return max(seconds), results


def one_pass_each(loaded, texts: list[str], max_jobs: int) -> float:
    """The slowest session's seconds when every text takes a pass of its own in the queue."""
    queue = JobQueue(max_jobs)
    return slowest(texts, lambda text, owner: queue.run(lambda: trace_text(loaded, text), owner))[0]


def batched_round(loaded, texts: list[str], max_jobs: int) -> tuple[float, list, batches.Batcher]:
    """The slowest session's seconds, the traces and the batcher, when texts share passes."""
    batcher = batches.Batcher(JobQueue(max_jobs))
    seconds, got = slowest(texts, lambda text, owner: batches.trace(batcher, loaded, text, owner=owner))
    return seconds, got, batcher


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="txviz bench traces", description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="smollm2")
    parser.add_argument("--sessions", type=int, default=8)
    parser.add_argument("--tokens", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--max-jobs", type=int, default=ServerConfig().max_jobs)
    args = parser.parse_args(argv)

    loaded = models.load(args.model, "cpu")
    texts = [text_for(loaded.tokenizer, i, args.tokens) for i in range(args.sessions)]
    lengths = [len(loaded.tokenizer(t)["input_ids"]) for t in texts]
    trace_text(loaded, texts[0])  # warm-up
    # in a thread of its own, as a session's script runs (the main thread's torch may differ)
    alone = [slowest([t], lambda text, owner: trace_text(loaded, text)) for t in texts]
    lone_s, lone = statistics.median(s for s, _ in alone), [traces[0] for _, traces in alone]

    queued, batched, largest = [], [], 0
    for _ in range(args.rounds):
        queued.append(one_pass_each(loaded, texts, args.max_jobs))
        seconds, got, batcher = batched_round(loaded, texts, args.max_jobs)
        batched.append(seconds)
        largest = max(largest, batcher.largest_batch)
        gap = max(float(np.abs(g.weights - w.weights).max()) for g, w in zip(got, lone, strict=True))
        if gap > 1e-5:
            raise SystemExit(f"A batched trace differs from its lone trace by {gap:.2g}.")

    q, b = statistics.median(queued), statistics.median(batched)
    print(
        f"{args.model}: {args.sessions} sessions, texts of {min(lengths)}-{max(lengths)} tokens, "
        f"max_jobs {args.max_jobs}, largest batch {largest}; batched traces equal lone ones (atol 1e-5)"
    )
    print(f"lone trace: {lone_s:.2f} s (median of {len(texts)})")
    print(
        f"slowest session, queued one pass each: {q:.2f} s (rounds {', '.join(f'{s:.2f}' for s in queued)})"
    )
    print(f"slowest session, batched: {b:.2f} s (rounds {', '.join(f'{s:.2f}' for s in batched)})")
    print(f"ratio queued one at a time / batched = {q / b:.2f}x")
