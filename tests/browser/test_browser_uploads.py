"""Every file uploader in the app, in Chromium, gets a binary file, a liar and an image bomb.

Uploaders are found in the page itself: every tab is opened and every "Upload..." choice of a radio
is picked, so a new page or uploader is covered without a new test. Each bad file must end in an
error or warning in the page, with no exception box and no script run (``browser_page`` fails on
any dialog).
"""

from __future__ import annotations

import io
import random
import re
import struct
import zlib
from pathlib import Path

import pytest
from conftest import ROOT, page_url, screenshot, wait_for_app
from PIL import Image

from txviz import page_map

pytestmark = pytest.mark.browser

PAGES = sorted(page.file for page in page_map.PAGES)
WAIT_MS = 180_000
UPLOADER = '[data-testid="stFileUploader"]'
PROBLEM = '[data-testid="stAlertContentError"], [data-testid="stAlertContentWarning"]'
IDLE = '[data-testid="stApp"][data-test-script-state="notRunning"]'
BOMB_SIDE = 30_000  # 900 Mpx declared: ~110 kB on disk, gigabytes if decoded as RGB


def png_chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


def bomb_png(side: int = BOMB_SIDE) -> bytes:
    """A valid 1-bit PNG of side x side black pixels whose whole pixel stream is really there."""
    header = struct.pack(">IIBBBBB", side, side, 1, 0, 0, 0, 0)  # 1-bit grey, no interlace
    row = b"\x00" * (1 + (side + 7) // 8)  # filter byte + packed bits
    compressor = zlib.compressobj(9)
    body = b"".join(compressor.compress(row) for _ in range(side)) + compressor.flush()
    signature = b"\x89PNG\r\n\x1a\n"
    return signature + png_chunk(b"IHDR", header) + png_chunk(b"IDAT", body) + png_chunk(b"IEND", b"")


def small_png() -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (8, 8), (200, 30, 30)).save(buffer, format="PNG")
    return buffer.getvalue()


def hostile_files(accept: str) -> list[dict]:
    """The three bad files for an uploader, named with a suffix it accepts so they reach the app."""
    suffixes = [s.strip().lstrip(".").lower() for s in accept.split(",") if s.strip().startswith(".")]
    suffix = suffixes[0] if suffixes else "txt"
    images = {"png", "jpg", "jpeg", "webp", "gif"} & set(suffixes)
    noise = bytes(random.Random(0).getrandbits(8) for _ in range(4096)) + b"\x00" * 16
    if images:  # an image uploader: the liar is text wearing an image's name
        liar = {"name": f"holiday.{suffix}", "mimeType": "image/png", "buffer": b"Dear diary, " * 200}
    else:  # a text uploader: the liar is an image wearing a text file's name
        liar = {"name": "essay.txt", "mimeType": "text/plain", "buffer": small_png()}
    bomb_suffix = "png" if "png" in suffixes or not suffixes else suffix
    return [
        {"name": f"noise.{suffix}", "mimeType": "application/octet-stream", "buffer": noise},
        liar,
        {"name": f"bomb.{bomb_suffix}", "mimeType": "image/png", "buffer": bomb_png()},
    ]


def test_bomb_is_small_and_declares_a_huge_image():
    data = bomb_png()
    assert len(data) < 200_000
    assert struct.unpack(">II", data[16:24]) == (BOMB_SIDE, BOMB_SIDE)  # IHDR width, height
    assert len(zlib.decompress(data[41:-16])) == BOMB_SIDE * (1 + BOMB_SIDE // 8)  # IDAT: every row is there
    with pytest.raises(Image.DecompressionBombError):  # Pillow's own guard agrees it is a bomb
        Image.open(io.BytesIO(data))


def settle(page) -> None:
    """Wait until the script has run and stayed finished for a moment (reruns start late)."""
    wait_for_app(page, WAIT_MS)
    for _ in range(2):  # the app reports its script state on its root element
        page.wait_for_selector(IDLE, state="attached", timeout=WAIT_MS)
        page.wait_for_timeout(700)
    page.wait_for_selector(IDLE, state="attached", timeout=WAIT_MS)


def reveal_uploaders(page) -> None:
    """Pick every visible radio choice that starts with 'Upload', so its uploader appears."""
    choices = page.locator('[data-testid="stRadioOption"]').filter(has_text=re.compile(r"^\s*Upload"))
    for i in range(choices.count()):
        choice = choices.nth(i)
        if choice.is_visible():
            choice.click()
            settle(page)


def try_files(page, uploader, where: str, stem: str) -> list[str]:
    """Upload each hostile file into one uploader; what went wrong, as readable lines."""
    problems = []
    accept = uploader.locator('input[type="file"]').get_attribute("accept") or ""
    for file in hostile_files(accept):
        uploader.locator('input[type="file"]').set_input_files(files=[file])
        uploader.get_by_text(file["name"]).first.wait_for(timeout=WAIT_MS)
        settle(page)  # the upload's rerun starts after the file arrives
        try:
            page.locator(PROBLEM).first.wait_for(timeout=30_000)
        except Exception:  # noqa: BLE001 - reported below with a screenshot
            path = screenshot(page, f"upload-{stem}-{file['name']}")
            problems.append(f"{where} {file['name']}: no error or warning shown (see {path.name})")
        if page.locator('[data-testid="stException"]').count():
            problems.append(f"{where} {file['name']}: exception box")
        if page.locator("img[src='x']").count():
            problems.append(f"{where} {file['name']}: markup from a file was rendered")
    return problems


@pytest.mark.parametrize("script", PAGES)
def test_every_uploader_rejects_bad_files_clearly(app_server, browser_page, script):
    page = browser_page
    stem = Path(script).stem
    page.goto(page_url(app_server, script))
    settle(page)
    tabs = page.locator('[data-testid="stMain"] [role="tab"]')
    done: set[str] = set()
    problems: list[str] = []
    for t in range(max(tabs.count(), 1)):
        if tabs.count() > t and tabs.nth(t).is_visible():
            tabs.nth(t).click()
            settle(page)
        reveal_uploaders(page)
        uploaders = page.locator(UPLOADER)
        for u in range(uploaders.count()):
            uploader = uploaders.nth(u)
            name = f"tab {t}: {uploader.get_attribute('aria-label') or uploader.inner_text()[:40]}"
            if uploader.is_visible() and name not in done:
                done.add(name)
                problems += try_files(page, uploader, f"{script} [{name}]", stem)
    source = (ROOT / script).read_text()
    if not done:  # the source is the cross-check: a page that asks for files must have shown them
        assert "ui.text_input(" not in source and "file_uploader(" not in source, "no uploader found"
        pytest.skip(f"{script} has no file uploader")
    screenshot(page, f"uploads-{stem}")
    assert not problems, "\n".join(problems)
