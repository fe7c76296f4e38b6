"""Using an encoder (UDL 12.11): one sentence label read from <cls>, one tag per word from the rest.

The task is made from the project's small grammar (objectives/corpus.py). Each sentence has one
word its other words decide: an animal's sound, the day or month that follows, a number plus or
minus one, a colour, an opposite, a name's pronoun, is/are after a singular or plural animal.
Every sentence appears twice: as it is (true) and with that word swapped for a wrong one of the
same kind (false). The sentence classifier says true or false from the <cls> output; the tagger
says, for every word, "ok" or "wrong" from that word's output. The pairs differ in one word, so
neither can answer from which words are present: both need the word's context.

Limits: a closed vocabulary of 180 words, sentences of at most 10 words, one kind of mistake (a
single swapped word), a grammar whose every fact is a lookup. The encoder is the tiny BERT
pretrained on masked words of the same grammar (tiny-mlm), frozen; the classifier and the tagger
are linear probes (logistic regressions) on its last layer, so what they find, the pretrained
features already held. Held-out sentences are the corpus's own held-out split, which the tiny
BERT never saw either.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass

import numpy as np
import torch

from txviz.core import paths
from txviz.core.capture import CaptureSettings
from txviz.core.errors import UserError, require_kind
from txviz.core.loaded import LoadedModel
from txviz.core.running import run
from txviz.objectives import corpus

ASSETS_FILE = paths.ASSETS / "encoder_tasks" / "probes.json"
SEED = 0
LABELS = ("true", "false")
TAGS = ("ok", "wrong")

SOUNDS = [s for _, s, _ in corpus.ANIMALS.values()]
PLURAL_SOUNDS = [s for _, _, s in corpus.ANIMALS.values()]
PRONOUNS = ("he", "she")
COLOURS = sorted(set(corpus.COLOURS.values()))
OPPOSITE_WORDS = sorted(set(corpus.OPPOSITES) | set(corpus.OPPOSITES.values()))


class EncoderTaskError(UserError):
    """A sentence the encoder tasks cannot read, with a message fit for the user."""


@dataclass(frozen=True)
class Example:
    """A sentence, its label (0 true, 1 false) and one tag per word (0 ok, 1 wrong)."""

    words: tuple[str, ...]
    label: int
    tags: tuple[int, ...]

    @property
    def text(self) -> str:
        return " ".join(self.words)


def decided_word(words: list[str]) -> tuple[int, list[str]]:
    """The position of the word the rest of the sentence decides, and the words of its kind."""
    if words[0] in corpus.NAMES:  # "<name> said that <pronoun> was ..."
        return words.index("said" if "said" in words else "because") + (2 if "said" in words else 1), list(
            PRONOUNS
        )
    last = words[-1]
    for kind in (corpus.DAYS, corpus.MONTHS, corpus.NUMBERS, COLOURS, OPPOSITE_WORDS):
        if last in kind and not (words[0] in ("the", "a") and words[-2] == "the"):
            return len(words) - 1, list(kind)
    for i, word in enumerate(words):
        if word in SOUNDS:
            return i, SOUNDS
        if word in PLURAL_SOUNDS:
            return i, PLURAL_SOUNDS
    if "is" in words or "are" in words:
        return words.index("is" if "is" in words else "are"), ["is", "are"]
    raise ValueError(f"no decided word in {' '.join(words)!r}")


def examples(sentences: list[str], seed: int = SEED) -> list[Example]:
    """Each sentence true, then with its decided word swapped for another of its kind (false)."""
    rng = random.Random(seed)
    out = []
    for sentence in sentences:
        words = sentence.split()
        if "sheep" in words and ("is" in words or "are" in words):
            continue  # "the sheep is" and "the sheep are" are both right: no mistake to make
        position, kind = decided_word(words)
        wrong = list(words)
        wrong[position] = rng.choice([w for w in kind if w != words[position]])
        out.append(Example(tuple(words), 0, (0,) * len(words)))
        out.append(Example(tuple(wrong), 1, tuple(int(i == position) for i in range(len(words)))))
    return out


def train_and_heldout(seed: int = SEED) -> tuple[list[Example], list[Example]]:
    """Examples from the corpus's training and held-out sentences (the tiny BERT's own split)."""
    train, heldout = corpus.train_and_heldout()
    return examples(train, seed), examples(heldout, seed + 1)


@dataclass(frozen=True)
class Features:
    """The frozen encoder's last layer: <cls> per sentence, each word's output, and <cls>'s attention."""

    cls: np.ndarray  # (N, D)
    words: list[np.ndarray]  # per sentence (n_words, D), [CLS] and [SEP] left out
    cls_attention: list[np.ndarray]  # per sentence (layers, heads, T): <cls>'s row, every token


@torch.no_grad()
def features(loaded: LoadedModel, texts: list[str], batch_size: int = 256) -> Features:
    """Run the encoder on each text (through run, attention recorded) and keep what the probes read."""
    require_kind(loaded, ("encoder",), "classify sentences and tag words")
    cls, words, attention = [], [], []
    for start in range(0, len(texts), batch_size):
        batch = texts[start : start + batch_size]
        encoded = loaded.tokenizer(batch, padding=True, return_tensors="pt").to(loaded.device)
        result = run(
            loaded.model,
            CaptureSettings(record={"weights"}),
            ("hidden_states",),
            input_ids=encoded.input_ids,
            attention_mask=encoded.attention_mask,
        )
        last = result.hidden_states[-1].float().cpu().numpy()  # (B, T, D): the encoder's output
        weights = np.stack(
            [result.attention[n][-1].weights[:, :, 0].float().numpy() for n in result.names()], axis=1
        )  # (B, layers, heads, T): the [CLS] query's row in every layer and head
        for i, length in enumerate(encoded.attention_mask.sum(1).tolist()):
            cls.append(last[i, 0])
            words.append(last[i, 1 : length - 1])
            attention.append(weights[i, :, :, :length])
    return Features(np.stack(cls), words, attention)


def majority_accuracy(train: list[Example], heldout: list[Example]) -> float:
    """Baseline: the training set's most common label for every held-out sentence."""
    majority = np.bincount([e.label for e in train], minlength=2).argmax()
    return float(np.mean([e.label == majority for e in heldout]))


def word_tag_baseline(train: list[Example]) -> dict[str, int]:
    """Baseline tagger: each word's most frequent training tag (ties and unseen words: ok)."""
    counts: dict[str, list[int]] = {}
    for example in train:
        for word, tag in zip(example.words, example.tags, strict=True):
            counts.setdefault(word, [0, 0])[tag] += 1
    return {word: int(c[1] > c[0]) for word, c in counts.items()}


def tag_scores(predicted: list[np.ndarray], examples_: list[Example]) -> dict[str, float]:
    """Word accuracy, and the share of false sentences whose tags are all right (the wrong word found alone)."""
    right = [np.asarray(p) == np.asarray(e.tags) for p, e in zip(predicted, examples_, strict=True)]
    false = [r.all() for r, e in zip(right, examples_, strict=True) if e.label == 1]
    return {
        "word_accuracy": float(np.concatenate(right).mean()),
        "false_sentences_exact": float(np.mean(false)),
    }


@dataclass(frozen=True)
class Probes:
    """Two logistic regressions as shipped: weights (classes - 1 or 1, D) and intercepts."""

    sentence_coef: np.ndarray  # (1, D) on <cls>: a positive score means false
    sentence_intercept: np.ndarray  # (1,)
    tag_coef: np.ndarray  # (1, D) on each word's output: a positive score means wrong
    tag_intercept: np.ndarray  # (1,)
    runs: dict  # the measured numbers

    def sentence_false_probability(self, cls: np.ndarray) -> np.ndarray:
        return _sigmoid(cls @ self.sentence_coef[0] + self.sentence_intercept[0])

    def word_wrong_probability(self, words: np.ndarray) -> np.ndarray:
        return _sigmoid(words @ self.tag_coef[0] + self.tag_intercept[0])


def _sigmoid(x: np.ndarray) -> np.ndarray:
    from scipy.special import expit

    return expit(x)


def load_probes(path=ASSETS_FILE) -> Probes:
    """The shipped probes and their measured numbers."""
    data = json.loads(path.read_text())
    return Probes(
        np.array(data["sentence"]["coef"]),
        np.array(data["sentence"]["intercept"]),
        np.array(data["tag"]["coef"]),
        np.array(data["tag"]["intercept"]),
        data["runs"],
    )


@dataclass(frozen=True)
class Reading:
    """One sentence through the frozen encoder and both probes."""

    tokens: tuple[str, ...]  # [CLS], the words, [SEP]
    false_probability: float
    wrong_probability: np.ndarray  # (n_words,)
    cls_attention: np.ndarray  # (layers, heads, T): where <cls> reads from, every token


def read(loaded: LoadedModel, probes: Probes, text: str) -> Reading:
    """Classify one sentence and tag its words; the attention of <cls> while it decides."""
    require_kind(loaded, ("encoder",), "classify sentences and tag words")
    words = text.lower().split()
    if not words:
        raise EncoderTaskError("The sentence is empty: type a sentence of the grammar.")
    vocabulary = set(corpus.vocabulary())
    unknown = sorted({w for w in words if w not in vocabulary})
    if unknown:
        raise EncoderTaskError(
            f"The tiny BERT knows only the grammar's {len(vocabulary)} words; not: {', '.join(unknown[:8])}."
        )
    if len(words) > 14:
        raise EncoderTaskError("The tiny BERT reads at most 14 words (16 tokens with [CLS] and [SEP]).")
    found = features(loaded, [" ".join(words)])
    return Reading(
        tokens=("[CLS]", *words, "[SEP]"),
        false_probability=float(probes.sentence_false_probability(found.cls)[0]),
        wrong_probability=probes.word_wrong_probability(found.words[0]),
        cls_attention=found.cls_attention[0],
    )


EXAMPLE = "the dog meows loudly in the garden"
LIMITS = (
    "Limits: a made-up grammar of 180 words and sentences of at most 10 words, where every fact is a "
    "lookup; one kind of mistake (a single word swapped for another of its kind); a frozen encoder and "
    "linear probes (fine-tuning, which also changes where [CLS] looks, is compared below). Held out: the corpus's "
    "held-out sentences, which the tiny BERT never saw in pretraining either. Trained by `python -m txviz "
    "train encoder_tasks` (fixed seed, one thread); the regularisation of each probe was chosen by "
    "cross-validation on the training sentences only."
)


def score_rows(runs: dict) -> list[dict]:
    """The shipped held-out numbers beside the baselines of the same run."""
    tagger, baseline = runs["tagger"], runs["word_tag_baseline"]
    return [
        {
            "task": "sentence true or false, from [CLS]",
            "probe (held out)": runs["sentence_accuracy"],
            "baseline": runs["majority_accuracy"],
            "baseline is": "the training set's most common label",
        },
        {
            "task": "each word ok or wrong (word accuracy)",
            "probe (held out)": tagger["word_accuracy"],
            "baseline": baseline["word_accuracy"],
            "baseline is": "each word's most frequent training tag",
        },
        {
            "task": "false sentences with every tag right (the wrong word found, alone)",
            "probe (held out)": tagger["false_sentences_exact"],
            "baseline": baseline["false_sentences_exact"],
            "baseline is": "each word's most frequent training tag",
        },
    ]
