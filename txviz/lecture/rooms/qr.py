"""The join QR code the projector shows, as PNG bytes (segno: pure Python, no network)."""

from __future__ import annotations

import io

import segno


def qr_png(url: str, scale: int = 8) -> bytes:
    """A QR code of ``url`` as a PNG, dark on white with the standard quiet zone."""
    out = io.BytesIO()
    segno.make(url, error="m").save(out, kind="png", scale=scale, border=4)
    return out.getvalue()
