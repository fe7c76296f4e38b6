"""Offline, as in a classroom without internet: the app asks no host but its own server. Every request to
another host is aborted; the home page and the first page of each sidebar section open with no failed
request and no console error (issue 48: a page's tab icon was fetched from fonts.gstatic.com); so does a
page that is a fresh server's first visit (Streamlit's pages/-folder way, txviz.app.legacy_pages)."""

from __future__ import annotations

from urllib.parse import urlparse

import pytest
from conftest import page_url, serve_app, wait_for_app

from txviz import page_map

pytestmark = pytest.mark.browser

PAGES = [page_map.in_section(section)[0].path for section in page_map.SECTIONS]  # one a section
# Streamlit's frontend, opened at /Page, first looks for its server at /Page/_stcore/... (404) and then at
# the root: its own way of finding a base path under a proxy, on the app's server, not a missing file.
BASE_PATH_PROBES = ("/_stcore/health", "/_stcore/host-config")


def _base_path_probe(url: str, base: str) -> bool:
    parsed = urlparse(url)
    return (
        parsed.netloc == urlparse(base).netloc
        and parsed.path.endswith(BASE_PATH_PROBES)
        and parsed.path not in BASE_PATH_PROBES  # one under a page's path, never the root's own
    )


def _watch(page, base: str) -> dict[str, list[str]]:
    """Abort every request to another host and note it, with failed requests and console errors."""
    seen: dict[str, list[str]] = {"outside": [], "failed": [], "console": []}
    host = urlparse(base).netloc

    def route(route):
        if urlparse(route.request.url).netloc == host:
            route.continue_()
        else:
            seen["outside"].append(route.request.url)
            route.abort()

    def console(message):
        where = message.location.get("url", "")
        if message.type == "error" and not _base_path_probe(where, base):
            seen["console"].append(f"{message.text} ({where})")

    page.route("**/*", route)
    page.on("requestfailed", lambda request: seen["failed"].append(f"{request.url}: {request.failure}"))
    page.on("console", console)
    return seen


def _open_offline(page, base: str, urls: list[str]) -> None:
    seen = _watch(page, base)
    for url in urls:
        page.goto(url)
        wait_for_app(page)
        page.wait_for_timeout(1500)  # the tab icon and late resources are asked for after the run
        assert page.locator('[data-testid="stException"]').count() == 0, url
    assert not seen["outside"], f"requests outside the app's server: {seen['outside']}"
    assert not seen["failed"], f"failed requests: {seen['failed']}"
    assert not seen["console"], f"console errors: {seen['console']}"


def test_pages_ask_no_host_but_the_apps_own(app_server, browser_page):
    assert len(PAGES) >= 3, PAGES  # the sections' first pages, from the app's own page list
    _open_offline(browser_page, app_server, [app_server, *(page_url(app_server, str(s)) for s in PAGES)])


def test_a_fresh_servers_first_visit_to_a_page_asks_no_other_host(browser_page):
    with serve_app("streamlit-offline-fresh.log") as url:
        _open_offline(browser_page, url, [page_url(url, str(PAGES[-1]))])
