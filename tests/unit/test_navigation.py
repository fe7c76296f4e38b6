"""The page map and the sidebar built from it: every script in pages/ declared once, and the map's
records as the navigation, the home page and the scripts use them."""

import ast
from collections import Counter
from pathlib import Path

import pytest

from txviz import page_map
from txviz.app import navigation

ROOT = Path(__file__).resolve().parents[2]


def test_every_script_in_pages_is_in_the_map_and_every_page_of_the_map_is_a_script():
    scripts = {p.relative_to(ROOT).as_posix() for p in (ROOT / "pages").glob("*.py")}
    declared = {page.file for page in page_map.PAGES}
    assert not scripts - declared, f"pages/ has scripts the page map lacks: {sorted(scripts - declared)}"
    assert not declared - scripts, f"the page map names scripts pages/ lacks: {sorted(declared - scripts)}"


def test_names_and_files_are_unique_and_names_are_url_safe():
    assert len(page_map.BY_NAME) == len(page_map.BY_FILE) == len(page_map.PAGES)
    for page in page_map.PAGES:
        assert page.name.replace("_", "").isalnum(), page.name
        assert page.title and page.heading and page.summary and page.icon.startswith(":material/"), page


def test_every_page_sits_in_one_known_section_and_each_setting_is_named_once():
    assert {page.section for page in page_map.PAGES} == set(page_map.SECTIONS)
    for page in page_map.PAGES:
        twice = [key for key, n in Counter(page.keys).items() if n > 1]
        assert not twice, (page.name, twice)


@pytest.mark.parametrize("page", page_map.PAGES, ids=lambda p: p.name)
def test_each_script_declares_itself_by_its_name_in_the_map(page):
    """A page script opens with ``ui.setup_page(NAME, ...)``: its heading and settings come from the map."""
    calls = [
        node
        for node in ast.walk(ast.parse(page.path.read_text()))
        if isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "setup_page"
    ]
    assert len(calls) == 1, f"{page.file} calls ui.setup_page {len(calls)} times"
    (call,) = calls
    assert isinstance(call.args[0], ast.Constant) and call.args[0].value == page.name, page.file
    assert "share" not in {k.arg for k in call.keywords}, "a page's settings live in the page map"


def test_sections_follow_the_map_and_home_comes_first():
    for title, pairs in navigation.sections().items():
        assert [script for script, _ in pairs] == [page.path for page in page_map.in_section(title)]
    sections = navigation.all_pages()
    assert list(sections) == ["", *page_map.SECTIONS]
    assert len(sections[""]) == 1  # Home, in no section
    assert sum(len(pages) for pages in sections.values()) == len(page_map.PAGES) + 1


def test_the_sidebar_titles_and_urls_are_those_the_file_names_gave():
    """Links shared before the page map keep working: the URL is the file name's, less its number."""
    for page in page_map.PAGES:
        assert page.file == f"pages/{page.path.stem.split('_', 1)[0]}_{page.name}.py", page.file
        assert page.title == page.name.replace("_", " "), page.title


def test_an_unknown_page_names_the_pages_there_are():
    with pytest.raises(page_map.UnknownPage, match="Attention_Explorer"):
        page_map.page("Attention_Explorr")


def test_settings_and_their_types():
    explorer = page_map.page("Attention_Explorer")
    assert explorer.refusal({"layer": 2, "view": "All heads", "present": True}) == ""
    assert "keeps no setting layr" in explorer.refusal({"layr": 2})
    assert "layer" in explorer.refusal({"layr": 2})  # the real settings listed
    assert "threshold is a float" in explorer.refusal({"threshold": "high"})
    assert explorer.refusal({"threshold": 0}) == ""  # a whole number for a float, as link_value takes it
    assert "hide_special is a bool" in explorer.refusal({"hide_special": 1})
    assert page_map.page("Coreference").refusal({"layer_x@minilm": 2}) == ""  # a pattern


def test_the_common_setting_is_projector_mode_and_no_page_keeps_a_room_secret():
    from txviz.app import links, projector

    assert [s.key for s in page_map.COMMON] == [projector.PARAM]
    for page in page_map.PAGES:
        kept = [key for key in links.PRIVATE if page.setting(key) is not None]
        assert not kept, (page.name, kept)
