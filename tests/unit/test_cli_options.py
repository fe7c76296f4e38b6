"""The command line's options: trace and export share their model and text options (argparse parents)."""

from __future__ import annotations

import pytest

from txviz.cli import build_parser

SHARED = ["--model", "smollm2", "--text", "a b", "--device", "cpu", "--max-tokens", "7"]


def test_trace_and_export_read_the_same_model_and_text_options():
    parser = build_parser()
    trace = parser.parse_args(["trace", *SHARED])
    export = parser.parse_args(["export", *SHARED, "--view", "grid"])
    for args in (trace, export):
        assert (args.model, args.text, args.device, args.max_tokens) == ("smollm2", "a b", "cpu", 7)
    assert (trace.out, trace.format) == ("trace.npz", "npz")
    assert export.out == "figure.png" and export.view == "grid"  # export picks its format by suffix


def test_defaults_and_required_text():
    args = build_parser().parse_args(["export", "--text", "x"])
    assert (args.model, args.device, args.max_tokens, args.layer, args.head) == ("minilm", "auto", 512, 0, 0)
    with pytest.raises(SystemExit):
        build_parser().parse_args(["trace"])  # --text is required
