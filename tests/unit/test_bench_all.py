"""`bench all`: ratios found in each benchmark's printed output, one markdown file, load helpers."""

from __future__ import annotations

from txviz.bench import _all, load
from txviz.cli import main

MARKDOWN = """## capture
| model | tokens | plain forward | trace_text | ratio (goal <= 1.5) |
|---|---|---|---|---|
| minilm | 128 | 10.0 ms | 12.0 ms | 1.20x |
| smollm2 | 256 | 90.0 ms | 99.0 ms | 1.10x |

ratio of bytes, mosaic / per-cell: 0.0012 (goal: under 10 MB and 2 s)
"""
FIXED = (
    f"{'pattern':<20}{'n':>6}{'dense s':>9}{'sparse s':>9}{'speedup':>9}{'(wall)':>8}{'mem ratio':>10}\n"
    f"{'local window':<20}{1024:>6}{0.5:>9.3f}{0.1:>9.3f}{5.0:>8.2f}x{4.5:>7.2f}x{'3.00x':>10}\n"
    "Total 12 s wall.\n"
)
SENTENCE = (
    "ratio txviz / tokenizers: 3.2x wall (goal: within 10x), 1.1x CPU\nsame merges: yes\n"
    "slowest per action: open generation 19.0 s, operation 2 s\n"  # 'ratio' inside words: not one
)


def test_ratios_from_markdown_tables_and_sentences():
    found = _all.ratios("capture", MARKDOWN)
    assert _all.Ratio("capture", "minilm 128: ratio (goal <= 1.5)", "1.20x") in found
    assert _all.Ratio("capture", "smollm2 256: ratio (goal <= 1.5)", "1.10x") in found
    assert any(r.what == "ratio of bytes, mosaic / per-cell" and r.value.startswith("0.0012") for r in found)
    assert len(found) == 3  # the other columns are times, not ratios


def test_ratios_from_sentences_only_where_the_word_ratio_stands_alone():
    assert _all.ratios("bpe", SENTENCE) == [
        _all.Ratio("bpe", "ratio txviz / tokenizers", "3.2x wall (goal: within 10x), 1.1x CPU")
    ]


def test_ratios_from_a_fixed_width_table():
    found = _all.ratios("masks", FIXED)
    assert found == [
        _all.Ratio("masks", "local window, n 1024: speedup", "5.00x"),
        _all.Ratio("masks", "local window, n 1024: (wall)", "4.50x"),
        _all.Ratio("masks", "local window, n 1024: mem ratio", "3.00x"),
    ]


def test_report_gathers_every_benchmark(tmp_path):
    results = [
        _all.Result("bpe", 0, 1.0, SENTENCE),
        _all.Result("masks", 1, 2.0, FIXED),
        _all.Result("quiet", 0, 0.5, "nothing to compare\n"),
    ]
    out = tmp_path / "bench.md"
    _all.write_report(results, out)
    text = out.read_text()
    assert "| bpe | ratio txviz / tokenizers | 3.2x wall (goal: within 10x), 1.1x CPU | exit 0, 1 s |" in text
    assert "| masks | local window, n 1024: speedup | 5.00x | exit 1, 2 s |" in text
    assert "| quiet | (no ratio printed) | - |" in text
    assert text.count("```text") == 3


def test_bench_all_runs_the_chosen_benchmarks_and_writes_the_file(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(_all, "run_one", lambda name, argv: _all.Result(name, 0, 0.1, SENTENCE))
    out = tmp_path / "results.md"
    assert main(["bench", "all", "--only", "bpe", "--out", str(out)]) == 0
    assert "| bpe | ratio txviz / tokenizers |" in out.read_text()
    assert "| capture |" not in out.read_text()


def test_load_helpers():
    words = [w for pair in load.WORDS for w in pair]
    assert len(set(words)) == len(words)  # no session's word is another's
    data = load.huge_text(load.WORDS[0], 1000)
    assert len(data) == 1000 and data.decode().startswith("The apple stood by the river")
    report = load.Report()
    report.add("open", 1.0)
    report.add("open", 3.0)
    report.add("generate", 2.0)
    assert report.slowest() == ("open", 3.0) and sorted(report.all_times()) == [1.0, 2.0, 3.0]
