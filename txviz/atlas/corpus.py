"""The corpora an atlas is built over: one that ships with Python itself, or the user's upload.

Python's own documentation (``pydoc_data.topics``, the text ``help("with")`` prints) is the default:
every CPython carries it, so it needs nothing installed and nothing downloaded; it is public (PSF
licence); and its ~0.47 MB of English prose mixed with code (about 110,000 SmolLM2 tokens) holds
both the repeated identifiers that induction and duplicate-token heads copy and the punctuation
and brackets that syntax heads track. Debian's ``fortunes`` is offered too where it is installed
(``apt-get install fortunes-min``): short public-domain quips, a different register. The app works
without it.
"""

from __future__ import annotations

import argparse
import hashlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from txviz.core.errors import UserError

MAX_UPLOAD_BYTES = 2_000_000  # an upload is cut here, with a notice (~500,000 tokens: minutes on a CPU)
FORTUNES = Path("/usr/share/games/fortunes")
DEFAULT = "python-docs"


class AtlasCorpusError(UserError):
    """The corpus cannot be read as text; the message says why."""


@dataclass(frozen=True)
class AtlasCorpus:
    """One corpus's text, the sha256 of its bytes (part of an atlas's key) and what was cut."""

    name: str
    text: str
    hash: str
    notice: str = ""


def of_text(name: str, text: str, notice: str = "") -> AtlasCorpus:
    """A corpus from text already read; its hash is of its UTF-8 bytes."""
    return AtlasCorpus(name, text, hashlib.sha256(text.encode("utf-8")).hexdigest(), notice)


def python_docs() -> AtlasCorpus:
    """Python's documentation topics, in a fixed order."""
    from pydoc_data.topics import topics

    return of_text(DEFAULT, "\n\n".join(topics[key].strip() for key in sorted(topics)))


def fortunes() -> AtlasCorpus:
    """Debian's fortune files (plain text, % between quips), in name order."""
    files = sorted(p for p in FORTUNES.iterdir() if p.is_file() and not p.suffix)
    text = "\n\n".join(p.read_text("utf-8", errors="replace").replace("\n%\n", "\n\n") for p in files)
    return of_text("fortunes", text)


def shipped() -> dict[str, Callable[[], AtlasCorpus]]:
    """The corpora offered by name: Python's documentation always, fortunes where installed."""
    found: dict[str, Callable[[], AtlasCorpus]] = {DEFAULT: python_docs}
    if FORTUNES.is_dir() and any(FORTUNES.iterdir()):
        found["fortunes"] = fortunes
    return found


def from_upload(name: str, data: bytes) -> AtlasCorpus:
    """A corpus from an uploaded file's bytes: UTF-8 text, cut at MAX_UPLOAD_BYTES with a notice."""
    if not data or not data.strip():
        raise AtlasCorpusError(f"{name} is empty: an atlas needs text to read.")
    if b"\x00" in data[:65536]:
        raise AtlasCorpusError(f"{name} holds zero bytes: it looks like a binary file, not text.")
    notice = ""
    if len(data) > MAX_UPLOAD_BYTES:
        notice = f"{name} has {len(data):,} bytes; only the first {MAX_UPLOAD_BYTES:,} are read."
        data = data[:MAX_UPLOAD_BYTES]
        text = data.decode("utf-8", errors="ignore")  # a character cut in two at the limit is dropped
        if len(text.encode("utf-8")) < len(data) - 3:
            raise AtlasCorpusError(f"{name} is not UTF-8 text: save it as UTF-8 and upload it again.")
    else:
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as error:
            raise AtlasCorpusError(
                f"{name} is not UTF-8 text (byte {error.start:,} cannot be read): save it as UTF-8."
            ) from None
    if not text.strip():
        raise AtlasCorpusError(f"{name} holds only white space: an atlas needs text to read.")
    return of_text(name, text, notice)


def first(corpus: AtlasCorpus, chars: int) -> AtlasCorpus:
    """The corpus's first ``chars`` characters as a corpus of its own (its own hash, so its own atlas),
    cut at the last paragraph break in the final fifth where there is one."""
    if len(corpus.text) <= chars:
        return corpus
    end = corpus.text.rfind("\n\n", chars * 4 // 5, chars)
    text = corpus.text[: end if end > 0 else chars]
    return of_text(f"{corpus.name} (first {chars:,} characters)", text, corpus.notice)


def add_argument(parser: argparse.ArgumentParser) -> None:
    """The commands' --corpus, as named_or_file reads it."""
    parser.add_argument(
        "--corpus",
        default="python-docs",
        help="a shipped corpus's name (python-docs, fortunes) or a text file",
    )


def named_or_file(source: str) -> AtlasCorpus:
    """A shipped corpus by name, else a file by path (the command line's --corpus)."""
    offered = shipped()
    if source in offered:
        return offered[source]()
    path = Path(source)
    if not path.is_file():
        raise AtlasCorpusError(f"No corpus named {source!r} and no such file; shipped: {', '.join(offered)}.")
    return from_upload(path.name, path.read_bytes())
