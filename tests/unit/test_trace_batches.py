"""Traces of several sessions in one padded pass: each gets exactly its lone trace, through the queue."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest
from tiny_models import tiny_model, word_tokenizer

from txviz.core.errors import UserError
from txviz.core.loaded import LoadedModel
from txviz.core.tracing import prepare, trace_run, trace_text, traces
from txviz.serving import batches
from txviz.serving.batches import Batcher
from txviz.serving.jobs import JobCancelled, JobQueue

TIMEOUT_S = 20
WORDS = ["the", "cat", "dog", "sat", "ran", "on", "a", "mat", "rug", "by", "red", "big", "old", "sun"]
RECORD = ("keys", "queries", "scores", "weights")


def wait_until(condition, timeout=TIMEOUT_S):
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.005)


@pytest.fixture(scope="module", params=["llama", "bert"])
def loaded(request) -> LoadedModel:
    tok = word_tokenizer(WORDS)
    kind = "decoder" if request.param == "llama" else "encoder"
    return LoadedModel(f"tiny-{request.param}", kind, tiny_model(request.param, len(tok)), tok, None, "cpu")


def text(n_words: int, seed: int) -> str:
    return " ".join(np.random.default_rng(seed).choice(WORDS, size=n_words))


def assert_same_trace(got, lone):
    assert got.query_tokens == lone.query_tokens and got.special == lone.special
    for item in RECORD:
        a, b = getattr(got, item), getattr(lone, item)
        assert a.dtype == np.float32 and a.shape == b.shape, item
        assert np.array_equal(np.isneginf(a), np.isneginf(b)), item  # the same keys masked, no padding
        np.testing.assert_allclose(np.where(np.isneginf(a), 0, a), np.where(np.isneginf(b), 0, b), atol=1e-5)


class Sessions:
    """Threads that each trace one text through a batcher, queued behind a job holding the only place."""

    def __init__(self, loaded: LoadedModel, max_jobs: int = 1, gather_s: float = batches.GATHER_S):
        self.loaded = loaded
        self.batcher = Batcher(JobQueue(max_jobs), gather_s=gather_s)
        self.results, self.errors, self.places = {}, {}, {}
        self.threads = []
        self.release = threading.Event()
        self.blocker = threading.Thread(
            target=lambda: self.batcher.queue.run(lambda: self.release.wait(TIMEOUT_S)), daemon=True
        )
        self.blocker.start()
        wait_until(lambda: self.batcher.queue.load()[0] == 1)

    def start(self, name: str, words: str) -> None:
        def body():
            try:
                self.results[name] = batches.trace(
                    self.batcher,
                    self.loaded,
                    words,
                    RECORD,
                    owner=name,
                    on_wait=lambda ahead: self.places.setdefault(name, []).append(ahead),
                )
            except (UserError, JobCancelled) as error:
                self.errors[name] = error

        waiting = self.batcher.queue.load()[1]
        thread = threading.Thread(target=body, daemon=True)
        self.threads.append(thread)
        thread.start()
        wait_until(lambda: self.batcher.queue.load()[1] > waiting or name in self.errors)

    def finish(self) -> None:
        self.release.set()
        for thread in [self.blocker, *self.threads]:
            thread.join(TIMEOUT_S)
            assert not thread.is_alive()


def test_one_padded_pass_gives_each_text_its_lone_trace(loaded):
    texts = [text(n, seed) for seed, n in enumerate((9, 12, 7, 11))]
    batched = traces(loaded, [prepare(loaded, t, record=RECORD) for t in texts], record=RECORD)
    for t, got in zip(texts, batched, strict=True):
        assert_same_trace(got, trace_text(loaded, t, record=RECORD))
    assert batched[2].weights.shape[-1] == 9  # 7 words, [CLS] and [SEP]: the padding is cut off


def test_each_layer_s_weights_are_written_once_into_the_array_the_trace_returns(loaded):
    trace, result = trace_run(loaded, text(9, 3))
    calls = [calls[-1].weights for calls in result.attention.values()]
    assert len(calls) == trace.n_layers
    for layer, weights in enumerate(calls):  # the records are views of the trace, not copied into it
        assert np.shares_memory(trace.weights[layer], weights.numpy())
        np.testing.assert_array_equal(trace.weights[layer], weights[0].numpy())


def test_sessions_queued_together_share_one_pass_and_each_gets_its_own_trace(loaded):
    sessions = Sessions(loaded)
    texts = {f"s{i}": text(n, 10 + i) for i, n in enumerate((10, 12, 9, 11))}
    for name, words in texts.items():
        sessions.start(name, words)
    assert sessions.batcher.queue.load() == (1, 4)
    wait_until(lambda: len(sessions.places) == 4)
    assert [sessions.places[f"s{i}"][0] for i in range(4)] == [0, 1, 2, 3]  # each hears its place
    sessions.finish()
    assert not sessions.errors
    for name, words in texts.items():
        assert_same_trace(sessions.results[name], trace_text(loaded, words, record=RECORD))
    assert sessions.batcher.batches_run == 1 and sessions.batcher.largest_batch == 4


def test_texts_of_very_different_lengths_run_apart(loaded):
    sessions = Sessions(loaded)
    texts = {"short": text(4, 1), "long": text(20, 2), "near": text(5, 3)}
    for name, words in texts.items():
        sessions.start(name, words)
    sessions.finish()
    for name, words in texts.items():
        assert_same_trace(sessions.results[name], trace_text(loaded, words, record=RECORD))
    assert sessions.batcher.batches_run == 1 and sessions.batcher.largest_batch == 2  # short with near


def test_a_bad_text_fails_alone_and_the_others_still_share_their_pass(loaded):
    sessions = Sessions(loaded)
    sessions.start("a", text(8, 4))
    sessions.start("empty", "   ")
    sessions.start("b", text(9, 5))
    sessions.finish()
    assert list(sessions.errors) == ["empty"] and isinstance(sessions.errors["empty"], UserError)
    assert set(sessions.results) == {"a", "b"} and sessions.batcher.largest_batch == 2


class Recorded:
    """A run_batch that records the items of every pass; an item 'bad' makes its pass fail."""

    def __init__(self):
        self.passes = []

    def __call__(self, items):
        self.passes.append(list(items))
        if "bad" in items:
            raise ValueError("bad item")
        return [item.upper() for item in items]


def run_in_thread(batcher, item, run_batch, owner, out):
    def body():
        try:
            out[owner] = batcher.run("key", item, run_batch, owner=owner, poll_s=0.01)
        except Exception as error:
            out[owner] = error

    waiting = batcher.queue.load()[1]
    thread = threading.Thread(target=body, daemon=True)
    thread.start()
    wait_until(lambda: batcher.queue.load()[1] > waiting)
    return thread


def blocked(batcher):
    release = threading.Event()
    thread = threading.Thread(target=lambda: batcher.queue.run(lambda: release.wait(TIMEOUT_S)), daemon=True)
    thread.start()
    wait_until(lambda: batcher.queue.load()[0] == 1)
    return release, thread


def test_a_cancelled_request_is_dropped_before_the_pass():
    batcher, run_batch, out = Batcher(JobQueue(1)), Recorded(), {}
    release, blocker = blocked(batcher)
    threads = [run_in_thread(batcher, item, run_batch, item, out) for item in ("x", "y", "z")]
    batcher.queue.cancel("y")  # its session left while waiting
    wait_until(lambda: "y" in out)
    release.set()
    for thread in [blocker, *threads]:
        thread.join(TIMEOUT_S)
    assert isinstance(out["y"], JobCancelled)
    assert run_batch.passes == [["x", "z"]] and out["x"] == "X" and out["z"] == "Z"


def test_a_failing_row_fails_only_its_own_request():
    batcher, run_batch, out = Batcher(JobQueue(1)), Recorded(), {}
    release, blocker = blocked(batcher)
    threads = [run_in_thread(batcher, item, run_batch, item, out) for item in ("x", "bad", "z")]
    release.set()
    for thread in [blocker, *threads]:
        thread.join(TIMEOUT_S)
    assert out["x"] == "X" and out["z"] == "Z" and isinstance(out["bad"], ValueError)
    assert run_batch.passes == [["x", "bad", "z"], ["x"], ["bad"], ["z"]]  # then each alone
    assert batcher.batches_run == 0


def test_a_lone_request_starts_at_once_without_a_gather_window(monkeypatch):
    slept = []
    monkeypatch.setattr(batches.time, "sleep", slept.append)  # a gather window would be a sleep of gather_s
    batcher = Batcher(JobQueue(4), gather_s=5.0)
    assert batcher.run("key", "x", Recorded()) == "X"
    assert 5.0 not in slept


def test_requests_arriving_at_a_busy_server_with_free_places_gather_into_one_pass():
    batcher, run_batch, out = Batcher(JobQueue(4), gather_s=0.5), Recorded(), {}
    release, blocker = blocked(batcher)  # one other job running: later arrivals wait to gather
    threads = []
    for item in ("x", "y", "z"):
        thread = threading.Thread(target=lambda i=item: out.setdefault(i, batcher.run("key", i, run_batch)))
        thread.start()
        threads.append(thread)
    for thread in threads:
        thread.join(TIMEOUT_S)
    release.set()
    blocker.join(TIMEOUT_S)
    assert [sorted(p) for p in run_batch.passes] == [["x", "y", "z"]]
    assert out == {"x": "X", "y": "Y", "z": "Z"}
