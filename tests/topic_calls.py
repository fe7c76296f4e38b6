"""Each page's main computation as one call on a loaded model, and its results flattened to compare.

The GPU tier (tests/gpu) runs every call that fits a model's kind on the device and compares it with
the CPU run; the precision tests run them with bfloat16 weights. `flatten` turns a result (dataclasses,
dicts, tuples, arrays, tensors) into {path: value}, leaving out timings, which differ between runs.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

TEXT = "The cat sat on the mat because it was tired. Then the dog ran to the park."
SHORT = "The cat sat on the"  # where a call runs the model once per token or per component
TIMINGS = ("seconds", "elapsed", "time")  # fields that differ between any two runs


@dataclass(frozen=True)
class Call:
    name: str  # the topic, as a test id
    kinds: tuple[str, ...]  # model kinds it fits
    run: Callable[[Any], Any]  # loaded model -> result


def _trace(loaded):
    from txviz.core.tracing import trace_text

    return trace_text(loaded, TEXT, record=("weights", "scores", "queries", "keys"))


def _lens(loaded):
    from txviz.block.lens import lens_of_text

    return lens_of_text(loaded, TEXT)[0]


def _block(loaded):
    """The Transformer Block page: the recorded run, one block written out as code, its positions."""
    from txviz.block.dataflow import stage_values
    from txviz.block.opened import open_block
    from txviz.block.recording import STAGES, run_text

    run = run_text(loaded, TEXT, stages=STAGES)
    stack = run.layout.stacks[0].name
    return {
        "run": run,
        "opened": open_block(loaded, run, stack, 0),
        "positions": stage_values(loaded, run, stack, "positions", 0),
        "embedding": stage_values(loaded, run, stack, "embedding", 0),
    }


def _heads(loaded):
    from txviz.heads.corpus import Corpus
    from txviz.heads.runs import RepeatSettings, score_heads

    return score_heads(loaded, Corpus(texts=(TEXT,)), RepeatSettings(n=1, length=8))


def _atlas(loaded):
    """The Head Atlas page's build over a small corpus (its scores, contexts and token windows)."""
    from txviz.atlas.atlas import Settings
    from txviz.atlas.build import build
    from txviz.atlas.corpus import of_text

    corpus = of_text("two passages", TEXT + " Later, a second and different passage follows it here.")
    built = build(loaded, corpus, Settings(window=16, top_k=4))
    top = {c: (x.window, x.query, x.key, x.value) for c, x in built.contexts.items()}  # the bands are a
    return {"scores": built.scores, "top": top, "tokens": built.tokens}  # draw: unit tests check them


def _query_key_space(loaded):
    from txviz.heads.qkspace import trace_texts

    return trace_texts(loaded, [TEXT, "A short second text."])


def _head_attribution(loaded):
    """The Head Detectors page's attention-versus-attribution comparison."""
    from txviz.heads.attribution import explain_next_token, explain_similarity

    if loaded.kind == "decoder":
        return explain_next_token(loaded, SHORT, steps=4)
    return explain_similarity(loaded, SHORT, "A dog ran in the park", steps=4)


def _soft_hard(loaded):
    from txviz.softhard.compare import NormalizerSettings, compare, output_effect

    settings = NormalizerSettings()
    return {"compare": compare(loaded, TEXT, settings), "effect": output_effect(loaded, SHORT, settings, 3)}


def _masks(loaded):
    from txviz.core.tracing import encode
    from txviz.masks.effects import decoder_effect, encoder_effect

    ids = encode(loaded, TEXT).ids
    n = len(ids)
    near = np.abs(np.arange(n)[:, None] - np.arange(n)[None, :]) <= 2
    mask = near & np.tri(n, dtype=bool) if loaded.kind == "decoder" else near
    effect = decoder_effect if loaded.kind == "decoder" else encoder_effect
    return effect(loaded, ids, mask)


def _long_document(loaded):
    from txviz.longdoc.drill import drill_down
    from txviz.longdoc.overview import overview

    text = " ".join([TEXT] * 6)
    return {
        "overview": overview(loaded, text, max_tokens=128),
        "drill": drill_down(loaded, text, 128, 0, 0, 8),
    }


def _coreference(loaded):
    from txviz.coref.answers import model_answer
    from txviz.coref.pairs import load_pairs
    from txviz.coref.runs import trace_pair

    pair = load_pairs()[0]
    answer = model_answer(loaded, pair, pair.sentence_a) if loaded.kind == "decoder" else None
    return {"trace": trace_pair(loaded, pair), "answer": answer}


def _positional(loaded):
    from txviz.positional.encodings import token_embeddings
    from txviz.positional.lookup import lookup_as_product

    return {"embeddings": token_embeddings(loaded, TEXT), "lookup": lookup_as_product(loaded, TEXT)}


def _self_attention(loaded):
    """The Self-Attention page's real-model tabs: permutation equivariance, one head's Q, K, V, its block map."""
    from txviz.selfattention.blockmap import minilm_head_matrices
    from txviz.selfattention.equivariance import model_check
    from txviz.selfattention.linear import minilm_head

    return {
        "equivariance": model_check(loaded, TEXT, 0, "none"),
        "head": minilm_head(loaded, TEXT, 0, 0),
        "matrices": minilm_head_matrices(loaded, TEXT, 0, 0),
    }


def _entailment(loaded):
    from txviz.entailment.contextual import alignment

    return alignment(loaded, ("a", "cat", "sat", "on", "the", "mat"), ("the", "cat", "ran"))


def _generation(loaded):
    from txviz.generation.loop import GenerationRequest, generate

    return list(generate(loaded, GenerationRequest(TEXT, max_new_tokens=4, stop_at_eos=False)))


def _explain(loaded):
    """The Live Generation page's 'explain this token': every attribution method and the step's lens."""
    from txviz.core.tracing import encode
    from txviz.explain.step import explain_attribution, step_lens

    ids = encode(loaded, SHORT).ids
    context, chosen = tuple(ids[:-1]), ids[-1]
    return {
        "attribution": explain_attribution(loaded, context, chosen, steps=4),
        "lens": step_lens(loaded, context, chosen),
    }


def _interventions(loaded):
    """The Interventions page: one ablation, patching's gradient estimate, and a steered continuation.

    (The exact patching sweep is batched_metrics, as the ablation sweep: a minute on SmolLM2 here.)
    """
    from txviz.interventions import ablation, metrics, patching, steering

    metric = metrics.make_metric(loaded, "logit_difference", " park", " house")
    component = ablation.Component("head_out", 0, 0)
    found = steering.direction(loaded, ["I love it", "I like it"], ["I hate it", "I fear it"], 1)
    clean, corrupt = patching.paired_ids(loaded, SHORT, "The dog sat on the")
    return {
        "ablate": ablation.ablate(loaded, SHORT, metric, [component], view=(0, 0)),
        "patching": patching.attribution(patching.activations(loaded, clean, corrupt, metric)),
        "direction": found,
        "steered": steering.steered_pair(loaded, "The cat", found, 4.0, max_new_tokens=4),
    }


def _next_token(loaded):
    from txviz.objectives.causal import next_token_objective

    return next_token_objective(loaded, TEXT)


def _seq2seq(loaded):
    """The Encoder-Decoder page: decoding, cross-attention, parallel refinement, teacher forcing, attribution."""
    from txviz.explain.seq2seq import attribute_source
    from txviz.seq2seq import teacher
    from txviz.seq2seq.arithmetic import cross_attention_trace
    from txviz.seq2seq.decoding import decode
    from txviz.seq2seq.parallel import decode_one

    source = "March 3, 2001"
    trace = decode(loaded, source, max_new_tokens=8)
    return {
        "decode": trace,
        "cross attention": cross_attention_trace(loaded, source, trace),
        "parallel": decode_one(loaded, source, 2, "mask-predict"),
        "teacher": teacher.compare(loaded, source, "2001-03-03"),
        "attribution": attribute_source(loaded, source, trace, 0, "gradient"),
    }


def _vision(loaded):
    from PIL import Image

    from txviz.vision.runs import trace_image

    image = Image.fromarray((np.random.default_rng(0).random((40, 40, 3)) * 255).astype(np.uint8))
    return trace_image(loaded, image)


TEXT_KINDS = ("encoder", "decoder")
CALLS = (
    Call("trace", TEXT_KINDS, _trace),
    Call("lens", ("decoder", "encoder-decoder"), _lens),
    Call("block", ("encoder", "decoder", "encoder-decoder"), _block),
    Call("heads", TEXT_KINDS, _heads),
    Call("atlas", TEXT_KINDS, _atlas),
    Call("query-key space", TEXT_KINDS, _query_key_space),
    Call("head attribution", TEXT_KINDS, _head_attribution),
    Call("soft vs hard", TEXT_KINDS, _soft_hard),
    Call("masks", TEXT_KINDS, _masks),
    Call("long document", TEXT_KINDS, _long_document),
    Call("coreference", TEXT_KINDS, _coreference),
    Call("positional", TEXT_KINDS, _positional),
    Call("self-attention", ("encoder",), _self_attention),
    Call("entailment", ("encoder",), _entailment),
    Call("generation", ("decoder",), _generation),
    Call("explain", ("decoder",), _explain),
    Call("interventions", ("decoder",), _interventions),
    Call("next token", ("decoder",), _next_token),
    Call("seq2seq", ("encoder-decoder",), _seq2seq),
    Call("vision", ("vision",), _vision),
)
BY_NAME = {c.name: c for c in CALLS}


def calls_for(kind: str) -> list[str]:
    return [c.name for c in CALLS if kind in c.kinds]


def flatten(value: Any, path: str = "") -> dict[str, Any]:
    """{path: array, number or string} of every leaf of a result; tensors as CPU numpy arrays."""
    if isinstance(value, torch.Tensor):
        return {
            path: value.detach().cpu().float().numpy() if value.is_floating_point() else value.cpu().numpy()
        }
    if isinstance(value, np.ndarray | np.generic | int | float | str | bool) or value is None:
        return {path: value}
    if dataclasses.is_dataclass(value):
        items = [(f.name, getattr(value, f.name)) for f in dataclasses.fields(value)]
    elif isinstance(value, dict):
        items = list(value.items())
    elif isinstance(value, list | tuple):
        items = list(enumerate(value))
    else:  # a model, a tokenizer, a function: not a result
        return {}
    out: dict[str, Any] = {}
    for key, item in items:
        if not any(word in str(key) for word in TIMINGS):
            out.update(flatten(item, f"{path}.{key}" if path else str(key)))
    return out


GRADIENT_ATOL = 1e-3  # attributions are gradients through every layer: float32 kernels that round otherwise
# (another CPU, the pretend GPU's path) move them by up to 2.4e-4 (measured on SmolLM2's scores)


def assert_same(ours: dict[str, Any], theirs: dict[str, Any], atol: float = 1e-4, rtol: float = 1e-4) -> None:
    """Equal leaves: floats within tolerance (NaN and inf where the other has them; attributions within
    GRADIENT_ATOL), the rest exactly."""
    assert ours.get("refuses") == theirs.get("refuses"), (ours.get("refuses"), theirs.get("refuses"))
    assert ours.keys() == theirs.keys(), sorted(set(ours) ^ set(theirs))[:10]
    for key, expected in theirs.items():
        got = ours[key]
        if isinstance(expected, np.ndarray) and expected.dtype.kind == "f" or isinstance(expected, float):
            tolerance = max(atol, GRADIENT_ATOL) if key.startswith("attribution.") else atol
            np.testing.assert_allclose(got, expected, atol=tolerance, rtol=rtol, err_msg=key)
        elif isinstance(expected, np.ndarray):
            np.testing.assert_array_equal(got, expected, err_msg=key)
        else:
            assert got == expected, (key, got, expected)


def float_arrays(flat: dict[str, Any]) -> dict[str, np.ndarray]:
    return {k: v for k, v in flat.items() if isinstance(v, np.ndarray) and v.dtype.kind == "f"}


PACKAGED = {"minilm": "encoder", "smollm2": "decoder", "date-bart": "encoder-decoder", "digits-vit": "vision"}
_models: dict[tuple[str, str, str], Any] = {}
_cpu_outcomes: dict[tuple[str, str], Any] = {}


def loaded_model(source: str, device: str = "cpu", dtype: str = "float32"):
    """A model loaded once per test run (registry name or folder, device, precision)."""
    from txviz import models

    key = (source, device, dtype)
    if key not in _models:
        _models[key] = models.load(source, device, dtype=dtype)
    return _models[key]


def outcome(loaded, call: str) -> dict[str, Any]:
    """The call's flattened result, or {"refuses": message} for a UserError (its message for the user)."""
    from txviz.core.errors import UserError

    try:
        return flatten(BY_NAME[call].run(loaded))
    except UserError as error:
        return {"refuses": str(error)}


def cpu_outcome(source: str, call: str) -> dict[str, Any]:
    """The call on the float32 CPU model: what a device or a precision is compared with (once per run)."""
    if (source, call) not in _cpu_outcomes:
        _cpu_outcomes[source, call] = outcome(loaded_model(source), call)
    return _cpu_outcomes[source, call]


def assert_reduced_precision(ours: dict[str, Any], theirs: dict[str, Any]) -> None:
    """A reduced-precision run against the float32 one: the same arrays in the same dtypes (records
    float32), finite wherever float32's are; greedy choices may differ, and with them a shape or a step."""
    assert "refuses" not in ours or ours == theirs, ours
    floats = float_arrays(ours)
    assert floats or "refuses" in ours, "no float array to check"
    for key, got in floats.items():
        expected = theirs.get(key)
        if isinstance(expected, np.ndarray):
            assert got.dtype == expected.dtype, (key, got.dtype, expected.dtype)
            if got.shape == expected.shape:
                assert (np.isfinite(got) == np.isfinite(expected)).all(), key
        else:
            assert np.isfinite(got).any() or not got.size, key
    for key, got in floats.items():  # an attention trace's [layer, head, query, key]: rows sum to 1
        if key.split(".")[-1] == "weights" and got.ndim == 4:
            np.testing.assert_allclose(got.sum(-1), 1, atol=1e-3, err_msg=key)
