"""Loading by hub id or folder: messages chosen by huggingface_hub's error types, never the network.

Hub calls are replaced by fakes that raise the library's own errors; the ids are made up."""

from __future__ import annotations

import socket
from types import SimpleNamespace

import pytest
import transformers as tf
from huggingface_hub import constants, errors
from tiny_models import tiny_model

from txviz.core.loaded import ModelLoadError
from txviz.models import loading

MADE_UP_ID = "txviz-tests/no-such-model"
NO_RESPONSE = SimpleNamespace(headers={}, request=None)  # what HfHubHTTPError reads from a response


@pytest.fixture(autouse=True)
def no_network(monkeypatch, tmp_path):
    """An empty hub cache, and any socket a test opens fails it."""
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "hub-cache"))

    def refuse(*args, **kwargs):
        raise AssertionError("a test tried to open a network connection")

    monkeypatch.setattr(socket, "create_connection", refuse)


def hub_download_raising(monkeypatch, error: Exception) -> list[dict]:
    """transformers' download call replaced: a cache miss when asked for local files only, else `error`."""
    calls = []

    def fake_download(repo_id, filename, **kwargs):
        calls.append(kwargs)
        if kwargs.get("local_files_only"):
            raise errors.LocalEntryNotFoundError(f"{filename} is not in the cache")
        raise error

    monkeypatch.setattr("transformers.utils.hub.hf_hub_download", fake_download)
    return calls


def online(monkeypatch, answers: bool = True) -> None:
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setattr(loading, "_endpoint_answers", lambda endpoint: answers)


def test_offline_mode_refuses_an_uncached_id_through_the_library(monkeypatch):
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)  # as HF_HUB_OFFLINE=1 does
    assert loading.hub_offline()
    with pytest.raises(ModelLoadError, match="cannot be reached"):
        loading.load_pretrained(MADE_UP_ID, MADE_UP_ID, "cpu")


def test_an_unreachable_hub_is_reported_without_waiting_for_a_download(monkeypatch):
    online(monkeypatch, answers=False)
    calls = hub_download_raising(monkeypatch, AssertionError("no download should start"))
    with pytest.raises(ModelLoadError, match="cannot be reached"):
        loading.load_pretrained(MADE_UP_ID, MADE_UP_ID, "cpu")
    assert calls and all(c.get("local_files_only") for c in calls)  # only the cache was asked


@pytest.mark.parametrize(
    "error, message",
    [
        # each text would have misled the old text matching; the type decides now
        (errors.RepositoryNotFoundError("HTTP error: could not connect", response=NO_RESPONSE), "neither"),
        (errors.GatedRepoError("404 Repository Not Found", response=NO_RESPONSE), "gated"),
        (errors.LocalEntryNotFoundError("not a valid model identifier"), "cannot be reached"),
        (errors.OfflineModeIsEnabled("Repository Not Found"), "cannot be reached"),
        (errors.HfHubHTTPError("500 Server Error: offline", response=NO_RESPONSE), "Could not load"),
    ],
)
def test_the_message_follows_the_hub_error_type(monkeypatch, error, message):
    online(monkeypatch)
    calls = hub_download_raising(monkeypatch, error)
    with pytest.raises(ModelLoadError, match=message) as raised:
        loading.load_pretrained(MADE_UP_ID, MADE_UP_ID, "cpu")
    assert loading.hub_error(raised.value) is error  # found through transformers' OSError
    assert any(not c.get("local_files_only") for c in calls)  # the download was tried


def test_the_endpoint_probe_asks_the_configured_hub(monkeypatch):
    asked = []

    def connect(address, timeout):
        asked.append((address, timeout))
        raise OSError("refused")

    monkeypatch.setattr(socket, "create_connection", connect)
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setattr(constants, "ENDPOINT", "https://hub.example.org:8443")
    assert loading.hub_offline()
    assert asked == [(("hub.example.org", 8443), 2.0)]


def test_a_local_folder_loads_without_asking_the_hub(monkeypatch, tmp_path):
    monkeypatch.setattr("transformers.utils.hub.hf_hub_download", None)  # any hub call fails loudly
    words = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "cat", "sat"]
    (tmp_path / "vocab.txt").write_text("\n".join(words) + "\n")
    tf.BertTokenizer(str(tmp_path / "vocab.txt")).save_pretrained(tmp_path)
    tiny_model("bert", len(words), capture=False).save_pretrained(tmp_path)
    loaded = loading.load_pretrained("tiny", str(tmp_path), "cpu")
    assert loaded.kind == "encoder" and loaded.tokenizer("the cat sat")["input_ids"][1:4] == [5, 6, 7]


def test_a_folder_without_a_model_and_a_name_that_is_no_id(tmp_path):
    with pytest.raises(ModelLoadError, match="no config.json"):
        loading.load_pretrained("empty", str(tmp_path), "cpu")
    with pytest.raises(ModelLoadError, match="neither a known model"):
        loading.load_pretrained("bad", "<b>not an id</b>", "cpu")
