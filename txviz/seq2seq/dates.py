"""Readable sequence-to-sequence task: dates written out in English words -> ISO 8601.

"twenty second of november two thousand twenty six" -> "2026-11-22". The source puts the day
first (or the month first, US style) and the year last; the target puts the year first, so a
model must reorder, and cross-attention shows where each output digit looks.
"""

from __future__ import annotations

import datetime as dt
import random
from dataclasses import dataclass

SEED = 20261122
FIRST_YEAR, LAST_YEAR = 1950, 2049
HELDOUT_DATES = 1000

MONTHS = [
    "january",
    "february",
    "march",
    "april",
    "may",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
]
_UNITS = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine"]
_TEENS = [
    "ten",
    "eleven",
    "twelve",
    "thirteen",
    "fourteen",
    "fifteen",
    "sixteen",
    "seventeen",
    "eighteen",
    "nineteen",
]
_TENS = ["_", "_", "twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety"]
_ORDINAL_UNITS = [
    "_",
    "first",
    "second",
    "third",
    "fourth",
    "fifth",
    "sixth",
    "seventh",
    "eighth",
    "ninth",
    "tenth",
    "eleventh",
    "twelfth",
    "thirteenth",
    "fourteenth",
    "fifteenth",
    "sixteenth",
    "seventeenth",
    "eighteenth",
    "nineteenth",
]
_ORDINAL_TENS = {20: "twentieth", 30: "thirtieth"}

# Word order of the source: {day} {month} {year} are filled in with words.
TEMPLATES = (
    "{day} of {month} {year}",
    "the {day} of {month} {year}",
    "{month} {day} {year}",
)


@dataclass(frozen=True)
class DatePair:
    """One example: the date in words (source) and in ISO 8601 (target)."""

    source: str
    target: str


def cardinal(n: int) -> str:
    """English words for 0 <= n < 100 ("twenty six")."""
    if n < 10:
        return _UNITS[n]
    if n < 20:
        return _TEENS[n - 10]
    tens, unit = divmod(n, 10)
    return _TENS[tens] if unit == 0 else f"{_TENS[tens]} {_UNITS[unit]}"


def ordinal(n: int) -> str:
    """English ordinal words for 1 <= n <= 31 ("twenty second")."""
    if n < 20:
        return _ORDINAL_UNITS[n]
    tens, unit = divmod(n, 10)
    if unit == 0:
        return _ORDINAL_TENS[n]
    return f"{_TENS[tens]} {_ORDINAL_UNITS[unit]}"


def year_words(year: int) -> str:
    """A year as people say it: "nineteen oh five", "nineteen ninety", "two thousand twenty six"."""
    century, rest = divmod(year, 100)
    if century == 20:
        return "two thousand" if rest == 0 else f"two thousand {cardinal(rest)}"
    if rest == 0:
        return f"{cardinal(century)} hundred"
    if rest < 10:
        return f"{cardinal(century)} oh {_UNITS[rest]}"
    return f"{cardinal(century)} {cardinal(rest)}"


def date_to_words(date: dt.date, template: str = TEMPLATES[0]) -> str:
    """The date in words in the given template's word order."""
    return template.format(day=ordinal(date.day), month=MONTHS[date.month - 1], year=year_words(date.year))


def all_dates() -> list[dt.date]:
    """Every calendar day from FIRST_YEAR to LAST_YEAR inclusive."""
    day = dt.date(FIRST_YEAR, 1, 1)
    end = dt.date(LAST_YEAR, 12, 31)
    out = []
    while day <= end:
        out.append(day)
        day += dt.timedelta(days=1)
    return out


def split_dates(seed: int = SEED, heldout: int = HELDOUT_DATES) -> tuple[list, list]:
    """(train dates, held-out dates): disjoint calendar days, shuffled with a fixed seed."""
    dates = all_dates()
    random.Random(seed).shuffle(dates)
    return dates[heldout:], dates[:heldout]


def make_pairs(dates: list[dt.date], seed: int, per_date: int = 1) -> list[DatePair]:
    """Pairs for these dates, each written in `per_date` templates drawn with a fixed seed."""
    rng = random.Random(seed)
    pairs = []
    for date in dates:
        for template in rng.sample(TEMPLATES, per_date):
            pairs.append(DatePair(date_to_words(date, template), date.isoformat()))
    return pairs


def train_and_heldout(seed: int = SEED) -> tuple[list[DatePair], list[DatePair]]:
    """The training and held-out pairs; no calendar day appears in both."""
    train_dates, heldout_dates = split_dates(seed)
    return make_pairs(train_dates, seed + 1), make_pairs(heldout_dates, seed + 2)


def vocabulary() -> list[str]:
    """Every word a source can use, then every symbol of a target (digits and '-')."""
    words: set[str] = set()
    for template in TEMPLATES:
        words.update(w for w in template.split() if not w.startswith("{"))
    words.update(MONTHS)
    for n in range(1, 32):
        words.update(ordinal(n).split())
    for year in range(FIRST_YEAR, LAST_YEAR + 1):
        words.update(year_words(year).split())
    return sorted(words) + list("0123456789-")
