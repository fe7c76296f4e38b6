"""Finds Hugging Face module names, class-name tests and source sniffing in txviz code outside the model map."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# where family knowledge belongs: the map's records, the layouts that place them, the loading package
EXEMPT = ("txviz/core/model_map.py", "txviz/core/layouts.py", "txviz/models/")
# module and attribute names of transformers' model classes (txviz's own names are not here)
NAMES = frozenset({
    "embeddings", "position_embeddings", "token_type_embeddings", "word_embeddings", "rotary_emb",
    "inv_freq", "self_attn", "encoder_attn", "attention.self", "c_attn", "c_proj", "c_fc", "q_proj",
    "k_proj", "v_proj", "o_proj", "qkv_proj", "gate_proj", "up_proj", "down_proj", "wpe", "wte", "ln_f",
    "ln_1", "ln_2", "embed_tokens", "embed_positions", "lm_head", "input_layernorm",
    "post_attention_layernorm", "bert", "roberta",
})  # fmt: skip
# also txviz's own names (RopeSpec.inv_freq, Layout.lm_head): only a string naming them is a sniff
STRING_ONLY = frozenset({"inv_freq", "lm_head"})
PATH = re.compile(r"[A-Za-z_][\w.]*")


def _docstrings(tree: ast.AST) -> set[int]:
    found = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        first = body[0] if isinstance(body, list) and body else None
        if (
            isinstance(first, ast.Expr)
            and isinstance(first.value, ast.Constant)
            and isinstance(first.value.value, str)
        ):
            found.add(id(first.value))
    return found


def _named(text: str) -> str | None:
    """The name a path in a string gives ('rotary_emb.inv_freq' -> 'rotary_emb'), or None for prose.

    One plain word ("embeddings", "bert") is a label or a model type; a dotted path or a name with an
    underscore or one of GPT-2's short names is a module's name.
    """
    if not PATH.fullmatch(text):
        return None
    if "." not in text and "_" not in text and text not in ("wpe", "wte"):
        return None
    if "attention.self" in text:
        return "attention.self"
    return next((part for part in text.split(".") if part in NAMES), None)


def violations(source: str) -> list[tuple[int, str]]:
    """(line, what) for each Hugging Face name, class-name test or source sniff in ``source``."""
    tree = ast.parse(source)
    docstrings, calls = _docstrings(tree), set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            calls.add(id(node.func))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr in NAMES - STRING_ONLY:
            # a method of txviz's own called by that name (Layout.embeddings(model)) is not a sniff
            if not (node.attr == "embeddings" and id(node) in calls):
                found.append((node.lineno, f".{node.attr}"))
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings:
            name = _named(node.value)
            if name:
                found.append((node.lineno, f"{node.value!r}"))
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in ("getattr", "hasattr", "setattr")
            and len(node.args) > 1
            and isinstance(node.args[1], ast.Constant)
            and node.args[1].value in NAMES
        ):
            found.append((node.lineno, f"{node.func.id}(..., {node.args[1].value!r})"))
        elif isinstance(node, ast.Compare):
            parts = [node.left, *node.comparators]
            if any(isinstance(n, ast.Attribute) and n.attr == "__name__" for p in parts for n in ast.walk(p)):
                found.append((node.lineno, "a class's name compared"))
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "getsource"
        ):
            inner = [n for a in node.args for n in ast.walk(a)]
            if any(isinstance(n, ast.Attribute) and n.attr == "__class__" for n in inner) or any(
                isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "type"
                for n in inner
            ):
                found.append((node.lineno, "a model class's source read"))
    return sorted(found)


def product_files(root: Path = ROOT) -> list[Path]:
    """Every Python file of ``root``/txviz but the exempt ones."""
    paths = ((p, p.relative_to(root).as_posix()) for p in sorted((root / "txviz").rglob("*.py")))
    return [p for p, relative in paths if not relative.startswith(EXEMPT)]


def found_in(root: Path = ROOT) -> list[tuple[str, int, str]]:
    """(path, line, what) of every violation in the product under ``root``."""
    return sorted(
        (path.relative_to(root).as_posix(), line, what)
        for path in product_files(root)
        for line, what in violations(path.read_text(encoding="utf-8"))
    )
