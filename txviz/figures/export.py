"""Figures and traces as files: standalone HTML, PNG and SVG, and the numbers behind them."""

from __future__ import annotations

import functools
import io
import json
import os
import shutil

import numpy as np

from txviz.core.trace import AttentionTrace

PUBLICATION = {"width": 1600, "height": 1100, "scale": 2}


class ExportUnavailable(Exception):
    """A format cannot be produced on this machine; the message says why and what works instead."""


def figure_html(figure) -> bytes:
    """A standalone interactive HTML file that opens offline (plotly.js is embedded)."""
    if hasattr(figure, "to_plotly_json"):
        return figure.to_html(include_plotlyjs=True, full_html=True).encode()
    return figure.to_html().encode()  # altair: loads Vega from its CDN when opened


def _browser_for_kaleido() -> None:
    """kaleido drives a Chromium; point it at the system one, which needs no download."""
    if "BROWSER_PATH" not in os.environ:
        for name in ("chromium", "chromium-browser", "google-chrome"):
            if path := shutil.which(name):
                os.environ["BROWSER_PATH"] = path
                return


@functools.cache  # per server: every figure of every session asks, and find_spec takes the import lock
def image_export_problem() -> str:
    """Why PNG/SVG export cannot work here, or '' when it can."""
    import importlib.util

    if importlib.util.find_spec("kaleido") is None:
        return "PNG and SVG export need the kaleido package; the HTML file works everywhere."
    _browser_for_kaleido()
    if not os.environ.get("BROWSER_PATH"):
        return "PNG and SVG export need a Chromium browser (e.g. apt-get install chromium); HTML works everywhere."
    return ""


def figure_image(figure, fmt: str = "png") -> bytes:
    """PNG or SVG at publication size through kaleido and a local Chromium."""
    if not hasattr(figure, "to_plotly_json"):
        raise ExportUnavailable("Image export is for plotly figures; download this chart as JSON or HTML.")
    _browser_for_kaleido()
    try:
        height = figure.layout.height or PUBLICATION["height"]
        return figure.to_image(
            format=fmt, width=PUBLICATION["width"], height=height, scale=PUBLICATION["scale"]
        )
    except Exception as error:  # kaleido missing, or no Chromium to drive
        raise ExportUnavailable(
            f"{fmt.upper()} export needs kaleido and a Chromium browser ({error}). "
            "Download the HTML file instead and save an image from your browser."
        ) from error


def figure_numbers(figure) -> bytes:
    """The data behind a figure as plain JSON: each trace's arrays and labels."""
    if not hasattr(figure, "to_plotly_json"):
        return figure.to_json().encode()
    traces = []
    for trace in figure.data:
        entry = {"type": trace.type, "name": getattr(trace, "name", None)}
        for field in ("x", "y", "z", "text", "customdata", "values", "labels"):
            value = getattr(trace, field, None)
            if value is not None:
                entry[field] = np.asarray(value).tolist()
        traces.append(entry)
    axes = {
        name: {
            "title": getattr(figure.layout[name].title, "text", None),
            "ticktext": list(figure.layout[name].ticktext or []),
        }
        for name in ("xaxis", "yaxis")
    }
    title = figure.layout.title.text if figure.layout.title else None
    return json.dumps({"title": title, "axes": axes, "traces": traces}, default=str).encode()


def trace_npz(trace: AttentionTrace) -> bytes:
    """Tokens and weights [layer, head, query_pos, key_pos] as a compressed .npz."""
    buffer = io.BytesIO()
    np.savez_compressed(
        buffer,
        query_tokens=np.array(trace.query_tokens),
        key_tokens=np.array(trace.key_tokens),
        weights=trace.weights,
        layer_names=np.array(trace.layer_names),
        model=trace.model_name,
    )
    return buffer.getvalue()


def trace_json(trace: AttentionTrace) -> bytes:
    """Tokens and weights as JSON, for notebooks and other tools."""
    return json.dumps(
        {
            "model": trace.model_name,
            "kind": trace.kind,
            "query_tokens": list(trace.query_tokens),
            "key_tokens": list(trace.key_tokens),
            "layer_names": list(trace.layer_names),
            "weights": np.round(trace.weights, 6).tolist(),
        }
    ).encode()
