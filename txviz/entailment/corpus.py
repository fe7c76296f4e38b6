"""A reproducible generated corpus of premise/hypothesis pairs with the three NLI labels.

No natural-language-inference corpus (SNLI, MultiNLI, SICK) installs from the package registries
here, so the pairs are written by templates: one scene ("a tall man is running in the park") and a
hypothesis changed by hypernyms, synonyms, dropped or added details, negation and incompatible
activities, places or adjectives. It teaches word-level inference, not English at large.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

LABELS = ("entailment", "neutral", "contradiction")
SEED = 0
# Kept out of training and of the ordinary held-out set: pairs with them test whether MiniLM's
# embeddings carry what was learnt to words never trained on (their hypernyms and classes were).
UNSEEN = frozenset({"doctor", "physician", "horse", "pony", "jogging", "library"})

# subject -> (hypernym, synonyms)
SUBJECTS = {
    "man": ("person", ("guy",)), "woman": ("person", ("lady",)), "boy": ("child", ("kid",)),
    "girl": ("child", ("kid",)), "doctor": ("person", ("physician",)), "teacher": ("person", ("instructor",)),
    "chef": ("cook", ("cook",)), "dog": ("animal", ("hound",)), "puppy": ("dog", ("pup",)),
    "cat": ("animal", ("kitten",)), "horse": ("animal", ("pony",)), "student": ("person", ("pupil",)),
}  # fmt: skip
HYPERNYMS = {s: h for s, (h, _) in SUBJECTS.items()}
GENERAL = set(HYPERNYMS.values())
ANIMALS = {"dog", "puppy", "cat", "horse", "animal"}
# activity -> (more general activity or None, group): activities in different groups exclude each other
ACTIVITIES = {
    "sleeping": (None, "rest"), "napping": ("sleeping", "rest"), "running": ("moving", "move"),
    "sprinting": ("running", "move"), "jogging": ("running", "move"), "walking": ("moving", "move"),
    "swimming": ("moving", "swim"), "sitting": (None, "sit"), "eating": (None, "eat"),
    "laughing": (None, "laugh"), "crying": (None, "cry"), "dancing": ("moving", "move"),
}  # fmt: skip
EXCLUSIVE = {  # groups that cannot happen at once
    ("rest", "move"), ("rest", "swim"), ("rest", "eat"), ("rest", "laugh"), ("rest", "cry"),
    ("sit", "move"), ("sit", "swim"), ("laugh", "cry"), ("swim", "sit"), ("move", "sit"),
}  # fmt: skip
ADJECTIVES = {
    "tall": "short",
    "short": "tall",
    "young": "old",
    "old": "young",
    "happy": "sad",
    "sad": "happy",
}
PLACES = {  # place -> outside or inside
    "in the park": "outside", "on the beach": "outside", "on the street": "outside", "in a field": "outside",
    "in the kitchen": "inside", "at the office": "inside", "in a classroom": "inside", "in the library": "inside",
}  # fmt: skip
DETAILS = ("with a friend", "for fun", "to win a prize", "after lunch", "this morning", "alone")


def exclusive(a: str, b: str) -> bool:
    """True when two activities cannot both be true of one subject at one time."""
    ga, gb = ACTIVITIES[a][1], ACTIVITIES[b][1]
    return (ga, gb) in EXCLUSIVE or (gb, ga) in EXCLUSIVE


@dataclass(frozen=True)
class Scene:
    """What a premise says: who, doing what, where, and how they look."""

    subject: str
    activity: str
    adjective: str | None = None
    place: str | None = None

    def sentence(self, det: str = "a", negated: bool = False, detail: str | None = None) -> str:
        words = ([self.adjective] if self.adjective else []) + [self.subject]
        words = [("an" if words[0][0] in "aeiou" else "a") if det == "a" else det] + words
        words += ["is", "not", self.activity] if negated else ["is", self.activity]
        words += [self.place] if self.place else []
        words += [detail] if detail else []
        return " ".join(words)


@dataclass(frozen=True)
class Pair:
    """One example: premise, hypothesis, gold label and the rule that wrote it."""

    premise: str
    hypothesis: str
    label: str
    rule: str


def _activity(rng: random.Random, subject: str) -> str:
    options = [a for a in ACTIVITIES if not (subject in ANIMALS and a in ("laughing", "crying"))]
    return rng.choice(options)


def random_scene(rng: random.Random) -> Scene:
    subject = rng.choice(list(SUBJECTS))
    adjective = rng.choice([None, *ADJECTIVES]) if rng.random() < 0.6 else None
    place = rng.choice(list(PLACES)) if rng.random() < 0.6 else None
    return Scene(subject, _activity(rng, subject), adjective, place)


def _entailment(rng: random.Random, p: Scene) -> tuple[Scene, str, bool]:
    """(hypothesis scene, rule, negated): something the premise guarantees."""
    rules = ["hypernym", "synonym", "drop"]
    rules += ["place class"] if p.place else []
    rules += ["activity hypernym"] if ACTIVITIES[p.activity][0] else []
    rules += ["negated exclusive"]
    rule = rng.choice(rules)
    h = Scene(
        p.subject,
        p.activity,
        p.adjective if rng.random() < 0.5 else None,
        p.place if rng.random() < 0.5 else None,
    )
    if rule == "hypernym":
        return Scene(HYPERNYMS[p.subject], h.activity, h.adjective, h.place), rule, False
    if rule == "synonym":
        return Scene(rng.choice(SUBJECTS[p.subject][1]), h.activity, h.adjective, h.place), rule, False
    if rule == "drop":
        return Scene(p.subject, p.activity), rule, False
    if rule == "place class":
        return Scene(p.subject, p.activity, h.adjective, PLACES[p.place]), rule, False
    if rule == "activity hypernym":
        return Scene(p.subject, ACTIVITIES[p.activity][0], h.adjective, h.place), rule, False
    other = rng.choice([a for a in ACTIVITIES if exclusive(a, p.activity)])
    return Scene(p.subject, other, h.adjective), rule, True


def _generalise(rng: random.Random, p: Scene, h: Scene, negated: bool) -> Scene:
    """Compose: also widen what the entailed hypothesis names, which keeps it entailed.

    The subject may become its hypernym, the place its class; the activity its more general one
    unless negated ('not running' does not give 'not moving').
    """
    subject, activity, place = h.subject, h.activity, h.place
    if subject == p.subject and subject in HYPERNYMS and rng.random() < 0.3:
        subject = HYPERNYMS[subject]
    if not negated and activity == p.activity and ACTIVITIES[activity][0] and rng.random() < 0.3:
        activity = ACTIVITIES[activity][0]
    if place in PLACES and rng.random() < 0.3:
        place = PLACES[place]
    return Scene(subject, activity, h.adjective, place)


def _neutral(rng: random.Random, p: Scene) -> tuple[Scene, str, str | None]:
    """(hypothesis scene, rule, detail): something the premise neither guarantees nor rules out."""
    rules = ["add detail"] + (["hyponym subject"] if p.subject in GENERAL else [])
    rules += ["add adjective"] if not p.adjective else []
    rules += ["add place"] if not p.place else []
    rules += ["hyponym activity"] if any(g == p.activity for g, _ in ACTIVITIES.values()) else []
    rule = rng.choice(rules)
    if rule == "add detail":
        return (
            Scene(p.subject, p.activity, p.adjective if rng.random() < 0.5 else None),
            rule,
            rng.choice(DETAILS),
        )
    if rule == "hyponym subject":  # the premise names the general word, the hypothesis a specific one
        return Scene(rng.choice([s for s, h in HYPERNYMS.items() if h == p.subject]), p.activity), rule, None
    if rule == "add adjective":
        return Scene(p.subject, p.activity, rng.choice(list(ADJECTIVES)), p.place), rule, None
    if rule == "add place":
        return Scene(p.subject, p.activity, p.adjective, rng.choice(list(PLACES))), rule, None
    specific = rng.choice([a for a, (g, _) in ACTIVITIES.items() if g == p.activity])
    return Scene(p.subject, specific, p.adjective), rule, None


def _contradiction(rng: random.Random, p: Scene) -> tuple[Scene, str, bool]:
    """(hypothesis scene, rule, negated): something the premise rules out."""
    rules = ["negation", "exclusive activity"]
    rules += ["antonym"] if p.adjective else []
    rules += ["other place"] if p.place else []
    rule = rng.choice(rules)
    subject = rng.choice([p.subject, HYPERNYMS[p.subject]])
    if rule == "negation":
        general = ACTIVITIES[p.activity][0] if rng.random() < 0.3 else None
        return Scene(subject, general or p.activity), rule, True
    if rule == "exclusive activity":
        return Scene(subject, rng.choice([a for a in ACTIVITIES if exclusive(a, p.activity)])), rule, False
    if rule == "antonym":
        return Scene(p.subject, p.activity, ADJECTIVES[p.adjective]), rule, False
    if rng.random() < 0.5:
        other = "inside" if PLACES[p.place] == "outside" else "outside"
    else:
        other = rng.choice([q for q in PLACES if PLACES[q] != PLACES[p.place]])
    return Scene(subject, p.activity, None, other), rule, False


def make_pair(rng: random.Random, label: str) -> Pair:
    """One pair of the given label from a fresh random scene."""
    premise = random_scene(rng)
    if label == "neutral" and rng.random() < 0.3:  # premises that name the general word
        premise = Scene(HYPERNYMS[premise.subject], premise.activity, premise.adjective, premise.place)
    if label == "entailment":
        h, rule, negated = _entailment(rng, premise)
        h = _generalise(rng, premise, h, negated)
        return Pair(premise.sentence(), h.sentence("the", negated), label, rule)
    if label == "neutral":
        h, rule, detail = _neutral(rng, premise)
        return Pair(premise.sentence(), h.sentence("the", detail=detail), label, rule)
    h, rule, negated = _contradiction(rng, premise)
    return Pair(premise.sentence(), h.sentence("the", negated), label, rule)


def mentions_unseen(pair: Pair) -> bool:
    """Whether the pair uses a word kept out of training."""
    return not UNSEEN.isdisjoint((pair.premise + " " + pair.hypothesis).split())


def generate(
    count: int, seed: int = SEED, exclude: set[tuple[str, str]] | None = None, unseen: bool | None = False
) -> list[Pair]:
    """`count` distinct pairs, labels in turn (balanced), none in `exclude`; `unseen` False: no word
    of UNSEEN, True: at least one, None: either."""
    rng, seen, pairs = random.Random(seed), set(exclude or ()), []
    while len(pairs) < count:
        pair = make_pair(rng, LABELS[len(pairs) % 3])
        if unseen is not None and mentions_unseen(pair) != unseen:
            continue
        if (pair.premise, pair.hypothesis) not in seen:
            seen.add((pair.premise, pair.hypothesis))
            pairs.append(pair)
    return pairs


def split(train: int, held_out: int, seed: int = SEED) -> tuple[list[Pair], list[Pair]]:
    """Training pairs and held-out pairs, disjoint: no held-out (premise, hypothesis) is trained on."""
    first = generate(train, seed)
    return first, generate(held_out, seed + 1, {(p.premise, p.hypothesis) for p in first})


def unseen_words(count: int = 600, seed: int = SEED) -> list[Pair]:
    """Pairs that each use at least one word of UNSEEN (never in training)."""
    return generate(count, seed + 2, unseen=True)


def swapped_roles(count: int = 60, seed: int = SEED) -> list[Pair]:
    """Probe pairs 'a dog is chasing a cat' / 'the cat is chasing the dog', labelled neutral.

    Decomposable attention reads each sentence as a set of words, so it cannot tell these apart
    from the premise itself: the page reports how it labels them.
    """
    rng, pairs = random.Random(seed), []
    animals, people = ["dog", "cat", "horse", "puppy"], ["man", "woman", "boy", "girl", "doctor", "teacher"]
    verbs = ["chasing", "following", "watching", "pushing"]
    while len(pairs) < count:
        a, b = rng.sample(rng.choice([animals, people]), 2)
        verb = rng.choice(verbs)
        pairs.append(Pair(f"a {a} is {verb} a {b}", f"the {b} is {verb} the {a}", "neutral", "swapped roles"))
    return pairs
