"""The grammar's sentences and their answers: a bracketed parse, tags, a count and a French translation.

Two families of sentences, each drawn from a small context-free grammar written here, with the
project's animals, places and adjectives (objectives/corpus.py) as its words:

* Parse sentences, S -> NP VP. An NP is "DT (JJ) NN", with an optional PP of "from" after it; a VP is
  a verb, intransitive (slept) or transitive (chased NP), with an optional PP of "in", "near" or
  "behind" after it. The preposition says where a PP attaches, so every sentence has one tree.
  "parse:" writes the tree as brackets with the words replaced by their tags, as in "Grammar as a
  foreign language" (Vinyals et al. 2015): "(S (NP DT NN ) (VP VBD ) )"; "tag:" writes the tags;
  "count:" writes the number of nouns.
* Translation sentences, "the ANIMAL (did not) VERB the PLACE because it was ADJECTIVE". The
  adjective says which noun "it" is (an animal is tired, a street is wide), and the French pronoun
  takes that noun's gender: "l' animal ... parce qu' il était fatigué", "la rue ... parce qu' elle
  était large".

Held out: sentences whose word pairs never occur in training (a parse sentence's subject noun with its
verb; a translation's animal with its place), and for parsing also whole tree shapes never trained on.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from txviz.core.errors import UserError
from txviz.objectives import corpus

SEED = 0
PREFIXES = ("parse:", "tag:", "count:", "translate:")
TASKS = tuple(p.rstrip(":") for p in PREFIXES)
SPECIAL = ("<pad>", "<start>", "<end>")
PAD, START, END = 0, 1, 2

# Parse family: the corpus's animals and places, and its adjectives.
NOUNS = (*corpus.ANIMALS, *corpus.PLACES)
ADJECTIVES = corpus.ADJECTIVES
INTRANSITIVE = ("slept", "ran", "waited", "sang")
TRANSITIVE = ("saw", "chased", "followed", "found")
VERBS = INTRANSITIVE + TRANSITIVE
NOUN_PREPOSITIONS = ("from",)  # a PP inside an NP: "the dog from the barn"
VERB_PREPOSITIONS = ("in", "near", "behind")  # a PP of the VP: "slept in the barn"
DETERMINERS = ("the", "a", "an")  # "an" before a vowel
TAG_OF = {
    **{w: "DT" for w in DETERMINERS},
    **{w: "JJ" for w in ADJECTIVES},
    **{w: "NN" for w in NOUNS},
    **{w: "VBD" for w in VERBS},
    **{w: "IN" for w in NOUN_PREPOSITIONS + VERB_PREPOSITIONS},
}
TAGS = ("DT", "JJ", "NN", "VBD", "IN")
BRACKETS = ("(S", "(NP", "(VP", "(PP", ")")
COUNTS = tuple(str(n) for n in range(1, 6))

# Translation family: English noun -> (French noun, gender); adjectives -> (masculine, feminine).
ANIMATES = {
    "animal": ("animal", "m"), "dog": ("chien", "m"), "cat": ("chat", "m"), "duck": ("canard", "m"),
    "bird": ("oiseau", "m"), "lion": ("lion", "m"), "horse": ("cheval", "m"), "snake": ("serpent", "m"),
    "cow": ("vache", "f"), "owl": ("chouette", "f"), "mouse": ("souris", "f"), "goat": ("chèvre", "f"),
    "hen": ("poule", "f"), "sheep": ("brebis", "f"),
}  # fmt: skip
PLACES = {
    "street": ("rue", "f"), "road": ("route", "f"), "river": ("rivière", "f"), "forest": ("forêt", "f"),
    "barn": ("grange", "f"), "yard": ("cour", "f"), "house": ("maison", "f"), "garden": ("jardin", "m"),
    "field": ("champ", "m"), "park": ("parc", "m"), "bridge": ("pont", "m"), "path": ("chemin", "m"),
}  # fmt: skip
ANIMATE_ADJECTIVES = {
    "tired": ("fatigué", "fatiguée"), "hungry": ("affamé", "affamée"), "scared": ("effrayé", "effrayée"),
    "sleepy": ("endormi", "endormie"),
}  # fmt: skip
PLACE_ADJECTIVES = {
    "wide": ("large", "large"), "narrow": ("étroit", "étroite"), "long": ("long", "longue"),
    "dark": ("sombre", "sombre"), "busy": ("animé", "animée"),
}  # fmt: skip
MOTIONS = {"cross": ("crossed", "traversé"), "leave": ("left", "quitté"), "like": ("liked", "aimé"),
           "find": ("found", "trouvé")}  # fmt: skip
VOWELS = tuple("aeiouhéè")
FRENCH_FIXED = ("le", "la", "l'", "a", "n'", "pas", "parce", "qu'", "il", "elle", "était")
ENGLISH_FIXED = ("did", "not", "because", "it", "was")


def _vocabulary() -> tuple[str, ...]:
    english = (*DETERMINERS, *ADJECTIVES, *NOUNS, *VERBS, *NOUN_PREPOSITIONS, *VERB_PREPOSITIONS)
    english += (*ANIMATES, *PLACES, *ANIMATE_ADJECTIVES, *PLACE_ADJECTIVES, *ENGLISH_FIXED)
    english += tuple(w for pair in MOTIONS.items() for w in (pair[0], pair[1][0]))
    french = (*FRENCH_FIXED, *(f for f, _ in ANIMATES.values()), *(f for f, _ in PLACES.values()))
    french += tuple(a for pair in (*ANIMATE_ADJECTIVES.values(), *PLACE_ADJECTIVES.values()) for a in pair)
    french += tuple(f for _, f in MOTIONS.values())
    words = (*SPECIAL, *PREFIXES, *english, *french, *TAGS, *BRACKETS, *COUNTS)
    return tuple(dict.fromkeys(words))


VOCABULARY = _vocabulary()
INDEX = {w: i for i, w in enumerate(VOCABULARY)}
MAX_SOURCE = 22  # the prefix and the longest sentence (19 words), with room
MAX_TARGET = 42  # the longest tree is 39 tokens, plus <end>


class GrammarInputError(UserError):
    """A sentence the grammar cannot read."""


# ---- trees ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Tree:
    """A constituent: a label and children, each a Tree or a word."""

    label: str
    children: tuple

    def words(self) -> list[str]:
        return [w for c in self.children for w in (c.words() if isinstance(c, Tree) else [c])]

    def brackets(self) -> list[str]:
        """Vinyals et al.'s linearisation: "(LABEL", the children, ")"; each word as its tag."""
        out = [f"({self.label}"]
        for c in self.children:
            out += c.brackets() if isinstance(c, Tree) else [TAG_OF[c]]
        return [*out, ")"]

    def shape(self) -> str:
        return " ".join(self.brackets())


def _np(rng: random.Random, pp: bool) -> Tree:
    words = ([rng.choice(ADJECTIVES)] if rng.random() < 0.5 else []) + [rng.choice(NOUNS)]
    article = rng.choice(DETERMINERS[:2])
    children: list = ["an" if article == "a" and words[0].startswith(tuple("aeiou")) else article, *words]
    if pp and rng.random() < 0.35:
        children.append(Tree("PP", (rng.choice(NOUN_PREPOSITIONS), _np(rng, False))))
    return Tree("NP", tuple(children))


def random_tree(rng: random.Random) -> Tree:
    """One sentence of the parse family, drawn from the grammar."""
    subject = _np(rng, True)
    transitive = rng.random() < 0.55
    verb = rng.choice(TRANSITIVE if transitive else INTRANSITIVE)
    vp: list = [verb] + ([_np(rng, True)] if transitive else [])
    if rng.random() < 0.45:
        vp.append(Tree("PP", (rng.choice(VERB_PREPOSITIONS), _np(rng, False))))
    return Tree("S", (subject, Tree("VP", tuple(vp))))


def parse(sentence: str | list[str]) -> Tree:
    """The grammar's own tree of a parse sentence (a recursive-descent reader); GrammarInputError if none."""
    words = sentence.split() if isinstance(sentence, str) else list(sentence)
    at = 0

    def take(allowed) -> str:
        nonlocal at
        if at >= len(words) or words[at] not in allowed:
            found = words[at] if at < len(words) else "the end"
            raise GrammarInputError(
                f"Word {at + 1}: expected one of {', '.join(sorted(set(allowed)))}; found {found}."
            )
        at += 1
        return words[at - 1]

    def np_(pp: bool) -> Tree:
        children: list = [take(DETERMINERS)]
        if at < len(words) and words[at] in ADJECTIVES:
            children.append(take(ADJECTIVES))
        children.append(take(NOUNS))
        if pp and at < len(words) and words[at] in NOUN_PREPOSITIONS:
            children.append(Tree("PP", (take(NOUN_PREPOSITIONS), np_(False))))
        return Tree("NP", tuple(children))

    subject = np_(True)
    verb = take(VERBS)
    vp: list = [verb]
    if verb in TRANSITIVE:
        vp.append(np_(True))
    if at < len(words) and words[at] in VERB_PREPOSITIONS:
        vp.append(Tree("PP", (take(VERB_PREPOSITIONS), np_(False))))
    if at != len(words):
        raise GrammarInputError(
            f"Word {at + 1} ({words[at]}) does not fit the grammar after a whole sentence."
        )
    return Tree("S", (subject, Tree("VP", tuple(vp))))


def tags(words: list[str]) -> list[str]:
    return [TAG_OF[w] for w in words]


def noun_count(words: list[str]) -> str:
    return str(sum(TAG_OF.get(w) == "NN" for w in words))


def balanced(brackets: list[str]) -> bool:
    """Every bracket closed, none closed before it opened, and one tree (nothing after the root closes)."""
    depth = 0
    for i, b in enumerate(brackets):
        if depth == 0 and i > 0:
            return False
        depth += b.startswith("(") - (b == ")")
        if depth < 0:
            return False
    return bool(brackets) and depth == 0


# ---- translation ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Pair:
    """A translation sentence: its words and what decides the pronoun."""

    animal: str
    place: str
    motion: str
    negated: bool
    adjective: str

    @property
    def antecedent(self) -> str:
        return self.animal if self.adjective in ANIMATE_ADJECTIVES else self.place

    @property
    def gender(self) -> str:
        return {**ANIMATES, **PLACES}[self.antecedent][1]

    def english(self) -> list[str]:
        verb = ["did", "not", self.motion] if self.negated else [MOTIONS[self.motion][0]]
        return ["the", self.animal, *verb, "the", self.place, "because", "it", "was", self.adjective]

    def french(self) -> list[str]:
        verb = ["n'", "a", "pas", MOTIONS[self.motion][1]] if self.negated else ["a", MOTIONS[self.motion][1]]
        adjective = {**ANIMATE_ADJECTIVES, **PLACE_ADJECTIVES}[self.adjective][self.gender == "f"]
        pronoun = "il" if self.gender == "m" else "elle"
        return [*_article(*ANIMATES[self.animal]), *verb, *_article(*PLACES[self.place]),
                "parce", "qu'", pronoun, "était", adjective]  # fmt: skip

    def pronoun_index(self) -> int:
        """Where "il"/"elle" stands in the French words."""
        return self.french().index("il" if self.gender == "m" else "elle")


def _article(noun: str, gender: str) -> list[str]:
    return ["l'", noun] if noun.startswith(VOWELS) else ["le" if gender == "m" else "la", noun]


def read_pair(sentence: str) -> Pair:
    """A translation sentence typed by a reader; GrammarInputError if it is not of the family."""
    words = sentence.lower().replace(".", " ").split()
    negated = words[2:4] == ["did", "not"]
    verb = words[4] if negated else (words[2] if len(words) > 2 else "")
    motion = next((m for m, (past, _) in MOTIONS.items() if (verb == m if negated else verb == past)), None)
    rest = words[5:] if negated else words[3:]
    shape_ok = (
        len(words) >= 2 and words[0] == "the" and words[1] in ANIMATES and motion is not None
        and len(rest) == 6 and rest[0] == "the" and rest[1] in PLACES and rest[2:5] == ["because", "it", "was"]
        and rest[5] in {**ANIMATE_ADJECTIVES, **PLACE_ADJECTIVES}
    )  # fmt: skip
    if not shape_ok:
        raise GrammarInputError(
            "Type a sentence such as 'the animal did not cross the street because it was tired': "
            f"an animal ({', '.join(ANIMATES)}), a verb ({', '.join(MOTIONS)}), a place "
            f"({', '.join(PLACES)}), an adjective ({', '.join([*ANIMATE_ADJECTIVES, *PLACE_ADJECTIVES])})."
        )
    return Pair(words[1], rest[1], motion, negated, rest[5])


def french_text(words: list[str]) -> str:
    return " ".join(words).replace("' ", "'")


# ---- examples and the split ----------------------------------------------------------------------


@dataclass(frozen=True)
class Example:
    task: str  # parse, tag, count or translate
    source: tuple[str, ...]  # the prefix and the sentence's words
    target: tuple[str, ...]


def example(task: str, sentence: Tree | Pair) -> Example:
    if task == "translate":
        return Example(task, ("translate:", *sentence.english()), tuple(sentence.french()))
    words = sentence.words()
    target = {"parse": sentence.brackets(), "tag": tags(words), "count": [noun_count(words)]}[task]
    return Example(task, (f"{task}:", *words), tuple(target))


def _held_out_pairs(rng: random.Random) -> tuple[set, set, set]:
    """(subject noun, verb) pairs, (animal, place) pairs and tree shapes kept out of training."""
    subject_verb = [(n, v) for n in NOUNS for v in VERBS]
    animal_place = [(a, p) for a in ANIMATES for p in PLACES]
    shapes = sorted({random_tree(random.Random(i)).shape() for i in range(20_000)})
    return (
        set(rng.sample(subject_verb, len(subject_verb) // 8)),
        set(rng.sample(animal_place, len(animal_place) // 8)),
        set(rng.sample(shapes, 12)),
    )


def _subject_verb(tree: Tree) -> tuple[str, str]:
    subject, vp = tree.children
    noun = next(w for w in subject.children if isinstance(w, str) and w in NOUNS)
    return noun, vp.children[0]


def random_pair(rng: random.Random) -> Pair:
    adjectives = [*ANIMATE_ADJECTIVES, *PLACE_ADJECTIVES]
    return Pair(rng.choice(list(ANIMATES)), rng.choice(list(PLACES)), rng.choice(list(MOTIONS)),
                rng.random() < 0.5, rng.choice(adjectives))  # fmt: skip


class Split:
    """The seeded split: training draws, and held-out sentences of unseen word pairs and unseen shapes."""

    def __init__(self, seed: int = SEED, held_out: int = 400):
        rng = random.Random(seed)
        self.subject_verb, self.animal_place, self.shapes = _held_out_pairs(rng)
        self.rng = random.Random(seed + 1)
        unseen_words, unseen_shapes, pairs = [], [], []
        seen: set = set()
        while len(unseen_words) < held_out or len(unseen_shapes) < held_out // 2:
            tree = random_tree(rng)
            if tree.shape() in self.shapes:
                if len(unseen_shapes) < held_out // 2 and tree.shape() not in seen:
                    unseen_shapes.append(tree)
                    seen.add(" ".join(tree.words()))
            elif _subject_verb(tree) in self.subject_verb and len(unseen_words) < held_out:
                unseen_words.append(tree)
        while len(pairs) < held_out:
            pair = random_pair(rng)
            if (pair.animal, pair.place) in self.animal_place:
                pairs.append(pair)
        self.held_out = {"words": unseen_words, "shapes": unseen_shapes, "pairs": pairs}

    def trains_on(self, sentence: Tree | Pair) -> bool:
        if isinstance(sentence, Pair):
            return (sentence.animal, sentence.place) not in self.animal_place
        return sentence.shape() not in self.shapes and _subject_verb(sentence) not in self.subject_verb

    def draw(self, task: str) -> Example:
        """One training example of TASK (a fresh sentence, never a held-out pair or shape)."""
        while True:
            sentence = random_pair(self.rng) if task == "translate" else random_tree(self.rng)
            if self.trains_on(sentence):
                return example(task, sentence)

    def held_out_examples(self) -> dict[str, list[Example]]:
        """Per task and held-out set: parse/tag/count on unseen word pairs, parse on unseen shapes, translate."""
        words, shapes = self.held_out["words"], self.held_out["shapes"]
        out = {t: [example(t, s) for s in words] for t in ("parse", "tag", "count")}
        out["parse (unseen shapes)"] = [example("parse", s) for s in shapes]
        out["translate"] = [example("translate", p) for p in self.held_out["pairs"]]
        return out


def ids(words) -> list[int]:
    return [INDEX[w] for w in words]


def words_of(token_ids) -> list[str]:
    out = []
    for i in token_ids:
        if int(i) == END:
            break
        if int(i) not in (PAD, START):
            out.append(VOCABULARY[int(i)])
    return out
