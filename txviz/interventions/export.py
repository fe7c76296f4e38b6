"""Every experiment as a short Python script against txviz's API that prints its numbers as JSON."""

from __future__ import annotations

from collections.abc import Sequence

from txviz.interventions.ablation import Component, Edge
from txviz.interventions.metrics import Metric

HEADER = '''"""{title}: made by txviz's Interventions page; run it to get the same numbers."""

import json

from txviz import models
from txviz.interventions import {modules}

loaded = models.load({model!r}, {device!r})
metric = metrics.make_metric(loaded, {kind!r}, {answer!r}, {wrong!r})
'''


def _header(
    title: str, modules: str, model: str, device: str, metric: Metric, answer: str, wrong: str
) -> str:
    wrong = wrong if metric.kind == "logit_difference" else ""
    return HEADER.format(
        title=title, modules=modules, model=model, device=device, kind=metric.kind, answer=answer, wrong=wrong
    )


def ablation_script(
    model: str,
    device: str,
    text: str,
    metric: Metric,
    answer: str,
    wrong: str,
    components: Sequence[Component],
    mode: str,
    reference: str,
    edges: Sequence[Edge],
) -> str:
    parts = ", ".join(f"ablation.Component({c.kind!r}, {c.layer}, {c.head!r})" for c in components)
    cuts = ", ".join(f"ablation.Edge({e.query}, {e.key}, {tuple(e.layers)!r})" for e in edges)
    return _header("One ablation", "ablation, metrics", model, device, metric, answer, wrong) + (
        f"result = ablation.ablate(\n    loaded,\n    {text!r},\n    metric,\n    [{parts}],\n"
        f"    mode={mode!r},\n    reference={reference!r},\n    edges=[{cuts}],\n)\n"
        'print(json.dumps({"before": result.before, "after": result.after}))\n'
    )


def sweep_script(
    model: str, device: str, text: str, metric: Metric, answer: str, wrong: str, mode: str, reference: str
) -> str:
    return _header(
        "Every head and MLP ablated alone", "ablation, metrics", model, device, metric, answer, wrong
    ) + (
        f"result = ablation.sweep(loaded, {text!r}, metric, {mode!r}, {reference!r})\n"
        'print(json.dumps({"base": result.base, "heads": result.heads.tolist(), "ffn": result.ffn.tolist()}))\n'
    )


def patching_script(
    model: str, device: str, clean: str, corrupt: str, metric: Metric, answer: str, wrong: str
) -> str:
    return _header("Activation patching", "metrics, patching", model, device, metric, answer, wrong) + (
        f"result = patching.patch(loaded, {clean!r}, {corrupt!r}, metric)\n"
        "print(json.dumps({name: value.tolist() for name, value in result.arrays().items()}))\n"
    )


def steering_script(
    model: str,
    device: str,
    positive: Sequence[str],
    negative: Sequence[str],
    layer: int,
    prompt: str,
    strength: float,
    max_new_tokens: int,
) -> str:
    return (
        '"""Steering by activation addition: made by txviz\'s Interventions page; run it to get the same text."""\n\n'
        "import json\n\nfrom txviz import models\nfrom txviz.interventions import steering\n\n"
        f"loaded = models.load({model!r}, {device!r})\n"
        f"found = steering.direction(loaded, {list(positive)!r}, {list(negative)!r}, {layer})\n"
        f"plain, steered = steering.steered_pair(loaded, {prompt!r}, found, {float(strength)!r}, {max_new_tokens})\n"
        'print(json.dumps({"plain": plain, "steered": steered, "norm": found.norm}))\n'
    )
