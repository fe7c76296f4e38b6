"""Every forward pass of a model outside core, training and benchmarks goes through core.running.run."""

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# Where a model may be called directly: the front door itself, the training commands, and the
# benchmarks, whose baselines time the bare model.
EXEMPT_DIRS = ("txviz/core/", "txviz/training/", "txviz/bench/")
# Small networks of the project's own, trained here and no transformers model, with no attention
# function to record (decomposable attention and its relatedness head, the mixture-of-experts toy, the
# one-vs-two heads toy, the decoder with and without its mask, the digit readers): their files call
# those networks directly.
EXEMPT_FILES = {
    "txviz/entailment/model.py",
    "txviz/entailment/train.py",
    "txviz/block/moe.py",
    "txviz/selfattention/twoheads.py",
    "txviz/entailment/relatedness.py",
    "txviz/masks/peeking.py",
    "txviz/seq2seq/nat.py",
}
MODEL_NAMES = {"model", "vit", "gpt", "encoder", "decoder"}


def _is_model(node: ast.expr) -> bool:
    """``model``, ``loaded.model``, ``self.model``, ``model.get_encoder()``."""
    if isinstance(node, ast.Name):
        return node.id in MODEL_NAMES
    if isinstance(node, ast.Attribute):
        return node.attr in MODEL_NAMES
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        return node.func.attr in ("get_encoder", "get_decoder")
    return False


def forward_calls(source: str) -> list[int]:
    """Line numbers of every call of a model (``model(...)``, ``loaded.model(...)``, ``model.generate(...)``)."""
    lines = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        if (
            _is_model(func)
            or isinstance(func, ast.Attribute)
            and func.attr in ("generate", "forward")
            and _is_model(func.value)
        ):
            lines.append(node.lineno)
    return sorted(lines)


def test_no_forward_call_outside_the_front_door():
    found = []
    for path in [*sorted((ROOT / "txviz").rglob("*.py")), *sorted((ROOT / "pages").glob("*.py"))]:
        name = path.relative_to(ROOT).as_posix()
        if name.startswith(EXEMPT_DIRS) or name in EXEMPT_FILES:
            continue
        found += [f"{name}:{line}" for line in forward_calls(path.read_text())]
    assert not found, "call the model through txviz.core.running.run (or step, generate):\n" + "\n".join(
        found
    )


def test_the_checker_sees_every_form_of_forward_call():
    source = """
out = model(input_ids=ids)
out = loaded.model(**inputs)
out = self.model(x)
ids = loaded.model.generate(input_ids=ids)
ids = model.generate(ids)
enc = model.get_encoder()(input_ids=ids)
logits = vit(pixel_values=p).logits
"""
    assert forward_calls(source) == [2, 3, 4, 5, 6, 7, 8]
    harmless = """
from txviz.core.running import run
result = run(loaded.model, settings, ("logits",), input_ids=ids)
table = loaded.model.get_input_embeddings()
pairs = corpus.generate(12, seed=0)
model = build_model(tokenizer)
loaded.model.eval()
"""
    assert forward_calls(harmless) == []
