"""Loading more models than the cache holds frees the evicted ones: no engine, memo or result keeps them.

Tiny GPT-2 models of about 8 MB each are saved to folders and loaded through the registry as a
user's folder would be. Memory is counted as the bytes of every live torch tensor (gc sees them all),
which is exact where the process's resident size is noisy; the resident size is checked too, loosely.
"""

from __future__ import annotations

import gc
import itertools
import string
import weakref

import psutil
import pytest
import torch
from tiny_models import tiny_model
from tokenizers import Tokenizer, models, pre_tokenizers
from transformers import PreTrainedTokenizerFast

from txviz.app import sessions, ui
from txviz.generation.loop import GenerationRequest
from txviz.heads import corpus

LETTERS = ("".join(w) for w in itertools.product(string.ascii_lowercase, repeat=3))
WORDS = ["<unk>", "<eos>"] + list(itertools.islice(LETTERS, 998))  # "aaa", "aab", ...
WIDTH = 256  # 2 layers of 256 and a 1000-word vocabulary: about 2.1M parameters, 8 MB


def save_tiny_model(folder, seed: int) -> int:
    """A random GPT-2 and a word-level tokenizer in ``folder``; returns the weights' bytes."""
    tokenizer = Tokenizer(models.WordLevel({w: i for i, w in enumerate(WORDS)}, unk_token="<unk>"))
    tokenizer.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    fast = PreTrainedTokenizerFast(tokenizer_object=tokenizer, unk_token="<unk>", eos_token="<eos>")
    ends = dict(bos_token_id=1, eos_token_id=1)
    model = tiny_model("gpt2", len(WORDS), seed=seed, capture=False, n_embd=WIDTH, n_positions=64, **ends)
    model.save_pretrained(folder)
    fast.save_pretrained(folder)
    return sum(p.numel() * p.element_size() for p in model.parameters())


def live_tensor_bytes() -> int:
    """Bytes of every storage a live torch tensor holds (each storage counted once)."""
    gc.collect()
    storages = {}
    for obj in gc.get_objects():
        if isinstance(obj, torch.Tensor) and obj.device.type == "cpu":
            try:
                storage = obj.untyped_storage()
                storages[storage.data_ptr()] = storage.nbytes()
            except (RuntimeError, NotImplementedError):  # fake tensors torch.compile left alive hold no data
                continue
    return sum(storages.values())


def resident_bytes() -> int:
    gc.collect()
    return psutil.Process().memory_info().rss


def use_everywhere(loaded, generate: bool) -> None:
    """What pages do with a model: a cached trace, the head detectors' memo, maybe a generation."""
    ui._cached_trace(loaded, "aaa aab aac", ("weights",))
    corpus.word_vocabulary(loaded)
    if generate:
        request = GenerationRequest("aaa aab", max_new_tokens=2)
        assert len(list(sessions.engine(loaded).submit(request, owner="test").steps())) == 2


@pytest.fixture
def folders(tmp_path):
    made = [tmp_path / f"model{i}" for i in range(ui.MODELS_KEPT + 2)]
    sizes = [save_tiny_model(folder, seed) for seed, folder in enumerate(made)]
    ui._cached_model.clear()
    yield [str(f) for f in made], sizes[0]
    ui._cached_model.clear()


def test_models_past_the_cache_are_freed_with_everything_made_from_them(folders):
    names, model_bytes = folders
    assert model_bytes > 7e6
    before, resident_before = live_tensor_bytes(), resident_bytes()
    alive = []
    for i, name in enumerate(names):
        loaded = ui._cached_model(name, "cpu")
        use_everywhere(loaded, generate=i == 0)  # the first model's engine outlives its place in the cache
        alive.append(weakref.ref(loaded))
        del loaded
    gc.collect()
    evicted = len(names) - ui.MODELS_KEPT
    assert [ref() is not None for ref in alive] == [False] * evicted + [True] * ui.MODELS_KEPT
    held = live_tensor_bytes() - before
    # The kept models' weights and little else (traces, one finished generation's cache).
    assert ui.MODELS_KEPT * model_bytes <= held < (ui.MODELS_KEPT + 0.5) * model_bytes, held / model_bytes
    resident_peak = resident_bytes()

    ui._cached_model.clear()
    gc.collect()
    assert all(ref() is None for ref in alive)
    assert live_tensor_bytes() - before < 0.5 * model_bytes
    # Resident memory is noisy (allocator, imports on the first load): only a generous margin.
    assert resident_bytes() < resident_peak - 2 * model_bytes, (resident_before, resident_peak)
