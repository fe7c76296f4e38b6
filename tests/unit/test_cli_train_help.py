"""`python -m txviz train --help` lists every trainable name with one line on what it trains."""

from __future__ import annotations

import importlib
import pkgutil

import pytest

import txviz.training
from txviz.cli import build_parser


def test_train_help_lists_every_training_module_with_its_docstring(capsys):
    with pytest.raises(SystemExit):
        build_parser().parse_args(["train", "--help"])
    lines = capsys.readouterr().out.splitlines()
    names = [m.name for m in pkgutil.iter_modules(txviz.training.__path__) if not m.name.startswith("_")]
    assert len(names) >= 10
    for name in names:
        doc = importlib.import_module(f"txviz.training.{name}").__doc__
        summary = " ".join(doc.split("\n\n")[0].split())
        assert [line.split() for line in lines if line.split()[:1] == [name]] == [[name, *summary.split()]]
