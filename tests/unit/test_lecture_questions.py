"""Questions: the truth of each model question kind against an independent computation on a tiny model,
scoring and tallies."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest
import torch
from tiny_models import tiny_model, word_tokenizer

from txviz.core.errors import UserError
from txviz.lecture.questions import (
    KINDS,
    NUMBER,
    AnswerForm,
    Question,
    Truth,
    choices,
    fields,
    is_right,
    need,
    question_from,
    register,
    tally,
    text_tokens,
    truth,
    truth_label,
)
from txviz.models import LoadedModel

WORDS = ["the", "cat", "sat", "on", "mat", "it", "was", "warm", "dog"]
TEXT = "the cat sat on the mat it was warm"


@pytest.fixture(scope="module")
def tok():
    return word_tokenizer(WORDS)


@pytest.fixture(scope="module")
def bert(tok):
    return LoadedModel("tiny-bert", "encoder", tiny_model("bert", len(tok)), tok, None, "cpu")


@pytest.fixture(scope="module")
def gpt2(tok):
    return LoadedModel("tiny-gpt2", "decoder", tiny_model("gpt2", len(tok), capture=False), tok, None, "cpu")


def eager_row(loaded, layer: int, head: int, query: int) -> np.ndarray:
    """The head's row from the model's own eager attention, not the capture function."""
    ids = loaded.tokenizer(TEXT, return_tensors="pt")["input_ids"]
    loaded.model.set_attn_implementation("eager")
    try:
        with torch.no_grad():
            out = loaded.model(input_ids=ids, output_attentions=True)
    finally:
        loaded.model.set_attn_implementation("txviz")
    return out.attentions[layer][0, head, query].double().numpy()


def attends(**extra):
    return question_from(
        {"kind": "attends_to", "prompt": "Where?", "text": TEXT, "layer": 1, "head": 2} | extra
    )


def test_attends_to_is_the_heads_largest_weight_in_the_word_row(bert):
    question = attends(word="it")
    got = truth(question, bert)
    query = 1 + TEXT.split().index("it")  # after [CLS]
    row = eager_row(bert, 1, 2, query)
    assert got.query == query
    np.testing.assert_allclose(got.row, row, atol=1e-5)
    assert got.value == int(np.argmax(row))
    assert is_right(question, got.value, got) and not is_right(question, (got.value + 1) % len(row), got)


def test_attends_to_without_specials_skips_cls_and_sep(bert):
    got = truth(attends(word=3, hide_special=True), bert)
    row = eager_row(bert, 1, 2, 3)
    assert got.value == 1 + int(np.argmax(row[1:-1]))
    assert got.row[0] == 0 and got.row[-1] == 0 and np.isclose(got.row.sum(), 1)


def test_entropy_is_the_rows_shannon_entropy(bert):
    question = question_from(
        {"kind": "number", "prompt": "H?", "text": TEXT, "measure": "entropy", "layer": 0, "head": 1,
         "word": "cat", "low": 0, "high": 3, "tolerance": 0.1}
    )  # fmt: skip
    row = eager_row(bert, 0, 1, 2)
    expected = -(row * np.log(row)).sum()
    got = truth(question, bert)
    assert got.value == pytest.approx(expected, abs=1e-5)
    assert is_right(question, expected + 0.09, got) and not is_right(question, expected + 0.2, got)


def own_next(loaded, text: str) -> torch.Tensor:
    ids = loaded.tokenizer(text, return_tensors="pt")["input_ids"]
    with torch.no_grad():
        return loaded.model(input_ids=ids).logits[0, -1].softmax(-1)


def test_next_token_is_the_likeliest_next_token(gpt2):
    question = question_from({"kind": "next_token", "prompt": "Next?", "text": "the cat sat on the"})
    probs = own_next(gpt2, "the cat sat on the")
    best = gpt2.tokenizer.convert_ids_to_tokens(int(probs.argmax()))
    got = truth(question, gpt2)
    assert got.value == best
    four = choices(question, gpt2)
    assert len(four) == 4 and best in four and list(four) == sorted(four, key=str.lower)
    top4 = set(gpt2.tokenizer.convert_ids_to_tokens(probs.topk(4).indices.tolist()))
    assert set(four) == top4
    assert is_right(question, f" {best.upper()} ", got)


def test_probability_of_a_token_is_the_softmax_of_its_logit(gpt2):
    question = question_from(
        {"kind": "number", "prompt": "P?", "text": "the cat sat on the", "measure": "probability",
         "target": "mat", "low": 0, "high": 1, "tolerance": 0.05}
    )  # fmt: skip
    probs = own_next(gpt2, "the cat sat on the")
    assert truth(question, gpt2).value == pytest.approx(float(probs[WORDS.index("mat") + 4]), abs=1e-6)


def test_a_question_the_model_cannot_answer_says_why(bert, gpt2):
    with pytest.raises(UserError, match="layer 5"):
        truth(attends(word="it", layer=5), bert)
    with pytest.raises(UserError, match="no token 'zebra'"):
        truth(attends(word="zebra"), bert)
    with pytest.raises(UserError, match="encoder"):
        truth(question_from({"kind": "next_token", "prompt": "Next?", "text": TEXT}), bert)


def test_choice_truth_comes_from_the_file_and_tallies_every_option():
    question = question_from({"kind": "choice", "prompt": "Why?", "options": ["a", "b", "c"], "answer": "b"})
    got = truth(question)
    assert got.value == 1 and got.label == "b"
    assert is_right(question, 1, got) and not is_right(question, 2, got) and not is_right(question, True, got)
    assert tally(question, [0, 1, 1, 7, "x", None]) == {"a": 1, "b": 2, "c": 0}


def test_number_tally_bins_the_range_and_drops_what_is_outside():
    question = question_from(
        {"kind": "number", "prompt": "P?", "text": "x", "measure": "probability", "target": "x",
         "low": 0, "high": 1, "tolerance": 0.1}
    )  # fmt: skip
    counts = tally(question, [0.0, 0.1, 0.5, 1.0, 1.5, float("nan"), "x"])
    assert list(counts.values()) == [2, 0, 1, 0, 1] and sum(counts.values()) == 4


def test_token_tallies_name_the_tokens(bert):
    question = attends(word="it")
    got = truth(question, bert)
    assert tally(question, [2, 2, 3, -1, "2"], got) == {f"2: {got.tokens[2]}": 2, f"3: {got.tokens[3]}": 1}
    next_q = question_from({"kind": "next_token", "prompt": "Next?", "text": "x"})
    assert tally(next_q, ["Mat", " mat", "dog", 3]) == {"mat": 2, "dog": 1}


@pytest.fixture
def token_count():
    """A kind no lecture has, registered for one test: one class, nothing else changed."""

    @dataclass(frozen=True)
    class TokenCount(Question):
        """How many tokens the model makes of the text, guessed up to ``most``."""

        most: int = 20

        @classmethod
        def check(cls, data: dict) -> None:
            need(data, ("text",), "token_count", "the text")

        @property
        def answer_form(self) -> AnswerForm:
            return AnswerForm(NUMBER, 0, self.most)

        def truth(self, loaded=None) -> Truth:
            count = len(text_tokens(loaded, self))
            return Truth("token_count", count, str(count))

        def is_right(self, answer: Any, truth: Truth) -> bool:
            return self.label(answer, ()) == truth.label

        def label(self, answer: Any, tokens: tuple[str, ...]) -> str | None:
            ok = isinstance(answer, int | float) and not isinstance(answer, bool) and 0 <= answer <= self.most
            return str(round(answer)) if ok else None

    register("token_count")(TokenCount)
    try:
        yield TokenCount
    finally:
        del KINDS["token_count"]


def test_a_kind_registered_in_one_class_is_read_answered_and_tallied(token_count, bert):
    question = question_from({"kind": "token_count", "prompt": "How many?", "text": TEXT, "most": "30"})
    assert type(question) is token_count and question.most == 30 and "most" in fields()
    assert question.answer_form == AnswerForm(NUMBER, 0, 30)
    got = truth(question, bert)
    assert got.value == len(TEXT.split()) + 2  # [CLS] and [SEP]
    assert is_right(question, float(got.value), got) and not is_right(question, None, got)
    assert tally(question, [11, 11.2, 3, 31, "x", True], got) == {"11": 2, "3": 1}
    assert truth_label(question, got) == "11"
    with pytest.raises(UserError, match="no answer rule"):
        question_from({"kind": "token_count", "prompt": "How many?"})
    with pytest.raises(UserError, match="stores an answer"):
        question_from({"kind": "token_count", "prompt": "How many?", "text": TEXT, "answer": 11})


def test_a_kind_unregistered_is_refused_again():
    with pytest.raises(
        UserError, match="kind must be one of attends_to, next_token, number, choice, not 'token_count'"
    ):
        question_from({"kind": "token_count", "prompt": "How many?", "text": TEXT})
