"""The model's own answer by scoring, and per-sentence verdicts of a head and the model."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from txviz.core.errors import require_kind

if TYPE_CHECKING:
    from txviz.models import LoadedModel
from txviz.coref.pairs import CorefInputError, CorefPair, split_words
from txviz.coref.spans import PairAttention

ANSWER_METHODS = ("substitution", "question")


@dataclass(frozen=True)
class ModelAnswer:
    """What a language model prefers for the pronoun: a log-probability score per candidate."""

    sentence: str
    candidates: tuple[str, str]
    log_probs: tuple[float, float]  # the method's log-probability score of each candidate
    method: str = "substitution"

    @property
    def probabilities(self) -> tuple[float, float]:
        """The two scores renormalised over the two candidates."""
        top = max(self.log_probs)
        e = [math.exp(lp - top) for lp in self.log_probs]
        return (e[0] / sum(e), e[1] / sum(e))

    @property
    def choice(self) -> int:
        return int(self.log_probs[1] > self.log_probs[0])


def answer_question(sentence: str, pronoun: str, first: str, second: str) -> str:
    """The question put to the model, naming the candidates in the given order."""
    return (
        f'Sentence: "{sentence}"\n'
        f'In this sentence, what does "{pronoun}" refer to: "{first}" or "{second}"? '
        "Answer with one word."
    )


def _prompt_ids(tokenizer, question: str) -> list[int]:
    """The question as one user turn (chat template where the model has one), ready to answer."""
    if getattr(tokenizer, "chat_template", None):
        messages = [{"role": "user", "content": question}]
        ids = tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=True)
        return list(ids["input_ids"] if hasattr(ids, "keys") else ids)
    return list(tokenizer(question + "\nAnswer:")["input_ids"])


def continuation_log_probs(
    loaded: LoadedModel, sequences: Sequence[Sequence[int]], starts: Sequence[int]
) -> list[float]:
    """Per sequence, the summed log-probability of its tokens from position `start` on (one batch)."""
    import torch

    from txviz.core.running import run

    require_kind(loaded, ("decoder",), "score answers by their log-probability")

    width = max(map(len, sequences))
    pad = loaded.tokenizer.pad_token_id if loaded.tokenizer.pad_token_id is not None else 0
    ids = torch.tensor([list(s) + [pad] * (width - len(s)) for s in sequences], device=loaded.device)
    mask = torch.tensor([[1] * len(s) + [0] * (width - len(s)) for s in sequences], device=loaded.device)
    logits = run(
        loaded.model, outputs=("logits",), input_ids=ids, attention_mask=mask
    ).logits  # (N, T, vocab)
    logp = torch.log_softmax(logits.float(), dim=-1).cpu()
    # the token at position t is predicted by the logits at t - 1
    return [
        sum(float(logp[row, t - 1, seq[t]]) for t in range(max(start, 1), len(seq)))
        for row, (seq, start) in enumerate(zip(sequences, starts, strict=True))
    ]


def substituted(sentence: str, pronoun: int, candidate: str) -> tuple[str, int]:
    """The sentence with the pronoun replaced by the candidate, and where the rest begins (chars)."""
    word = split_words(sentence)[pronoun]
    phrase = candidate if candidate[:1].isupper() else f"the {candidate}"  # names take no article
    return sentence[: word.start] + phrase + sentence[word.end :], word.start + len(phrase)


def _question_scores(loaded: LoadedModel, pair: CorefPair, sentence: str) -> tuple[float, float]:
    """Log-probability of each candidate as the answer to the question, mean over both orders."""
    tok, names = loaded.tokenizer, pair.candidate_texts
    sequences, starts = [], []
    for first, second in (names, names[::-1]):
        prompt = _prompt_ids(tok, answer_question(sentence, pair.pronoun_text, first, second))
        for name in names:
            sequences.append(prompt + list(tok(name, add_special_tokens=False)["input_ids"]))
            starts.append(len(prompt))
    totals = continuation_log_probs(loaded, sequences, starts)
    # rows: (order 1, cand 0), (order 1, cand 1), (order 2, cand 0), (order 2, cand 1)
    return ((totals[0] + totals[2]) / 2, (totals[1] + totals[3]) / 2)


def _substitution_scores(loaded: LoadedModel, pair: CorefPair, sentence: str) -> tuple[float, float]:
    """Log-probability of the words after the pronoun once the pronoun is replaced by each candidate."""
    sequences, starts = [], []
    for name in pair.candidate_texts:
        text, rest = substituted(sentence, pair.pronoun, name)
        enc = loaded.tokenizer(text, return_offsets_mapping=True)
        ids, offsets = list(enc["input_ids"]), enc["offset_mapping"]
        # score only the shared continuation, so both candidates are judged on the same tokens
        first = next(i for i, (s, e) in enumerate(offsets) if e > s and e > rest)
        sequences.append(ids)
        starts.append(first)
    totals = continuation_log_probs(loaded, sequences, starts)
    return (totals[0], totals[1])


def model_answer(
    loaded: LoadedModel, pair: CorefPair, sentence: str, method: str = "substitution"
) -> ModelAnswer:
    """What a decoder prefers for the pronoun in one sentence of the pair."""
    require_kind(loaded, ("decoder",), "be asked which word the pronoun means")
    if method not in ANSWER_METHODS:
        raise CorefInputError(f"Ask the model by {' or '.join(ANSWER_METHODS)}, not '{method}'.")
    score = _substitution_scores if method == "substitution" else _question_scores
    return ModelAnswer(sentence, pair.candidate_texts, score(loaded, pair, sentence), method)


def answers_over_pairs(
    loaded: LoadedModel,
    pairs: Sequence[CorefPair],
    method: str = "substitution",
    progress: Callable[[int, int], None] | None = None,
) -> list[tuple[ModelAnswer, ModelAnswer]]:
    """The model's answer for sentence A and B of every pair."""
    out = []
    for i, pair in enumerate(pairs):
        out.append(
            (
                model_answer(loaded, pair, pair.sentence_a, method),
                model_answer(loaded, pair, pair.sentence_b, method),
            )
        )
        if progress:
            progress(i + 1, len(pairs))
    return out


@dataclass(frozen=True)
class Verdict:
    """One sentence: the right candidate, the one a head attends to more, the one the model says."""

    pair_index: int
    sentence: str  # "A" or "B"
    right: str
    attention_pick: str  # "tie" when the head weighs both the same
    model_pick: str

    @property
    def disagree(self) -> bool:
        return self.attention_pick != self.model_pick

    def describe(self, head: tuple[int, int]) -> str:
        """One line of markdown: what the model prefers and where the head looks."""
        looks = "both the same" if self.attention_pick == "tie" else f"**{self.attention_pick}**"
        agreement = " (they disagree)" if self.disagree else ""
        marked = "" if self.right == "?" else f" ({'right' if self.model_pick == self.right else 'wrong'})"
        return (
            f"the model prefers **{self.model_pick}**{marked}; head L{head[0]} H{head[1]} looks more at "
            f"{looks}{agreement}."
        )


def head_readings(pa: PairAttention, head: tuple[int, int]) -> list[str]:
    """Per sentence, one line of markdown: the candidate one head looks at more, against the answer."""
    lines = []
    for name, shares, right in pa.sentences:
        pick = pa.head_pick(shares, head)
        looks = "both candidates the same" if pick is None else f"**{pa.candidates[pick]}**"
        if right is None:
            verdict = "no right answer marked"
        else:
            means = f"the pronoun means {pa.candidates[right]}"
            verdict = (
                f"a tie; {means}" if pick is None else f"{'right' if pick == right else 'wrong'}: {means}"
            )
        lines.append(f"Sentence {name}: head L{head[0]} H{head[1]} looks more at {looks} ({verdict}).")
    return lines


def verdicts(
    pair_attentions: Sequence[PairAttention],
    answers: Sequence[tuple[ModelAnswer, ModelAnswer]],
    head: tuple[int, int],
) -> list[Verdict]:
    """Per sentence, what one head's attention and the model's answer pick."""
    out = []
    for i, (pa, pair_answers) in enumerate(zip(pair_attentions, answers, strict=True)):
        for (name, shares, right), answer in zip(pa.sentences, pair_answers, strict=True):
            pick = pa.head_pick(shares, head)
            out.append(
                Verdict(
                    pair_index=i,
                    sentence=name,
                    right=pa.candidates[right] if right is not None else "?",
                    attention_pick="tie" if pick is None else pa.candidates[pick],
                    model_pick=pa.candidates[answer.choice],
                )
            )
    return out


@dataclass(frozen=True)
class SetComparison:
    """One head's attention against the model's answer over the whole set of pairs."""

    head: tuple[int, int]
    head_accuracy: float  # share of sentences where the head attends more to the right one
    model_accuracy: float  # share of sentences the model answers right
    agreement: float  # share of sentences where the head's pick equals the model's
    rows: tuple[dict, ...]  # the sentences where they disagree, for a table

    @property
    def sentence(self) -> str:
        layer, head = self.head
        return (
            f"Over the set, the model answers {self.model_accuracy:.0%} of sentences right and head "
            f"L{layer} H{head} looks more at the right candidate in {self.head_accuracy:.0%}; "
            f"they pick the same candidate in {self.agreement:.0%} of sentences."
        )


def compare_over_set(
    pair_attentions: Sequence[PairAttention],
    answers: Sequence[tuple[ModelAnswer, ModelAnswer]],
    head: tuple[int, int],
) -> SetComparison:
    """Where a head's attention and the model's answer agree, and where they disagree."""
    found = verdicts(pair_attentions, answers, head)
    texts = [(a.sentence, b.sentence) for a, b in answers]
    rows = tuple(
        {
            "pair": v.pair_index + 1,
            "sentence": texts[v.pair_index][v.sentence == "B"],
            "right": v.right,
            "model says": v.model_pick,
            "head looks at": v.attention_pick,
        }
        for v in found
        if v.disagree
    )
    return SetComparison(
        head=head,
        # a tie is half right, as in score_heads
        head_accuracy=float(
            np.mean([0.5 if v.attention_pick == "tie" else v.attention_pick == v.right for v in found])
        ),
        model_accuracy=float(np.mean([v.model_pick == v.right for v in found])),
        agreement=float(np.mean([not v.disagree for v in found])),
        rows=rows,
    )
