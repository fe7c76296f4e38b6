"""Every forward pass of a model, or of a piece of one, outside core, training and benchmarks goes
through core.running (``run``, ``step``, ``generate``, ``run_module``): checked by where a value came
from (front_door_check), not by what a variable is called. docs/architecture.md lists the exemptions."""

from pathlib import Path

from front_door_check import forward_calls, project_forward_calls

ROOT = Path(__file__).resolve().parents[2]
# Where a model may be called directly: the front door itself, the training commands, and the
# benchmarks, whose baselines time the bare model.
EXEMPT_DIRS = ("txviz/core/", "txviz/training/", "txviz/bench/")
# Small networks of the project's own, built or trained here and no transformers model, with no
# attention function to record: their files call those networks directly.
EXEMPT_FILES = {
    "txviz/entailment/model.py": "decomposable attention, the project's own network",
    "txviz/entailment/train.py": "trains that network",
    "txviz/block/moe.py": "the mixture-of-experts toy",
    "txviz/softhard/toy.py": "the soft-vs-hard toy",
    "txviz/why/forgetting.py": "a GRU and one attention layer of torch, built in the page",
    "txviz/why/paths.py": "the same toy layers",
    "txviz/objectives/finetune.py": "the sentence and tag heads trained here on the encoder's output",
}


def violations(root: Path) -> list[str]:
    """Every forward call outside the front door in the tree at ``root``, as "path:line"."""
    paths = [*sorted((root / "txviz").rglob("*.py")), *sorted((root / "pages").glob("*.py"))]
    paths += [root / "app.py"] if (root / "app.py").exists() else []
    # every file, exempt ones too: a model handed across files is followed into the callee
    lines = project_forward_calls({p.relative_to(root).as_posix(): p.read_text() for p in paths})
    return [
        f"{name}:{line}"
        for name, found in lines.items()
        if not (name.startswith(EXEMPT_DIRS) or name in EXEMPT_FILES)
        for line in found
    ]


def test_no_forward_call_outside_the_front_door():
    found = violations(ROOT)
    assert not found, (
        "run the model through txviz.core.running (run, step, generate; run_module for a piece):\n"
        + "\n".join(found)
    )


def test_every_exempt_file_still_needs_its_exemption():
    stale = [name for name in EXEMPT_FILES if not forward_calls((ROOT / name).read_text())]
    assert not stale, f"these files call no model any more: drop their exemption: {stale}"


def test_the_exemptions_are_listed_in_the_architecture_notes():
    notes = (ROOT / "docs" / "architecture.md").read_text()
    missing = [name for name in [*EXEMPT_DIRS, *EXEMPT_FILES] if f"`{name}`" not in notes]
    assert not missing, f"docs/architecture.md does not list these front-door exemptions: {missing}"


def test_the_checker_sees_every_form_of_forward_call():
    source = """
import torch
from transformers import AutoModelForCausalLM

def whole(loaded, ids):
    out = loaded.model(input_ids=ids)  # forward
    ids = loaded.model.generate(input_ids=ids)  # forward
    enc = loaded.model.get_encoder()(input_ids=ids)  # forward
    net = loaded.model
    return net.forward(ids)  # forward

def pieces(loaded, layout, h):
    loaded.model.get_submodule(layout.final_norm)(h)  # forward
    table = loaded.model.get_input_embeddings()
    table(h)  # forward
    base = loaded.model.base_model
    base.rotary_emb(h, h)  # forward
    for block in base.layers:
        block(h)  # forward
    for i, block in enumerate(loaded.model.model.layers):
        block(h)  # forward
    loaded.model.model.layers[3](h)  # forward

def _head(loaded, layout):
    model = loaded.model
    return model.get_submodule(layout.lm_head), None

def lens(loaded, layout, h):
    head, _ = _head(loaded, layout)
    return head(h)  # forward

def _rotary(anything, n):
    return anything.rotary_emb(n)  # forward

def caller(loaded):
    return _rotary(loaded.model.model, 4)

def typed(reference: torch.nn.Module, ids):
    return reference(input_ids=ids)  # forward

def loaded_here(name, ids):
    other = AutoModelForCausalLM.from_pretrained(name)
    same = type(other).from_pretrained(name)
    return other(ids), same(ids)  # forward

def closure(loaded):
    norm = loaded.model.model.norm
    def inner(h):
        return norm(h)  # forward
    return inner
"""
    expected = [i + 1 for i, line in enumerate(source.splitlines()) if line.endswith("# forward")]
    assert forward_calls(source) == expected


def test_the_checker_passes_what_is_not_a_forward():
    harmless = """
import torch
from txviz.core.running import run, run_module

def fine(loaded, corpus, tokenizer, ids, layout):
    result = run(loaded.model, settings, ("logits",), input_ids=ids)
    table = loaded.model.get_input_embeddings()
    vectors = run_module(table, ids)
    rows = loaded.model.get_input_embeddings().weight[ids]
    pairs = corpus.generate(12, seed=0)
    model = build_model(tokenizer)
    model(ids)
    loaded.model.eval()
    n = sum(p.numel() for p in loaded.model.parameters())
    state = {k: v.detach() for k, v in loaded.model.state_dict().items()}
    loaded.model.config.to_dict()
    words = loaded.tokenizer(ids)
    for name, module in loaded.model.named_modules():
        isinstance(module, torch.nn.Linear)
    return run_module(loaded.model.get_submodule(layout.final_norm), ids)
"""
    assert forward_calls(harmless) == []


def test_a_synthetic_violation_in_a_topic_fails_the_check(tmp_path):
    """The repository check itself fails when a topic runs a piece of the model by hand."""
    (tmp_path / "txviz" / "lens").mkdir(parents=True)
    (tmp_path / "pages").mkdir()
    (tmp_path / "txviz" / "lens" / "fine.py").write_text(
        "from txviz.core.running import run_module\n\ndef lens(loaded, layout, h):\n"
        "    return run_module(loaded.model.get_submodule(layout.lm_head), h)\n"
    )
    assert violations(tmp_path) == []
    (tmp_path / "txviz" / "lens" / "by_hand.py").write_text(
        "def lens(loaded, layout, h):\n    head = loaded.model.get_submodule(layout.lm_head)\n    return head(h)\n"
    )
    (tmp_path / "pages" / "1_Page.py").write_text(
        "from txviz import models\nloaded = models.load('x')\nloaded.model(ids)\n"
    )
    assert violations(tmp_path) == ["txviz/lens/by_hand.py:3", "pages/1_Page.py:3"]


def test_a_model_handed_to_a_function_of_another_file_is_followed_there(tmp_path):
    """A function that receives the model from another module and calls a piece of it is caught."""
    (tmp_path / "txviz" / "lens").mkdir(parents=True)
    (tmp_path / "pages").mkdir()
    (tmp_path / "txviz" / "lens" / "limit.py").write_text(
        "def learned_limit(model, n):\n    return model.embeddings(input_ids=n)\n"
    )
    (tmp_path / "txviz" / "lens" / "fine.py").write_text(
        "def learned_limit(model, n):\n    return model.embeddings(input_ids=n)\n"
    )
    (tmp_path / "txviz" / "lens" / "page_code.py").write_text(
        "from txviz.lens import limit\nfrom txviz.lens.fine import learned_limit\n\n"
        "def show(loaded, n):\n    return limit.learned_limit(loaded.model, n), learned_limit(None, n)\n"
    )
    assert violations(tmp_path) == ["txviz/lens/limit.py:2"]
    (tmp_path / "pages" / "1_Page.py").write_text(
        "from txviz.lens.fine import learned_limit as limit\nlimit(loaded.model, 3)\n"
    )
    assert violations(tmp_path) == ["txviz/lens/fine.py:2", "txviz/lens/limit.py:2"]
