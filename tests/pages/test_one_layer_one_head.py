"""Every page with a layer or head picker runs on a model with one layer and one head.

A slider cannot span a single value (Streamlit refuses min == max), so these pages used to crash on
such a model; the shared picker shows a caption instead. The models are random, built from configs.
Every page whose model picker offers an encoder or a decoder is found in the page scripts (in the tab
that holds the picker) and run with a one-layer, one-head model of each kind it offers; the views
listed by hand below are further tabs of those pages.
"""

import ast
import shutil
from dataclasses import dataclass
from pathlib import Path

import pytest
import torch
import transformers as tf
from conftest import ROOT
from streamlit.testing.v1 import AppTest

from txviz import page_map
from txviz.app.ui import OTHER_MODEL
from txviz.models.registry import ASSET_MODELS, minilm_folder, smollm2_folder

ONLY_ONE = ("Layer 0 (the only one)", "Head 0 (the only one)")


@pytest.fixture(scope="module")
def one_head_bert(tmp_path_factory):
    """A one-layer, one-head BERT with MiniLM's tokenizer, saved as a folder."""
    folder = tmp_path_factory.mktemp("bert-1x1")
    tokenizer = tf.AutoTokenizer.from_pretrained(minilm_folder())
    torch.manual_seed(0)
    config = tf.BertConfig(
        vocab_size=tokenizer.vocab_size,
        hidden_size=16,
        num_hidden_layers=1,
        num_attention_heads=1,
        intermediate_size=32,
    )
    tf.BertModel(config).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return str(folder)


@pytest.fixture(scope="module")
def one_head_vit(tmp_path_factory):
    """digits-vit's shape and image processor with one layer and one head, random weights."""
    folder = tmp_path_factory.mktemp("vit-1x1")
    config = tf.AutoConfig.from_pretrained(ASSET_MODELS / "digits-vit")
    config.num_hidden_layers, config.num_attention_heads = 1, 1
    torch.manual_seed(0)
    tf.ViTForImageClassification(config).save_pretrained(folder)
    shutil.copy(ASSET_MODELS / "digits-vit" / "preprocessor_config.json", folder)
    return str(folder)


def run(page: str, model_key: str, folder: str, **state) -> AppTest:
    at = AppTest.from_file(str(ROOT / "pages" / page), default_timeout=300)
    at.session_state[model_key] = OTHER_MODEL
    at.session_state[f"{model_key}_custom"] = folder
    for key, value in state.items():
        at.session_state[key] = value
    return at.run()


def assert_runs(at: AppTest, captions: tuple[str, ...] = ONLY_ONE) -> None:
    assert not at.exception, at.exception
    assert not at.error, [e.value for e in at.error]
    shown = [c.value for c in at.caption]
    for caption in captions:
        assert caption in shown, shown


@pytest.mark.parametrize(
    "page, state",
    [
        ("2_Attention_Explorer.py", {}),
        ("2_Attention_Explorer.py", {"view": "All heads"}),
        ("2_Attention_Explorer.py", {"view": "Token focus"}),
        ("2_Attention_Explorer.py", {"view": "Aggregates"}),
        ("5_Masking_Patterns.py", {"view": "On a real model"}),
        ("7_Soft_vs_Hard.py", {}),
        ("17_Query_Key_Space.py", {}),
        ("17_Query_Key_Space.py", {"qk_view": "Every head of a layer"}),
        ("16_Head_Detectors.py", {"rep_n": 1, "rep_len": 4}),
    ],
)
def test_pages_on_a_one_layer_one_head_encoder(one_head_bert, page, state):
    captions = () if page.startswith("16") else ONLY_ONE  # number boxes there: 0 to 0 is fine
    assert_runs(run(page, "model", one_head_bert, **state), captions)


def test_self_attention_real_model_tab(one_head_bert):
    assert_runs(run("1_Self_Attention.py", "real_model", one_head_bert, view="On a real model"))


@pytest.mark.parametrize("view", ["Data flow", "One block"])
def test_transformer_block(one_head_bert, view):
    at = run("11_Transformer_Block.py", "model", one_head_bert, block_view=view)
    captions = ONLY_ONE[:1] + (
        ("Head (for the per-head arrays) 0 (the only one)",) if view == "One block" else ()
    )
    assert_runs(at, captions)


def test_vision_transformer(one_head_vit):
    assert_runs(run("10_Vision_Transformer.py", "vision_model", one_head_vit), ONLY_ONE[:1])


@pytest.fixture(scope="module")
def one_head_bart(tmp_path_factory):
    """date-bart's shape and tokenizer with one layer and one head in each stack, random weights."""
    folder = tmp_path_factory.mktemp("bart-1x1")
    source = ASSET_MODELS / "date-bart"
    config = tf.AutoConfig.from_pretrained(source)
    config.encoder_layers = config.decoder_layers = 1
    config.encoder_attention_heads = config.decoder_attention_heads = 1
    torch.manual_seed(0)
    tf.AutoModelForSeq2SeqLM.from_config(config).save_pretrained(folder)
    tf.AutoTokenizer.from_pretrained(source).save_pretrained(folder)
    return str(folder)


@pytest.mark.parametrize("view", ["Decoding step by step", "Cross-attention arithmetic"])
def test_encoder_decoder(one_head_bart, view):
    assert_runs(run("9_Encoder_Decoder.py", "model", one_head_bart, view=view, max_steps=3))


@pytest.fixture(scope="module")
def one_head_llama(tmp_path_factory):
    """A one-layer, one-head Llama with SmolLM2's tokenizer, random weights."""
    folder = tmp_path_factory.mktemp("llama-1x1")
    tokenizer = tf.AutoTokenizer.from_pretrained(smollm2_folder())
    torch.manual_seed(0)
    config = tf.LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=16,
        num_hidden_layers=1,
        num_attention_heads=1,
        num_key_value_heads=1,
        intermediate_size=32,
        max_position_embeddings=128,
    )
    tf.LlamaForCausalLM(config).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return str(folder)


def test_live_generation_steers_after_the_only_layer(one_head_llama):
    at = run("8_Live_Generation.py", "gen_model", one_head_llama, gen_steer=True, gen_max=3, gen_chat=False)
    assert_runs(at, ("Add after layer 0 (the only one)",))
    at.button(key="gen_go").click().run()
    assert_runs(at, ("Add after layer 0 (the only one)",))
    steered = at.session_state["generation"]["steered"]
    assert steered["label"].endswith("after layer 0") and len(steered["steps"]) == 3


@dataclass(frozen=True)
class Picker:
    """A page's model picker: its session key, the kinds it offers, and the tab that holds it."""

    page: str
    key: str
    kinds: tuple[str, ...]
    tab: tuple[str, str] | None  # (tabs key, label), None when the picker is outside any tab


def _literal(tree: ast.Module, node: ast.expr):
    """A literal, or the literal a module-level name (or an imported module's, ``module.NAME``) is assigned."""
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
        module = ast.parse(_module_file(_imported_modules(tree)[node.value.id]).read_text())
        return _literal(module, ast.Name(node.attr))
    if isinstance(node, ast.Name):
        for stmt in tree.body:
            if isinstance(stmt, ast.Assign) and any(getattr(t, "id", None) == node.id for t in stmt.targets):
                return ast.literal_eval(stmt.value)
        raise LookupError(node.id)
    return ast.literal_eval(node)


def _tabs(tree: ast.Module) -> dict[str, tuple[str, str]]:
    """Tab variable -> (tabs key, label), from ``a, b = st.tabs(LABELS, key=K, ...)``."""
    found = {}
    for stmt in tree.body:
        if not (isinstance(stmt, ast.Assign) and isinstance(stmt.value, ast.Call)):
            continue
        call, target = stmt.value, stmt.targets[0]
        if not (
            isinstance(call.func, ast.Attribute)
            and call.func.attr == "tabs"
            and isinstance(target, ast.Tuple)
        ):
            continue
        labels = _literal(tree, call.args[0])
        key = next(_literal(tree, k.value) for k in call.keywords if k.arg == "key")
        found |= {t.id: (key, label) for t, label in zip(target.elts, labels, strict=True)}
    return found


def _enclosing_tab(parents: dict, node: ast.AST, tabs: dict) -> tuple[str, str] | None:
    """The tab of the nearest ``if X.open:`` around ``node``."""
    while node in parents:
        node = parents[node]
        test = getattr(node, "test", None)
        if isinstance(node, ast.If) and isinstance(test, ast.Attribute) and test.attr == "open":
            return tabs.get(getattr(test.value, "id", None))
    return None


def pickers(page: Path) -> list[Picker]:
    """The model pickers of one page script that offer an encoder or a decoder."""
    tree = ast.parse(page.read_text())
    parents = {child: parent for parent in ast.walk(tree) for child in ast.iter_child_nodes(parent)}
    tabs, found = _tabs(tree), []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
            continue
        if node.func.attr != "model_picker":
            continue
        options = {k.arg: k.value for k in node.keywords}
        kinds = tuple(_literal(tree, options["kinds"])) if "kinds" in options else ("encoder", "decoder")
        key = _literal(tree, options["key"]) if "key" in options else "model"
        tab = _enclosing_tab(parents, node, tabs)
        function = next((p for p in _ancestors(parents, node) if isinstance(p, ast.FunctionDef)), None)
        if tab is None and function is not None:  # a view drawn by a function: the tab that calls it
            calls = [
                n
                for n in ast.walk(tree)
                if isinstance(n, ast.Call) and getattr(n.func, "id", "") == function.name
            ]
            tab = next((t for c in calls if (t := _enclosing_tab(parents, c, tabs))), None)
        if {"encoder", "decoder"} & set(kinds):
            found.append(Picker(page.name, key, kinds, tab))
    return found + _view_pickers(page, tree)


def _picker_options(tree: ast.Module, node: ast.Call) -> tuple[str, tuple[str, ...]]:
    """A model_picker call's session key and kinds."""
    options = {k.arg: k.value for k in node.keywords}
    kinds = tuple(_literal(tree, options["kinds"])) if "kinds" in options else ("encoder", "decoder")
    return (_literal(tree, options["key"]) if "key" in options else "model"), kinds


def _imported_modules(tree: ast.Module) -> dict[str, str]:
    """A script's names for what it imports with ``from package import name`` -> their dotted names."""
    return {
        alias.asname or alias.name: f"{node.module}.{alias.name}"
        for node in tree.body
        if isinstance(node, ast.ImportFrom) and node.module
        for alias in node.names
    }


def _module_file(module: str) -> Path:
    path = ROOT / Path(*module.split("."))
    return path.with_suffix(".py") if path.with_suffix(".py").exists() else path / "__init__.py"


def _view_pickers(page: Path, tree: ast.Module) -> list[Picker]:
    """The pickers of the views a page lists in ``ui.page_tabs({label: module.view, ...}, key=K)``:
    found in the view's function in its views module, or in a function of that module it calls."""
    modules, found = _imported_modules(tree), []
    for call in ast.walk(tree):
        if not (isinstance(call, ast.Call) and getattr(call.func, "attr", "") == "page_tabs"):
            continue
        key = next((_literal(tree, k.value) for k in call.keywords if k.arg == "key"), "view")
        for label, view in zip(call.args[0].keys, call.args[0].values, strict=True):
            if not (isinstance(view, ast.Attribute) and getattr(view.value, "id", None) in modules):
                continue
            views = ast.parse(_module_file(modules[view.value.id]).read_text())
            functions = {f.name: f for f in views.body if isinstance(f, ast.FunctionDef)}
            todo, seen = [view.attr], set()
            while todo:  # the view and the functions of its module it calls
                name = todo.pop()
                if name in seen or name not in functions:
                    continue
                seen.add(name)
                for node in ast.walk(functions[name]):
                    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
                        todo.append(node.func.id)
                    if isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "model_picker":
                        picker_key, kinds = _picker_options(views, node)
                        if {"encoder", "decoder"} & set(kinds):
                            found.append(Picker(page.name, picker_key, kinds, (key, label.value)))
    return found


def _ancestors(parents: dict, node: ast.AST):
    while node in parents:
        node = parents[node]
        yield node


PICKERS = [p for page in sorted(page.path for page in page_map.PAGES) for p in pickers(page)]
CASES = [(p, kind) for p in PICKERS for kind in ("encoder", "decoder") if kind in p.kinds]


def test_discovery_finds_every_model_picker_of_an_encoder_or_decoder():
    pages = {p.page for p in PICKERS}
    assert {
        "18_Interventions.py",
        "19_Long_Documents.py",
        "8_Live_Generation.py",
        "2_Attention_Explorer.py",
    } <= pages
    real = next(p for p in PICKERS if p.page == "1_Self_Attention.py")
    assert real.key == "real_model" and real.tab == ("view", "On a real model")
    second = next(p for p in PICKERS if p.key == "model_b")
    assert second.tab[0] == "heads_view"  # drawn by a function the compare tab calls


@pytest.mark.parametrize("picker, kind", CASES, ids=[f"{p.page}:{p.key}:{k}" for p, k in CASES])
def test_every_page_runs_on_a_one_layer_one_head_model(picker, kind, one_head_bert, one_head_llama):
    folder = one_head_bert if kind == "encoder" else one_head_llama
    state = dict([picker.tab]) if picker.tab else {}
    at = run(picker.page, picker.key, folder, **state)
    assert not at.exception, at.exception
    assert not at.error, [e.value for e in at.error]
