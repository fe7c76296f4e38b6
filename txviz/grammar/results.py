"""What the page shows of the grammar model: greedy outputs, held-out exact match beside baselines,
and the cross-attention of each output token over the source."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

import numpy as np
import torch

from txviz.grammar import language as lang
from txviz.grammar.model import GrammarModel, padded


@torch.no_grad()
def greedy(model: GrammarModel, sources: list[tuple[str, ...]], batch: int = 200) -> list[list[str]]:
    """Each source's output, written one token at a time (the likeliest) until <end>."""
    outputs = []
    for at in range(0, len(sources), batch):
        source = padded([lang.ids(s) for s in sources[at : at + batch]])
        memory = model.encode(source)
        tokens = torch.full((len(source), 1), lang.START)
        for _ in range(lang.MAX_TARGET):
            logits = model.decode(memory, source, tokens)[:, -1]
            logits[:, [lang.PAD, lang.START]] = float("-inf")
            tokens = torch.cat([tokens, logits.argmax(-1, keepdim=True)], 1)
            if (tokens == lang.END).any(1).all():
                break
        outputs += [lang.words_of(row) for row in tokens[:, 1:].tolist()]
    return outputs


def exact_match(outputs: list[list[str]], examples: list[lang.Example]) -> float:
    return float(np.mean([list(o) == list(e.target) for o, e in zip(outputs, examples, strict=True)]))


def pronoun(words: list[str]) -> str | None:
    """The pronoun a translation chose: the word after "qu'", if it is il or elle."""
    for before, word in zip(words, words[1:], strict=False):
        if before == "qu'" and word in ("il", "elle"):
            return word
    return None


def baselines(training: list[lang.Example], held_out: dict[str, list[lang.Example]]) -> dict[str, dict]:
    """Each task's baseline on its held-out sentences, named, with its exact match.

    parse: the commonest tree of the training draws; tag: each word's commonest training tag;
    count: the commonest count; translate: word-for-word from training pairs with always "il",
    scored on the pronoun (and exact match with the subject's gender, a second baseline)."""
    by_task: dict[str, list] = {}
    for e in training:
        by_task.setdefault(e.task, []).append(e)
    commonest_tree = Counter(e.target for e in by_task["parse"]).most_common(1)[0][0]
    word_tags: dict[str, Counter] = {}
    for e in by_task["tag"]:
        for w, t in zip(e.source[1:], e.target, strict=True):
            word_tags.setdefault(w, Counter())[t] += 1
    commonest_count = Counter(e.target for e in by_task["count"]).most_common(1)[0][0]

    def tagged(e):
        return tuple(word_tags[w].most_common(1)[0][0] if w in word_tags else "NN" for w in e.source[1:])

    out = {
        "parse": {"baseline": "the commonest training tree",
                  "exact": _share(e.target == commonest_tree for e in held_out["parse"])},
        "parse (unseen shapes)": {"baseline": "the commonest training tree",
                                  "exact": _share(e.target == commonest_tree for e in held_out["parse (unseen shapes)"])},
        "tag": {"baseline": "each word's commonest training tag",
                "exact": _share(tagged(e) == e.target for e in held_out["tag"])},
        "count": {"baseline": "the commonest count", "exact": _share(e.target == commonest_count for e in held_out["count"])},
    }  # fmt: skip
    genders = [_subject_gender(e) for e in held_out["translate"]]
    truth = [pronoun(list(e.target)) for e in held_out["translate"]]
    out["translate"] = {
        "baseline": 'always "il"',
        "pronoun": _share(t == "il" for t in truth),
        "subject's gender pronoun": _share(g == t for g, t in zip(genders, truth, strict=True)),
    }
    return out


def _subject_gender(e: lang.Example) -> str:
    return "il" if lang.ANIMATES[e.source[2]][1] == "m" else "elle"


def _share(flags) -> float:
    flags = list(flags)
    return round(sum(flags) / len(flags), 4)


def evaluate(model: GrammarModel, held_out: dict[str, list[lang.Example]]) -> dict[str, dict]:
    """Exact match per held-out set; for translation also the pronoun's accuracy and where it looks."""
    out = {}
    for name, examples in held_out.items():
        outputs = greedy(model, [e.source for e in examples])
        out[name] = {"exact": round(exact_match(outputs, examples), 4), "n": len(examples)}
        if name.startswith("parse"):
            out[name]["balanced"] = _share(lang.balanced(o) for o in outputs)
        if name == "translate":
            truth = [pronoun(list(e.target)) for e in examples]
            out[name]["pronoun"] = _share(pronoun(o) == t for o, t in zip(outputs, truth, strict=True))
            out[name]["pronoun_attention"] = pronoun_attention(model, examples)
    return out


# ---- cross-attention ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Attended:
    """One source through the model: its output and every cross-attention weight of the forced pass."""

    source: list[str]
    output: list[str]
    cross: np.ndarray  # (decoder layer, head, output token, source token); rows sum to 1
    queries: np.ndarray  # (layer, head, output token, head dim)
    keys: np.ndarray  # (layer, head, source token, head dim)


@torch.no_grad()
def attend(model: GrammarModel, source: tuple[str, ...], output: list[str] | None = None) -> Attended:
    """The greedy output (or ``output``) and, teacher-forced on it, each output token's cross-attention:
    the row of output token t is the step that wrote it (its decoder input is the token before)."""
    output = greedy(model, [source])[0] if output is None else list(output)
    ids = torch.tensor([lang.ids(source)])
    inputs = torch.tensor([[lang.START, *lang.ids(output)]])
    records: dict = {}
    model.decode(model.encode(ids), ids, inputs, records=records)
    n = len(output)
    cross = records["cross"]
    return Attended(
        list(source),
        output,
        torch.stack([r["weights"][0, :, :n] for r in cross]).numpy(),
        torch.stack([r["queries"][0, :, :n] for r in cross]).numpy(),
        torch.stack([r["keys"][0] for r in cross]).numpy(),
    )


def pronoun_attention(model: GrammarModel, examples: list[lang.Example]) -> dict:
    """Over held-out translations, the cross-attention of the step writing the pronoun (forced on the
    reference): its weight on the antecedent's noun phrase ("the" and the noun), on the other noun
    phrase and on the adjective that decides between them; per decoder layer (mean over heads), and
    for the head whose weight on the antecedent's phrase most exceeds its weight on the other's."""
    parts: dict[str, list] = {"antecedent": [], "other noun": [], "adjective": []}
    for e in examples:
        pair = _pair(e)
        seen = attend(model, e.source, list(e.target))
        row = seen.cross[:, :, pair.pronoun_index()]  # (layer, head, source)
        animal, place = e.source.index(pair.animal, 1), e.source.index(pair.place, 3)
        right, wrong = (animal, place) if pair.antecedent == pair.animal else (place, animal)
        parts["antecedent"].append(row[..., right - 1 : right + 1].sum(-1))
        parts["other noun"].append(row[..., wrong - 1 : wrong + 1].sum(-1))
        parts["adjective"].append(row[..., len(e.source) - 1])
    means = {k: np.mean(v, 0) for k, v in parts.items()}  # (layer, head)
    layer, head = np.unravel_index(
        int(np.argmax(means["antecedent"] - means["other noun"])), means["adjective"].shape
    )
    return {
        "layer_mean": {k: v.mean(1).round(4).tolist() for k, v in means.items()},
        "best_head": {"layer": int(layer), "head": int(head),
                      **{k: round(float(v[layer, head]), 4) for k, v in means.items()}},
    }  # fmt: skip


def _pair(e: lang.Example) -> lang.Pair:
    return lang.read_pair(" ".join(e.source[1:]))
