"""The trace memory budget: a text whose trace would pass it is cut with a notice, or refused."""

import pytest

from txviz.core import config
from txviz.core.config import load_config
from txviz.core.errors import UserError
from txviz.core.tracing import TraceTooLarge, trace_bytes, trace_text
from txviz.families import zoo
from txviz.models import load

pytestmark = pytest.mark.families
TEXT = " ".join(["the cat sat on the mat"] * 10)  # 60 word tokens with the zoo's tokenizer
ALL_ITEMS = ("weights", "scores", "queries", "keys")


@pytest.fixture(scope="module")
def llama(tmp_path_factory):
    """A tiny Llama (2 layers x 4 heads, head size 8) saved as a folder and loaded like a user's."""
    folder = zoo.folders(tmp_path_factory.mktemp("zoo"), {"Llama"})["Llama"]
    return load(str(folder), "cpu")


@pytest.fixture(autouse=True)
def _no_installed_config(monkeypatch):
    monkeypatch.setattr(config, "_installed", None)  # the environment decides, as in the CLI


def test_trace_bytes_are_the_arrays_a_trace_holds(llama):
    trace = trace_text(llama, TEXT, record=ALL_ITEMS)
    held = sum(getattr(trace, item).nbytes for item in ALL_ITEMS)
    assert trace_bytes(llama, len(trace.query_tokens), ALL_ITEMS) == held
    n = len(trace.query_tokens)
    assert trace_bytes(llama, n) == 2 * 4 * n * n * 4  # layers x heads x T^2 x float32


def test_a_trace_within_the_budget_is_whole(llama):
    trace = trace_text(llama, TEXT, budget_mb=1)
    assert len(trace.query_tokens) == len(llama.tokenizer(TEXT)["input_ids"]) and not trace.notice


@pytest.mark.parametrize("record", [("weights",), ALL_ITEMS])
def test_a_trace_over_the_budget_is_cut_to_the_longest_that_fits(llama, record):
    n = len(llama.tokenizer(TEXT)["input_ids"])
    budget_mb = trace_bytes(llama, n // 2, record) / 2**20  # exactly half the tokens fit
    trace = trace_text(llama, TEXT, record=record, budget_mb=budget_mb)
    kept = len(trace.query_tokens)
    assert kept == n // 2
    assert trace.weights.shape == (2, 4, kept, kept)
    assert f"only the first {kept} tokens" in trace.notice and "TXVIZ_TRACE_MEMORY_MB" in trace.notice
    whole = trace_text(llama, TEXT, record=record)
    assert (trace.weights == whole.weights[:, :, :kept, :kept]).all()  # causal: the prefix is unchanged


def test_a_budget_too_small_for_a_few_tokens_is_refused(llama):
    with pytest.raises(TraceTooLarge, match="not even 8 tokens fit"):
        trace_text(llama, TEXT, budget_mb=trace_bytes(llama, 7) / 2**20)
    assert issubclass(TraceTooLarge, UserError)


def test_the_budget_comes_from_the_environment(llama, monkeypatch):
    monkeypatch.setenv("TXVIZ_TRACE_MEMORY_MB", str(trace_bytes(llama, 20) / 2**20))
    trace = trace_text(llama, TEXT)
    assert len(trace.query_tokens) == 20 and "only the first 20" in trace.notice
    monkeypatch.setenv("TXVIZ_TRACE_MEMORY_MB", "0.000001")
    with pytest.raises(TraceTooLarge):
        trace_text(llama, TEXT)


def test_an_installed_config_wins_over_the_environment(llama, monkeypatch):
    monkeypatch.setenv("TXVIZ_TRACE_MEMORY_MB", "0.000001")
    config.install(config.ServerConfig(trace_memory_mb=1))
    assert not trace_text(llama, TEXT).notice


def test_the_setting_is_read_and_checked():
    assert load_config({}).trace_memory_mb == 1024
    assert load_config({"TXVIZ_TRACE_MEMORY_MB": "0.5"}).trace_memory_mb == 0.5
    assert load_config({}, {"trace_memory_mb": 256}).trace_memory_mb == 256
    for bad in ("0", "lots"):
        with pytest.raises(UserError, match="trace_memory_mb|TRACE_MEMORY_MB"):
            load_config({"TXVIZ_TRACE_MEMORY_MB": bad})
