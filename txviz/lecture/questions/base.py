"""What every question has: its shared fields, the registry of kinds, the answer forms the app draws, the
truth the reveal shows and the helpers the kinds share. A kind is one class in its own module."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np
import torch

from txviz.core.candidates import Candidates
from txviz.core.errors import UserError, require_kind
from txviz.core.running import run
from txviz.core.tokens import readable_tokens
from txviz.core.tracing import encode, trace_text

N_CANDIDATES = 4  # a next-token question offers four tokens to choose among

# Answer shapes: the widget an answer needs, drawn by the app without knowing the kind.
TOKEN = "token"  # click one of the offered tokens (empty ones cannot be clicked); the answer is its index
TYPED_TOKEN = "typed_token"  # pick one of the offered tokens or type another; the answer is its text
NUMBER = "number"  # a slider over the form's range; the answer is a float
OPTION = "option"  # one of the offered options; the answer is its index


@dataclass(frozen=True)
class AnswerForm:
    """The answer widget a question needs, as plain data: its shape and, for a number, its range."""

    shape: str
    low: float = 0.0
    high: float = 1.0


@dataclass(frozen=True, eq=False)
class Truth:
    """What the live model (or, for a choice, the file) says, with what explains it."""

    kind: str
    value: Any  # token index (attends_to), token text (next_token), float (number), option (choice)
    label: str  # the value as the reveal says it
    tokens: tuple[str, ...] = ()  # attends_to / entropy: the text's tokens
    row: np.ndarray | None = None  # attends_to / entropy: the head's row for the query token
    query: int | None = None  # that token's index
    candidates: Candidates | None = None  # next_token / probability: the likeliest next tokens


def as_given(default: Any = "") -> Any:
    """A field read from the file unconverted (a word that is a token's text or its index)."""
    return field(default=default, metadata={"as_given": True})


@dataclass(frozen=True)
class Question:
    """The fields every question has; a kind's class adds its own fields and says how it is answered."""

    kind: str
    prompt: str
    text: str = ""  # what the model reads (model questions)
    model: str = ""  # the model that answers; "" = the lecture's model
    explain: str = ""  # said at reveal

    asks_model: ClassVar[bool] = True  # False: the file holds the truth, no model is loaded for it
    choices_need_model: ClassVar[bool] = False  # its choices come from the model (cached for everyone)
    marker: ClassVar[str] = "circle"  # its symbol in a lecture's outline

    @classmethod
    def check(cls, data: dict) -> None:
        """Raise a UserError when the file's mapping lacks what this kind's answer rule needs."""

    @classmethod
    def build(cls, values: dict[str, Any]) -> Question:
        """The question from checked, converted values (those of other kinds' fields are dropped)."""
        own = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in values.items() if k in own})

    @property
    def answer_form(self) -> AnswerForm:
        """The widget its answer needs."""
        raise NotImplementedError(f"the {self.kind} question says no answer form")

    def truth(self, loaded=None) -> Truth:
        """The answer now, from the live model (or the file)."""
        raise NotImplementedError(f"the {self.kind} question says no truth")

    def choices(self, loaded=None) -> tuple[str, ...]:
        """What the asker offers to choose among (none for a number)."""
        return ()

    def is_right(self, answer: Any, truth: Truth) -> bool:
        """Whether a given (not None) answer matches the truth; by default the same index."""
        return type(answer) is int and answer == truth.value

    def label(self, answer: Any, tokens: tuple[str, ...]) -> str | None:
        """The tally label of one answer, or None for an answer this question cannot take."""
        raise NotImplementedError(f"the {self.kind} question says no answer labels")

    def bins(self) -> list[str] | None:
        """The tally's labels listed even with no answer, in order; None: the labels given, by count."""
        return None


KINDS: dict[str, type[Question]] = {}  # kind name -> its class, in the order they were registered


def register(kind: str) -> Callable[[type[Question]], type[Question]]:
    """Class decorator: lecture files may name ``kind``, read as this class."""

    def add(cls: type[Question]) -> type[Question]:
        if kind in KINDS:
            raise ValueError(f"question kind {kind!r} is registered twice")
        KINDS[kind] = cls
        return cls

    return add


def fields() -> tuple[str, ...]:
    """Every field a question may have: the shared ones, then each kind's own (a file may give any)."""
    names = [f.name for f in dataclasses.fields(Question)]
    for cls in KINDS.values():
        names += [f.name for f in dataclasses.fields(cls)]
    return tuple(dict.fromkeys(names))


def _fields_by_name() -> dict[str, dataclasses.Field]:
    found: dict[str, dataclasses.Field] = {}
    for cls in (Question, *KINDS.values()):
        for f in dataclasses.fields(cls):
            found.setdefault(f.name, f)
    return found


def number_fields() -> tuple[str, ...]:
    """The fields that hold numbers (an int or a float default)."""
    return tuple(
        name
        for name, f in _fields_by_name().items()
        if isinstance(f.default, int | float) and not isinstance(f.default, bool)
    )


def read_fields(data: dict, kind: str) -> dict[str, Any]:
    """The file's values past kind and prompt, each as its field's default is typed (a flag, a number,
    a tuple of texts, a text) or as given; a UserError when a number is not one."""
    values = {}
    for name, f in _fields_by_name().items():
        if name in ("kind", "prompt") or name not in data:
            continue
        value, default = data[name], f.default
        if f.metadata.get("as_given") or default is None:
            values[name] = value
        elif isinstance(default, bool):
            values[name] = bool(value)
        elif isinstance(default, int | float):
            try:
                values[name] = type(default)(value)
            except (TypeError, ValueError) as error:
                raise UserError(
                    f"the {kind} question's {', '.join(number_fields())} must be numbers ({error})."
                ) from error
        elif isinstance(default, tuple):
            values[name] = tuple(str(o) for o in value or ())
        else:
            values[name] = str(value)
    return values


def need(data: dict, names: tuple[str, ...], kind: str, rule: str) -> None:
    """A UserError naming the answer rule when one of ``names`` is missing or empty."""
    missing = [f for f in names if data.get(f) in (None, "")]
    if missing:
        raise UserError(
            f"the {kind} question has no answer rule: give {rule} (missing {', '.join(missing)})."
        )


def text_tokens(loaded, question: Question) -> tuple[str, ...]:
    """The readable tokens of the question's text under this model (no forward pass)."""
    return readable_tokens(loaded.tokenizer, encode(loaded, question.text).ids)[0]


def find_token(tokens: tuple[str, ...], word: str | int, model: str = "the model") -> int:
    """The index of the question's query token: ``word`` as an index, or the first token reading as it."""
    if isinstance(word, int):
        if not 0 <= word < len(tokens):
            raise UserError(f"token {word} is past the {len(tokens)} tokens {model} makes of the text.")
        return word
    wanted = str(word).strip().lower()
    for i, token in enumerate(tokens):
        if token.strip().lower() == wanted:
            return i
    raise UserError(f"{model} makes no token {word!r} of the text; its tokens are {', '.join(tokens)}.")


def check_head(layer: int, head: int, n_layers: int, n_heads: int, model: str) -> None:
    """A UserError when the model has no such layer or head."""
    if not (0 <= layer < n_layers and 0 <= head < n_heads):
        raise UserError(
            f"the question asks for layer {layer}, head {head}; {model} has {n_layers} layers of {n_heads} heads."
        )


def next_distribution(loaded, text: str) -> torch.Tensor:
    """The model's probabilities of the token after ``text`` (V,), from one pass through the front door."""
    require_kind(loaded, ("decoder",), "predict the next token")
    ids = torch.tensor([encode(loaded, text).ids], device=loaded.device)
    logits = run(loaded.model, outputs=("logits",), input_ids=ids).logits
    return logits[0, -1].float().softmax(-1).cpu()


def same_token(a: str, b: str) -> bool:
    """Whether two tokens read the same, case and surrounding spaces aside."""
    return str(a).strip().lower() == str(b).strip().lower()


def head_row(loaded, text: str, layer: int, head: int, word: str | int):
    """The text's trace, the head's row for the query token ``word`` (float64) and that token's index."""
    trace = trace_text(loaded, text)
    check_head(layer, head, trace.n_layers, trace.n_heads, loaded.name)
    query = find_token(trace.query_tokens, word, loaded.name)
    return trace, np.asarray(trace.head(layer, head)[query], dtype=np.float64), query
