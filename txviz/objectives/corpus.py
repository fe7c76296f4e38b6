"""Short English sentences from a small grammar, written here so the project can ship them.

Each masked word can be told from its context (agreement, a sound that names the animal, the day
that follows, a number plus one, a colour, an opposite, a pronoun), so a tiny BERT can learn them.
"""

from __future__ import annotations

import random

SEED = 0
HELDOUT_SHARE = 0.1

ANIMALS = {  # singular, plural, sound (3rd person singular), sound (plural)
    "dog": ("dogs", "barks", "bark"),
    "cat": ("cats", "meows", "meow"),
    "cow": ("cows", "moos", "moo"),
    "duck": ("ducks", "quacks", "quack"),
    "bird": ("birds", "sings", "sing"),
    "lion": ("lions", "roars", "roar"),
    "sheep": ("sheep", "bleats", "bleat"),
    "horse": ("horses", "neighs", "neigh"),
    "snake": ("snakes", "hisses", "hiss"),
    "owl": ("owls", "hoots", "hoot"),
}
PLACES = ("garden", "field", "barn", "forest", "park", "yard", "house", "river")
ADVERBS = ("loudly", "softly", "again", "all day", "at night", "every morning")
ADJECTIVES = ("big", "small", "old", "young", "happy", "tired", "hungry", "quiet")
DAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
MONTHS = (
    "january", "february", "march", "april", "may", "june",
    "july", "august", "september", "october", "november", "december",
)  # fmt: skip
NUMBERS = (
    "zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten",
    "eleven", "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen",
    "nineteen", "twenty",
)  # fmt: skip
COLOURS = {
    "sky": "blue", "sea": "blue", "grass": "green", "leaf": "green", "snow": "white",
    "milk": "white", "coal": "black", "night": "black", "blood": "red", "tomato": "red",
    "banana": "yellow", "sun": "yellow", "carrot": "orange", "pumpkin": "orange",
}  # fmt: skip
OPPOSITES = {
    "hot": "cold", "big": "small", "up": "down", "fast": "slow", "old": "new", "day": "night",
    "left": "right", "open": "closed", "happy": "sad", "early": "late", "light": "dark",
    "full": "empty", "wet": "dry", "hard": "soft",
}  # fmt: skip
NAMES = {  # name: pronoun
    "anna": "she", "maria": "she", "emma": "she", "sofia": "she", "lucy": "she",
    "james": "he", "tom": "he", "peter": "he", "david": "he", "omar": "he",
}  # fmt: skip
FEELINGS = ("tired", "hungry", "happy", "late", "cold", "ready", "sad", "busy")


def _animal_sentences() -> list[str]:
    out = []
    for animal, (plural, sound, sounds) in ANIMALS.items():
        for place in PLACES:
            for adverb in ADVERBS:
                out.append(f"the {animal} {sound} {adverb} in the {place}")
                out.append(f"the {plural} {sounds} {adverb} in the {place}")
        for adjective in ADJECTIVES:
            out.append(f"the {adjective} {animal} is in the {PLACES[len(adjective) % len(PLACES)]}")
            out.append(f"the {adjective} {plural} are in the {PLACES[len(animal) % len(PLACES)]}")
            out.append(f"a {adjective} {animal} {sound}")
    return out


def _sequence_sentences() -> list[str]:
    out = []
    for i, day in enumerate(DAYS):
        following = DAYS[(i + 1) % 7]
        out += [f"after {day} comes {following}", f"the day after {day} is {following}"]
        out.append(f"the day before {following} is {day}")
    for i, month in enumerate(MONTHS):
        following = MONTHS[(i + 1) % 12]
        out += [f"after {month} comes {following}", f"the month after {month} is {following}"]
    for i in range(len(NUMBERS) - 1):
        out += [f"{NUMBERS[i]} plus one is {NUMBERS[i + 1]}", f"{NUMBERS[i + 1]} minus one is {NUMBERS[i]}"]
        if i + 2 < len(NUMBERS):
            out.append(f"{NUMBERS[i]} {NUMBERS[i + 1]} {NUMBERS[i + 2]}")
    return out


def _fact_sentences() -> list[str]:
    out = []
    for thing, colour in COLOURS.items():
        out += [f"the {thing} is {colour}", f"the colour of the {thing} is {colour}"]
    for word, opposite in OPPOSITES.items():
        out += [f"the opposite of {word} is {opposite}", f"the opposite of {opposite} is {word}"]
    for name, pronoun in NAMES.items():
        for feeling in FEELINGS:
            out.append(f"{name} said that {pronoun} was {feeling}")
            out.append(f"{name} stayed home because {pronoun} was {feeling}")
    return out


def sentences() -> list[str]:
    """Every sentence of the grammar, once each, in a fixed order."""
    return sorted(set(_animal_sentences() + _sequence_sentences() + _fact_sentences()))


def train_and_heldout(seed: int = SEED) -> tuple[list[str], list[str]]:
    """A seeded split: held-out sentences never appear in training."""
    shuffled = sentences()
    random.Random(seed).shuffle(shuffled)
    cut = int(len(shuffled) * HELDOUT_SHARE)
    return shuffled[cut:], shuffled[:cut]


def vocabulary() -> list[str]:
    """Every word of the grammar, sorted."""
    return sorted({word for sentence in sentences() for word in sentence.split()})
