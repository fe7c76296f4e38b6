"""Marking a typed sentence by word: the pronoun and candidates follow the words, not their positions."""

from __future__ import annotations

from txviz.coref.marking import find_marking

TROPHY = "The trophy didn't fit in the suitcase because it was too big."


def test_words_chosen_before_are_found_where_they_now_are():
    found = find_marking(
        "Yesterday the animal didn't cross the street because it was tired.", "it", ["animal", "street"]
    )
    assert (found.pronoun, found.candidates, found.problems) == (8, (2, 6), ())


def test_new_words_are_guessed_from_determiners_and_names():
    assert find_marking(TROPHY, "it", ["animal", "street"], changed=[11]).candidates == (1, 6)
    names = find_marking("Anna thanked Maria because she had helped.", "it", [])
    assert (names.pronoun, names.candidates) == (4, (0, 2))


def test_what_cannot_be_found_is_named():
    three = find_marking("The cat saw the dog and the bird so she ran.", None, [])
    assert three.pronoun == 9 and three.candidates == () and not three.complete
    assert three.problems == ("no two clear candidates (words that look like nouns: cat, dog, bird)",)
    two = find_marking("He told him about the box and the key.", None, [])
    assert two.pronoun is None and "several pronouns (He, him)" in two.problems[0]
    assert find_marking("The dog ran after the cat.", None, []).problems[0].startswith("no pronoun")


def test_the_changed_word_is_never_a_candidate():
    found = find_marking("The man lifted the boy because he was strong.", "he", [], changed=[4])
    assert found.candidates == ()
