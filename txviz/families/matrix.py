"""Each txviz feature on each family's tiny model: it works (numbers equal the model's own) or refuses.

``check(family, folder)`` loads the folder through the registry as a user's folder and runs every
feature that fits the model's kind. Attention is compared with the same weights loaded with eager
attention and ``output_attentions=True``, the output with the model's own forward; a feature may
also refuse with a UserError that says why. Anything else (a traceback, different numbers) fails.
"""

from __future__ import annotations

import logging
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from txviz import models
from txviz.core.errors import UserError
from txviz.families.zoo import BY_NAME, Family, folders

log = logging.getLogger(__name__)

TEXT = "the cat sat on the mat and the dog ran to the house . the cat sat on the mat"
TOL = 1e-4  # float32 on CPU: the same maths in another order differs by ~1e-6
FEATURES = (
    "trace", "explorer", "lens", "residual stream", "block as code", "heads", "generation",
    "extra mask", "normaliser", "interventions",
)  # fmt: skip
FITS = {  # feature -> kinds it applies to
    "trace": ("encoder", "decoder", "encoder-decoder", "vision"),
    "explorer": ("encoder", "decoder"),
    "lens": ("encoder", "decoder", "encoder-decoder"),
    "residual stream": ("encoder", "decoder", "encoder-decoder"),
    "block as code": ("encoder", "decoder", "encoder-decoder"),
    "heads": ("encoder", "decoder"),
    "generation": ("decoder", "encoder-decoder"),
    "extra mask": ("encoder", "decoder"),
    "normaliser": ("encoder", "decoder"),
    "interventions": ("encoder", "decoder", "encoder-decoder"),
}


class Mismatch(AssertionError):
    """txviz gave numbers different from the model's own."""


@dataclass(frozen=True)
class Outcome:
    status: str  # "works", "refuses", "fails" or "-" (does not fit the model's kind)
    detail: str = ""


def close(name: str, ours, theirs, tol: float = TOL) -> None:
    ours, theirs = np.asarray(ours, dtype=np.float64), np.asarray(theirs, dtype=np.float64)
    if theirs.ndim == 0:
        theirs = np.full_like(ours, float(theirs))
    if ours.shape != theirs.shape:
        raise Mismatch(f"{name}: shape {ours.shape} vs the model's {theirs.shape}")
    gap = float(np.nanmax(np.abs(ours - theirs))) if ours.size else 0.0
    if not gap <= tol:
        raise Mismatch(f"{name} differs from the model's own by {gap:.2g}")


def eager(loaded, folder: Path):
    """The same weights loaded with transformers' eager attention."""
    model = type(loaded.model).from_pretrained(folder, attn_implementation="eager", dtype=torch.float32)
    return model.eval()


def own_output(reference: torch.nn.Module, **inputs):
    """The eager model's own output object, through the front door (it computes attention in its
    own code: nothing is recorded or changed, so the numbers are transformers' own)."""
    from txviz.core.running import run

    return run(reference, outputs=("output",), **inputs).output


def _ids(loaded) -> torch.Tensor:
    return torch.tensor([loaded.tokenizer(TEXT)["input_ids"]])


def _stacked(attentions) -> np.ndarray:
    return torch.stack([a[0] for a in attentions]).float().numpy()


def check_trace(loaded, reference: torch.nn.Module) -> str:
    """Every layer's attention and the output, against eager attention and the model's forward."""
    from txviz.core.capture import CaptureSettings
    from txviz.core.running import run

    if loaded.kind == "vision":
        from PIL import Image

        from txviz.vision.runs import pixel_values, trace_image

        image = Image.fromarray((np.random.default_rng(0).random((40, 40, 3)) * 255).astype(np.uint8))
        ours = trace_image(loaded, image)
        with torch.no_grad():
            theirs = own_output(
                reference, pixel_values=pixel_values(loaded.processor, image), output_attentions=True
            )
        close("attention", ours.trace.weights, _stacked(theirs.attentions))
        return f"{ours.trace.n_layers} layers x {ours.trace.n_heads} heads"
    ids = _ids(loaded)
    inputs = {"input_ids": ids}
    if loaded.kind == "encoder-decoder":
        inputs["decoder_input_ids"] = ids[:, :6]
    got = run(loaded.model, CaptureSettings(record={"weights"}), ("output",), **inputs)
    with torch.no_grad():
        theirs = own_output(reference, **inputs, output_attentions=True)
    if loaded.kind == "encoder-decoder":
        pairs = zip(theirs.decoder_attentions, theirs.cross_attentions, strict=True)
        expected = list(theirs.encoder_attentions) + [a for pair in pairs for a in pair]
    else:
        expected = list(theirs.attentions)
    calls = [r for records in got.attention.values() for r in records]
    if len(calls) != len(expected):
        raise Mismatch(f"recorded {len(calls)} attention calls; the model has {len(expected)}")
    for i, (record, attention) in enumerate(zip(calls, expected, strict=True)):
        close(f"attention call {i}", record.weights[0], attention[0])
    key = "logits" if hasattr(theirs, "logits") else "last_hidden_state"
    close(key, getattr(got.output, key), getattr(theirs, key))
    return f"{len(calls)} attention calls"


def check_explorer(loaded, reference: torch.nn.Module) -> str:
    from txviz.core.tracing import trace_run

    output = "logits" if loaded.kind == "decoder" else "hidden"
    trace, got = trace_run(loaded, TEXT, outputs=(output,))
    with torch.no_grad():
        theirs = own_output(reference, input_ids=_ids(loaded), output_attentions=True)
    close("attention", trace.weights, _stacked(theirs.attentions))
    close("output", got.logits if output == "logits" else got.hidden,
          theirs.logits if output == "logits" else theirs.last_hidden_state)  # fmt: skip
    return f"{trace.n_layers} layers x {trace.n_heads} heads"


def check_lens(loaded, reference: torch.nn.Module) -> str:
    from txviz.block.lens import lens_of_text

    lens, _ = lens_of_text(loaded, TEXT)
    if (
        loaded.kind == "encoder-decoder"
    ):  # the decoder reads the model's own output: its choice tops the last row
        close("last lens row's rank of the model's choice", lens.final_rank[-1], 0, tol=0)
    else:
        with torch.no_grad():
            theirs = own_output(reference, input_ids=_ids(loaded))
        close("last lens row", lens.top_ids[-1], theirs.logits[0].argmax(-1), tol=0)
    return f"{lens.top_ids.shape[0]} rows"


def check_residual(loaded, reference: torch.nn.Module) -> str:
    from txviz.block.recording import STAGES, run_text

    block = run_text(loaded, TEXT, stages=STAGES)
    if loaded.kind != "encoder-decoder":
        with torch.no_grad():
            theirs = own_output(reference, input_ids=_ids(loaded), output_hidden_states=True)
        close("stream", block.stacks[-1].hidden[:-1], _stacked(theirs.hidden_states[:-1]))
    return f"{block.stacks[-1].n_layers} blocks"


def check_block_code(loaded, reference: torch.nn.Module) -> str:
    """Every block written out as code and run on its real weights equals the model's own block output."""
    from txviz.block.opened import open_block
    from txviz.block.recording import run_text

    run = run_text(loaded, TEXT)
    n = 0
    for stack in run.stacks:
        for layer in range(stack.n_layers):
            opened = open_block(loaded, run, stack.name, layer)
            close(f"{stack.name} block {layer} as code", opened.max_difference, 0)
            n += 1
    return f"{n} blocks, {opened.form}"


def check_heads(loaded, reference: torch.nn.Module) -> str:
    from txviz.heads.corpus import Corpus
    from txviz.heads.runs import RepeatSettings, score_heads

    scores = score_heads(loaded, Corpus(texts=(TEXT,)), RepeatSettings(n=1, length=8))
    return f"{len(scores.scores)} detectors"


def check_generation(loaded, reference: torch.nn.Module) -> str:
    if loaded.kind == "encoder-decoder":
        from txviz.seq2seq.decoding import decode

        trace = decode(loaded, TEXT, max_new_tokens=4)
        return f"{len(trace.steps)} steps"
    from txviz.core.running import generate as generate_plain
    from txviz.generation.loop import GenerationRequest, generate

    request = GenerationRequest(TEXT, max_new_tokens=4, stop_at_eos=False)
    steps = list(generate(loaded, request))
    ids = _ids(loaded)
    with torch.no_grad():
        theirs = generate_plain(reference, inputs=ids, max_new_tokens=4, do_sample=False, min_new_tokens=4)
        full = own_output(reference, input_ids=theirs[:, :-1], output_attentions=True)
    close("tokens", [s.token_id for s in steps], theirs[0, ids.shape[1] :], tol=0)
    for s in steps:
        row = _stacked(full.attentions)[:, :, s.position - 1, : s.position]
        close(f"step {s.index} attention", s.attention[:, :, : s.position], row, tol=1e-3)  # float16 rows
    return f"{len(steps)} greedy tokens"


def _masked_trace(loaded, **options):
    from txviz.core.tracing import trace_text

    return trace_text(loaded, TEXT, **options)


def check_extra_mask(loaded, reference: torch.nn.Module) -> str:
    keep_first = lambda q, k: k <= q  # noqa: E731 - causal on top of the model's own mask
    trace = _masked_trace(loaded, extra_mask=keep_first)
    upper = np.triu(np.ones(trace.weights.shape[-2:], dtype=bool), 1)
    close("masked weights", trace.weights[..., upper], 0)
    return "cut edges get zero weight"


def check_normaliser(loaded, reference: torch.nn.Module) -> str:
    from txviz.core.attention import hard

    trace = _masked_trace(loaded, normalize=hard)
    close("row sums", trace.weights.sum(-1), 1)
    return "hard attention rows sum to 1"


def check_interventions(loaded, reference: torch.nn.Module) -> str:
    """Ablate head 0 of layer 0; where the map names the output projection, the output must equal the
    eager model's with that head's slice of the projection's input zeroed by hand."""
    from txviz.core.capture import CaptureSettings
    from txviz.core.edits import Ablate
    from txviz.core.layouts import cached_layout
    from txviz.core.running import run

    ids = _ids(loaded)
    inputs = {"input_ids": ids}
    if loaded.kind == "encoder-decoder":
        inputs["decoder_input_ids"] = ids[:, :6]
    settings = CaptureSettings(record={"head_out"}, interventions=[Ablate("head_out", 0, head=0)])
    got = run(loaded.model, settings, ("output",), **inputs)
    zeroed = next(iter(r for rs in got.attention.values() for r in rs if r.head_out is not None and
                       not r.head_out[:, 0].any()), None)  # fmt: skip
    if zeroed is None:
        raise Mismatch("ablating head 0 of layer 0 left every recorded head 0 non-zero")
    layout = cached_layout(loaded.model)
    if layout.record is None:
        return "ablate head 0 of layer 0 (heads found by discovery)"
    width = zeroed.head_out.shape[-1]
    projection = layout.block(reference, layout.last_stack, 0).get_submodule(layout.record.attention.o)

    def by_hand(module, args):
        x = args[0].clone()
        x[..., :width] = 0  # head 0's slice of the heads side by side
        return (x, *args[1:])

    handle = projection.register_forward_pre_hook(by_hand)
    try:
        theirs = own_output(reference, **inputs)
    finally:
        handle.remove()
    key = "logits" if hasattr(theirs, "logits") else "last_hidden_state"
    close("ablated output", getattr(got.output, key), getattr(theirs, key))
    return "ablate head 0 of layer 0 = its slice of the output projection's input zeroed by hand"


CHECKS: dict[str, Callable] = {
    "trace": check_trace, "explorer": check_explorer, "lens": check_lens, "residual stream": check_residual,
    "block as code": check_block_code, "heads": check_heads, "generation": check_generation,
    "extra mask": check_extra_mask, "normaliser": check_normaliser, "interventions": check_interventions,
}  # fmt: skip


def run_check(feature: str, loaded, reference: torch.nn.Module) -> Outcome:
    """One feature on one model: works, refuses (a UserError's message) or fails (anything else)."""
    if loaded.kind not in FITS[feature]:
        return Outcome("-")
    try:
        return Outcome("works", CHECKS[feature](loaded, reference))
    except UserError as error:
        return Outcome("refuses", str(error))
    except Mismatch as error:
        return Outcome("fails", str(error))
    except Exception as error:  # noqa: BLE001 - the matrix reports every traceback as a failure
        # The table keeps one frame of the traceback; the whole of it is here, on request.
        log.debug("%s failed on %s", feature, type(loaded.model).__name__, exc_info=True)
        where = traceback.extract_tb(error.__traceback__)[-1]
        return Outcome(
            "fails", f"{type(error).__name__}: {error} ({Path(where.filename).name}:{where.lineno})"
        )


def check(family: Family, folder: Path, features=FEATURES) -> dict[str, Outcome]:
    """Every feature on one family's folder, loaded as a user's folder."""
    try:
        loaded = models.load(str(folder), "cpu")
    except UserError as error:
        return {f: Outcome("refuses", f"load: {error}") for f in features}
    except Exception as error:  # noqa: BLE001 - reported as a failure of every feature
        log.debug("%s failed to load", family.name, exc_info=True)  # the table has the message alone
        return {f: Outcome("fails", f"load: {type(error).__name__}: {error}") for f in features}
    reference = eager(loaded, folder)
    return {f: run_check(f, loaded, reference) for f in features}


FOLDER_OF: dict[str, Path] = {}  # family -> the folder it was last checked from (named in messages)


def matrix(root: Path, names=None) -> dict[str, dict[str, Outcome]]:
    """Every feature of every family (or the named ones), from folders under ``root``."""
    found = folders(root, names)
    FOLDER_OF.update(found)
    return {name: check(BY_NAME[name], folder) for name, folder in found.items()}


def table(results: dict[str, dict[str, Outcome]]) -> str:
    """The Markdown table of the docs: family x feature, each cell works / refuses (why)."""
    lines = ["| family | " + " | ".join(FEATURES) + " |", "|---" * (len(FEATURES) + 1) + "|"]
    notes: dict[str, int] = {}  # message -> its number (one number per distinct message)
    for name, outcomes in results.items():
        cells = []
        for feature in FEATURES:
            o = outcomes[feature]
            if o.status == "refuses":
                detail = o.detail.replace(str(FOLDER_OF.get(name, "")), name)
                number = notes.setdefault(detail, len(notes) + 1)
                cells.append(f"refuses [{number}]")
            else:
                cells.append(o.status if o.status != "fails" else f"FAILS: {o.detail}")
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    lines.append("")
    lines += [f"{i}. {text}" for text, i in notes.items()]
    return "\n".join(lines)


def write_doc(results: dict[str, dict[str, Outcome]], path: Path) -> None:
    """docs/model-families.md: what each feature does on a tiny model of each family."""
    works = sum(o.status == "works" for r in results.values() for o in r.values())
    refuses = sum(o.status == "refuses" for r in results.values() for o in r.values())
    fails = sum(o.status == "fails" for r in results.values() for o in r.values())
    head = (
        "# Model families\n\n"
        "Generated by `python -m txviz families --out docs/model-families.md` (the same checks as "
        "`tests/families`). Each family is a tiny random model (2 layers, hidden 32) saved as a folder "
        "with a tokenizer or image processor and loaded like a user's folder. *works*: attention equals "
        "the model's own eager attention (`output_attentions=True`) and the output its own forward, to "
        f"{TOL:g}; *refuses*: a clear message, numbered below; *-*: the feature does not fit the model's "
        f"kind.\n\n{works} work, {refuses} refuse, {fails} fail.\n\n"
    )
    Path(path).write_text(head + table(results) + "\n")
