"""The sidebar's sections: every page in exactly one, addressed by its file name as links expect."""

from collections import Counter

from txviz.app import navigation


def test_every_page_sits_in_exactly_one_section():
    listed = Counter(name for names in navigation.SECTIONS.values() for name in names)
    files = [navigation.url_name(script) for script in navigation.PAGE_FILES]
    assert sorted(listed) == sorted(files), "SECTIONS and pages/ disagree"
    assert all(count == 1 for count in listed.values()), listed
    assert "More" not in navigation.sections()


def test_sections_keep_the_order_of_SECTIONS_and_home_comes_first():
    for title, pairs in navigation.sections().items():
        assert tuple(navigation.url_name(script) for script, _ in pairs) == navigation.SECTIONS[title]
    sections = navigation.all_pages()
    assert list(sections) == ["", *navigation.SECTIONS]
    assert len(sections[""]) == 1  # Home, in no section
    assert sum(len(pages) for pages in sections.values()) == len(navigation.PAGE_FILES) + 1


def test_a_page_missing_from_the_sections_still_gets_listed(monkeypatch):
    *kept, missing = navigation.SECTIONS["Research tools"]
    monkeypatch.setattr(navigation, "SECTIONS", dict(navigation.SECTIONS, **{"Research tools": tuple(kept)}))
    assert [navigation.url_name(script) for script, _ in navigation.sections()["More"]] == [missing]
