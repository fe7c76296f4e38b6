"""Results that do not depend on a visitor's input, kept on disk: computed once, read on every later open.

One folder per (kind, key): the arrays in an .npz (never pickled) and the rest in JSON, written to a
staging folder and renamed into place, so a half-written result is never found. The root is
$TXVIZ_STORE_DIR, else the folder holding the Head Atlas's store when $TXVIZ_ATLAS_DIR names one, else
~/.cache/txviz. A result that cannot be read or written is logged and treated as not stored: the
caller computes it again, and a page never fails for it.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import tempfile
from pathlib import Path

import numpy as np

log = logging.getLogger(__name__)

ARRAYS, META = "arrays.npz", "meta.json"


def root() -> Path:
    found = os.environ.get("TXVIZ_STORE_DIR")
    if found:
        return Path(found)
    atlas = os.environ.get("TXVIZ_ATLAS_DIR")
    return Path(atlas).parent if atlas else Path.home() / ".cache" / "txviz"


def digest(value: object) -> str:
    """A short hash of a JSON-able value: the key of what it describes."""
    return hashlib.sha256(json.dumps(value, sort_keys=True).encode()).hexdigest()[:24]


def folder(kind: str, key: str) -> Path:
    return root() / kind / key


def read(kind: str, key: str) -> tuple[dict[str, np.ndarray], dict] | None:
    """The stored (arrays, meta) of this kind and key, or None when none is stored or it cannot be read."""
    where = folder(kind, key)
    if not (where / META).is_file():
        return None
    try:
        meta = json.loads((where / META).read_text(encoding="utf-8"))
        with np.load(where / ARRAYS, allow_pickle=False) as stored:
            arrays = {name: stored[name] for name in stored.files}
    except (OSError, ValueError):
        log.warning("the stored result in %s cannot be read: it will be computed again", where, exc_info=True)
        return None
    return arrays, meta


def write(kind: str, key: str, arrays: dict[str, np.ndarray], meta: dict) -> bool:
    """Store (arrays, meta) under this kind and key; False (logged) where the disk refuses."""
    where = folder(kind, key)
    staging = None
    try:
        where.parent.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=".writing-", dir=where.parent))
        np.savez(staging / ARRAYS, **arrays)
        (staging / META).write_text(json.dumps(meta), encoding="utf-8")
        try:
            staging.rename(where)
        except OSError:
            if not (where / META).is_file():
                raise
            # another session stored the same key first: theirs stays
        return True
    except OSError:
        log.warning("a result cannot be stored under %s: it will be computed again", where, exc_info=True)
        return False
    finally:
        if staging is not None and staging.exists():
            shutil.rmtree(staging, ignore_errors=True)
