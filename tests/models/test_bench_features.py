"""`python -m txviz bench features` on SmolLM2 at a tiny budget: every figure printed, the summary last,
and SAELens said to be missing where its Python is not there."""

from txviz.bench import features


def test_the_bench_prints_its_figures_and_the_summary_last(smollm2, monkeypatch, capsys):
    monkeypatch.setattr(features.models, "load", lambda *args, **kwargs: smollm2)
    argv = ["--tokens", "1024", "--held-out", "512", "--loss-windows", "2", "--k", "8", "--expansion", "2",
            "--saelens-python", "/nonexistent/python"]  # fmt: skip
    assert features.main(argv) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert lines[0].startswith("smollm2, decoder.15.resid_pre: width 576 x 2 = 1,152, k 8")
    assert any(line.startswith("forwards to decoder.15.resid_pre") for line in lines)
    assert any("ratio" in line and "to the place" in line for line in lines)
    assert any(
        line.startswith("this budget:") and "forwards" in line and "training" in line for line in lines
    )
    assert any(line.startswith("txviz   FVE") for line in lines)
    assert lines[-1].startswith("loss recovered = ") and "SAELens n/a (no Python with sae-lens" in lines[-1]
