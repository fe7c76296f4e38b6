"""One error type and one message style for a model of the wrong kind, whichever function is called."""

import inspect
import pkgutil
from types import SimpleNamespace

import pytest
from PIL import Image

import txviz
from txviz.core.errors import KIND_SAYS, UserError, WrongModelKind, require_kind
from txviz.core.tracing import trace_text
from txviz.generation.loop import GenerationRequest, generate
from txviz.seq2seq.decoding import decode
from txviz.vision.runs import trace_image


def fake(kind: str) -> SimpleNamespace:
    """A model of ``kind`` that fails loudly if anything past the kind check touches it."""
    return SimpleNamespace(name=f"fake-{kind}", kind=kind, model=None, tokenizer=None, processor=None)


CALLS = {
    "trace_text": (lambda m: trace_text(m, "some text"), ("encoder", "decoder")),
    "trace_image": (lambda m: trace_image(m, Image.new("RGB", (8, 8))), ("vision",)),
    "decode": (lambda m: decode(m, "a source"), ("encoder-decoder",)),
    "generate": (lambda m: next(generate(m, GenerationRequest("a prompt"))), ("decoder",)),
}


@pytest.mark.parametrize("function", list(CALLS))
@pytest.mark.parametrize("kind", list(KIND_SAYS))
def test_every_run_refuses_a_wrong_kind_with_one_error_and_style(function, kind):
    call, accepted = CALLS[function]
    if kind in accepted:
        return
    with pytest.raises(WrongModelKind) as caught:
        call(fake(kind))
    message = str(caught.value)
    assert (
        message.startswith(f"fake-{kind} is a")
        and f" {kind} model: {KIND_SAYS[kind]}, so it cannot " in message
    )
    assert " or ".join(f"an {k}" if k[0] in "aeiou" else f"a {k}" for k in accepted) + " model" in message
    assert isinstance(caught.value, UserError) and isinstance(caught.value, ValueError)


def test_pages_for_the_other_kinds_are_named():
    with pytest.raises(
        WrongModelKind, match=r"Choose an encoder or a decoder model, or open the Vision Transformer"
    ):
        require_kind(fake("vision"), ("encoder", "decoder"), "read text")
    with pytest.raises(WrongModelKind, match=r"Choose a decoder model\.$"):
        require_kind(fake("encoder"), ("decoder",), "generate text")
    require_kind(fake("decoder"), ("encoder", "decoder"), "read text")  # accepted: no error


def test_every_user_error_class_derives_from_user_error():
    """Each topic's own error class (BpeInputError, CorefInputError, ...) is a UserError."""
    import importlib

    found = {}
    for info in pkgutil.walk_packages(txviz.__path__, "txviz."):
        if info.name.startswith(("txviz.app", "txviz.bench", "txviz.training")) or info.name.endswith(
            "__main__"
        ):
            continue
        module = importlib.import_module(info.name)
        for name, cls in inspect.getmembers(module, inspect.isclass):
            if cls.__module__ == info.name and issubclass(cls, ValueError):
                found[name] = cls
    assert {"CorefInputError", "GenerationError", "MaskError", "BpeInputError", "ModelLoadError"} <= set(
        found
    )
    assert all(issubclass(cls, UserError) for cls in found.values()), found
