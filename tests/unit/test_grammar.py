"""The grammar's generator, its split, and the grammar model's attention, on a fresh random model."""

import math
import random

import numpy as np
import pytest
import torch

from txviz.grammar import language as lang
from txviz.grammar import results
from txviz.grammar.model import GrammarConfig, GrammarModel


def test_every_drawn_tree_balances_and_is_the_grammars_own_parse():
    rng = random.Random(7)
    for _ in range(2000):
        tree = lang.random_tree(rng)
        brackets = tree.brackets()
        assert lang.balanced(brackets)
        assert lang.parse(tree.words()) == tree  # the reader finds the tree the generator drew
        assert [b for b in brackets if not b.startswith("(") and b != ")"] == lang.tags(tree.words())
        assert len(tree.words()) + 1 <= lang.MAX_SOURCE and len(brackets) + 1 <= lang.MAX_TARGET


def test_a_tree_by_hand():
    words = ["the", "old", "dog", "from", "the", "barn", "chased", "a", "cat", "in", "the", "park"]
    assert " ".join(lang.parse(words).brackets()) == (
        "(S (NP DT JJ NN (PP IN (NP DT NN ) ) ) (VP VBD (NP DT NN ) (PP IN (NP DT NN ) ) ) )"
    )
    assert lang.noun_count(words) == "4"
    assert not lang.balanced(["(S", ")", ")"]) and not lang.balanced(["(S"]) and not lang.balanced([])
    assert not lang.balanced(["(S", ")", "(S", ")"])  # two trees
    with pytest.raises(lang.GrammarInputError):
        lang.parse(["the", "dog", "chased"])


def test_it_takes_the_gender_of_the_noun_the_adjective_fits():
    tired = lang.read_pair("The animal did not cross the street because it was tired.")
    wide = lang.read_pair("the animal did not cross the street because it was wide")
    assert lang.french_text(tired.french()) == "l'animal n'a pas traversé la rue parce qu'il était fatigué"
    assert lang.french_text(wide.french()) == "l'animal n'a pas traversé la rue parce qu'elle était large"
    cow = lang.read_pair("the cow liked the bridge because it was hungry")
    assert lang.french_text(cow.french()) == "la vache a aimé le pont parce qu'elle était affamée"
    assert cow.antecedent == "cow" and tired.antecedent == "animal" and wide.antecedent == "street"
    assert results.pronoun(cow.french()) == "elle" and cow.french()[cow.pronoun_index()] == "elle"
    with pytest.raises(lang.GrammarInputError):
        lang.read_pair("the street did not cross the animal because it was tired")


def test_held_out_pairs_and_shapes_are_never_trained_on():
    split = lang.Split(0, 60)
    assert len(split.shapes) == 12
    drawn = [split.draw(task) for task in lang.TASKS for _ in range(300)]
    for e in drawn:
        if e.task == "translate":
            assert (e.source[2], e.source[-6]) not in split.animal_place
        else:
            words = list(e.source[1:])
            tree = lang.parse(words)
            assert tree.shape() not in split.shapes
            assert lang._subject_verb(tree) not in split.subject_verb
    held = split.held_out_examples()
    assert all(not split.trains_on(lang.parse(list(e.source[1:]))) for e in held["parse"])
    assert all(lang.parse(list(e.source[1:])).shape() in split.shapes for e in held["parse (unseen shapes)"])
    assert all(not split.trains_on(lang.read_pair(" ".join(e.source[1:]))) for e in held["translate"])
    again = lang.Split(0, 60).held_out_examples()  # the seed fixes the split
    assert again == held


def test_baselines_count_what_they_say():
    split = lang.Split(0, 40)
    held = split.held_out_examples()
    training = [split.draw(t) for t in lang.TASKS for _ in range(200)]
    base = results.baselines(training, held)
    truth = [results.pronoun(list(e.target)) for e in held["translate"]]
    assert base["translate"]["pronoun"] == pytest.approx(truth.count("il") / len(truth), abs=1e-4)
    assert base["tag"]["exact"] == 1.0  # every word has one tag in this grammar: a strong baseline
    counts = [e.target for e in training if e.task == "count"]
    commonest = max(set(counts), key=counts.count)
    assert base["count"]["exact"] == pytest.approx(
        np.mean([e.target == commonest for e in held["count"]]), abs=1e-4
    )


@pytest.fixture(scope="module")
def tiny():
    torch.manual_seed(0)
    return GrammarModel(GrammarConfig(d_model=16, heads=2, encoder_layers=1, decoder_layers=2)).eval()


def test_cross_attention_rows_sum_to_one_and_match_a_hand_computation(tiny):
    source = (
        "translate:",
        *["the", "animal", "did", "not", "cross", "the", "street", "because", "it", "was", "tired"],
    )
    output = lang.read_pair(" ".join(source[1:])).french()
    seen = results.attend(tiny, source, output)
    assert seen.cross.shape == (2, 2, len(output), len(source))
    assert np.allclose(seen.cross.sum(-1), 1, atol=1e-6)
    # one head by hand: q and k from the block's own projections of what it read, softmax(q k / sqrt(d))
    ids = torch.tensor([lang.ids(source)])
    records: dict = {}
    with torch.no_grad():
        memory = tiny.encode(ids)
        tiny.decode(memory, ids, torch.tensor([[lang.START, *lang.ids(output)]]), records=records)
    layer, head = 1, 1
    cross = tiny.decoder[layer].cross
    record = records["cross"][layer]
    assert torch.allclose(record["memory"], memory)
    dh = cross.head_dim
    rows = slice(head * dh, (head + 1) * dh)
    q = record["input"][0] @ cross.q.weight[rows].T + cross.q.bias[rows]
    k = memory[0] @ cross.k.weight[rows].T + cross.k.bias[rows]
    scores = (q @ k.T).detach().numpy() / math.sqrt(dh)
    by_hand = np.exp(scores - scores.max(1, keepdims=True))
    by_hand /= by_hand.sum(1, keepdims=True)
    assert np.allclose(seen.cross[layer, head], by_hand[: len(output)], atol=1e-6)
    assert np.allclose(seen.queries[layer, head], q.detach().numpy()[: len(output)], atol=1e-6)
    assert np.allclose(seen.keys[layer, head], k.detach().numpy(), atol=1e-6)


def test_padding_gets_no_cross_attention_and_greedy_stops(tiny):
    sources = [("count:", "a", "dog", "slept"), ("count:", "the", "old", "dog", "from", "the", "barn", "ran")]
    records: dict = {}
    from txviz.grammar.model import padded

    ids = padded([lang.ids(s) for s in sources])
    with torch.no_grad():
        tiny.decode(tiny.encode(ids), ids, torch.full((2, 1), lang.START), records=records)
    weights = records["cross"][0]["weights"]
    assert float(weights[0, :, :, 4:].abs().max()) == 0 and torch.allclose(weights.sum(-1), torch.ones(1))
    outputs = results.greedy(tiny, sources)
    assert all(len(o) <= lang.MAX_TARGET and all(w in lang.INDEX for w in o) for o in outputs)
    assert results.exact_match([["1"], ["2"]], [lang.Example("count", s, ("1",)) for s in sources]) == 0.5
