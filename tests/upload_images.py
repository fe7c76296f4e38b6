"""Image bytes for upload tests: real encodings, a decompression bomb, a seeded photo."""

from __future__ import annotations

import io
import struct
import zlib

import numpy as np
from PIL import Image


def encode(image: Image.Image, fmt: str, **kwargs) -> bytes:
    buffer = io.BytesIO()
    image.save(buffer, format=fmt, **kwargs)
    return buffer.getvalue()


def png_chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


def bomb_png(side: int = 20_000) -> bytes:
    """A real, valid 1-bit PNG of side x side black pixels: ~50 kB on disk, 400 Mpx decoded."""
    header = struct.pack(">IIBBBBB", side, side, 1, 0, 0, 0, 0)  # 1-bit grey
    row = b"\x00" * (1 + (side + 7) // 8)  # filter byte + packed bits
    compressor = zlib.compressobj(9)
    body = b"".join(compressor.compress(row) for _ in range(side)) + compressor.flush()
    return (
        b"\x89PNG\r\n\x1a\n" + png_chunk(b"IHDR", header) + png_chunk(b"IDAT", body) + png_chunk(b"IEND", b"")
    )


def photo(mode: str = "RGB", size=(40, 30)) -> Image.Image:
    rng = np.random.default_rng(0)
    rgb = Image.fromarray(rng.integers(0, 256, (size[1], size[0], 3), dtype=np.uint8))
    return rgb.convert(mode)
