"""No Hugging Face module name, class-name test or source sniffing outside the model map."""

from __future__ import annotations

from hf_names_check import ROOT, found_in, violations

# What is left, each with its reason; a new name anywhere else fails.
KNOWN = {
    # a mixture of experts' stacked weights and shared expert: not yet named by FeedForwardParts
    ("txviz/block/weights.py", "hasattr(..., 'down_proj')"),
    ("txviz/block/weights.py", "'down_proj'"),
    ("txviz/block/weights.py", ".down_proj"),
    ("txviz/block/weights.py", ".gate_proj"),
    ("txviz/block/weights.py", ".up_proj"),
    # a keyword transformers passes to attention functions (the rotary angles), not a module's name
    ("txviz/core/capture.py", "'position_embeddings'"),
}

SNIFFS = """
def rotary(model, base, norm, module, name):
    a = model.get_submodule(base).rotary_emb
    b = getattr(model, "embeddings", None)
    c = "Gemma" in type(norm).__name__
    d = module.__class__.__name__ == "Conv1D"
    e = name.endswith("position_embeddings.weight")
    f = model.get_encoder().embed_tokens
    g = inspect.getsource(module.__class__.forward)
    h = "attention.self.query"
    i = model.transformer.wpe
"""
CLEAN = '''
def fine(layout, model, spec):
    """Reads position_embeddings and rotary_emb only through the map (a docstring may say so)."""
    table = layout.position_table(model, "rotary")
    rows = ["embeddings"] + [f"after {i}" for i in range(3)]
    label = "LayerNorm" if spec.inv_freq is not None else "RMSNorm"
    source = inspect.getsource(FeedForward)
    return layout.embeddings(model), layout.lm_head, table, rows, label, source
'''


def _new(root) -> list[str]:
    return [f"{path}:{line}: {what}" for path, line, what in found_in(root) if (path, what) not in KNOWN]


def test_no_hugging_face_names_outside_the_model_map():
    new = _new(ROOT)
    assert not new, (
        "Hugging Face names outside txviz/core/model_map.py (name them in a Record):\n" + "\n".join(new)
    )
    stale = KNOWN - {(path, what) for path, _, what in found_in(ROOT)}
    assert not stale, f"gone from the code, drop from KNOWN: {sorted(stale)}"


def test_the_check_catches_each_form():
    found = violations(SNIFFS)
    assert [line for line, _ in found] == list(range(3, 12)), found


def test_the_check_passes_plain_labels_and_the_maps_methods():
    assert violations(CLEAN) == []


def test_a_new_file_with_a_sniff_fails_the_walk_and_the_map_may_name_it(tmp_path):
    (tmp_path / "txviz" / "topic").mkdir(parents=True)
    (tmp_path / "txviz" / "core").mkdir()
    (tmp_path / "txviz" / "topic" / "new.py").write_text(
        "def f(m):\n    return m.model.layers[0].self_attn\n"
    )
    (tmp_path / "txviz" / "core" / "model_map.py").write_text('TABLE = "rotary_emb"\n')
    assert _new(tmp_path) == ["txviz/topic/new.py:2: .self_attn"]
