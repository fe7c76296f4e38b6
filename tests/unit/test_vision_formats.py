"""Every message about image formats names the formats the uploaders accept, GIF included."""

from __future__ import annotations

import io

import pytest
from PIL import Image

from txviz.core.errors import UserError
from txviz.vision.images import load_image


def bmp() -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (16, 16), "red").save(buffer, format="BMP")
    return buffer.getvalue()


@pytest.mark.parametrize(
    "data", [b"", b"just some text, not a picture\n" * 10, bmp()], ids=["empty", "text", "bmp"]
)
def test_format_messages_name_every_accepted_format(data: bytes) -> None:
    with pytest.raises(UserError) as error:
        load_image(data)
    assert "PNG, JPEG, WebP or GIF" in str(error.value)
