"""The page map: every page of the app declared once, in the sidebar's order.

A page's ``name`` is its one key: its URL (``/Attention_Explorer``), the target of links, the page of a
lecture step and of a "Start here" step, and what a room's step opens. Its settings are the link keys it
keeps in its address (``links.py``); a lecture file may set these and no others. The script itself stays
in ``pages/`` and starts with ``ui.setup_page(NAME, intro)``. No Streamlit here: lecture files, the
benchmarks and the app all read the same records.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from fnmatch import fnmatchcase
from pathlib import Path
from typing import Any

from txviz.core import paths


@dataclass(frozen=True)
class Setting:
    """One link key a page keeps (``pattern`` keys such as ``"layer_*@*"`` are named after a choice).

    ``type``, where known, is what the page's ``link_value`` takes (any other type falls back to its
    default, so a lecture file is refused it); ``default`` is the page's value when it is fixed."""

    key: str
    type: type | None = None
    default: Any = None

    @property
    def pattern(self) -> bool:
        return any(c in self.key for c in "*?[")

    def matches(self, key: str) -> bool:
        return fnmatchcase(key, self.key) if self.pattern else key == self.key

    def accepts(self, value: Any) -> bool:
        """A value of the type the page reads (a whole number for a float, as ``link_value`` allows)."""
        if self.type is None:
            return True
        return type(value) is self.type or (self.type is float and type(value) is int)

    def __str__(self) -> str:
        return f"{self.key} ({self.type.__name__})" if self.type else self.key


# Every page reads these from its address besides its own settings (projector mode: present=true).
COMMON = (Setting("present", bool, False),)


@dataclass(frozen=True)
class Page:
    """One page: its key, how the sidebar and home page show it, its script and its link settings."""

    name: str  # the URL path and the one key of links, steps and rooms
    title: str  # in the sidebar and on its home-page card
    heading: str  # the page's own title line (and the browser tab's)
    icon: str  # the sidebar's material icon
    section: str  # one of SECTIONS
    summary: str  # one line, on its home-page card
    file: str  # the script, relative to the repository root: "pages/2_Attention_Explorer.py"
    settings: tuple[Setting, ...] = ()

    @property
    def path(self) -> Path:
        return paths.ROOT / self.file

    @property
    def keys(self) -> tuple[str, ...]:
        """The setting keys (patterns too), as ``links.shared_keys`` takes them."""
        return tuple(s.key for s in self.settings)

    def setting(self, key: str) -> Setting | None:
        """The page's setting (or a common one) that ``key`` is, or None when the page keeps no such key."""
        return next((s for s in (*self.settings, *COMMON) if s.matches(key)), None)

    def refusal(self, settings: Mapping[str, Any]) -> str:
        """Why these settings cannot open the page ('' when they can): a key it does not keep or a value
        of a type it does not read, with the page's real settings listed."""
        kept = ", ".join(str(s) for s in (*self.settings, *COMMON))
        unknown = [str(k) for k in settings if self.setting(str(k)) is None]
        if unknown:
            return f"{self.name} keeps no setting {', '.join(unknown)} in its link; its settings are {kept}."
        for key, value in settings.items():
            setting = self.setting(str(key))
            if not setting.accepts(value):
                return f"{self.name}'s setting {key} is a {setting.type.__name__}, not {value!r}; its settings are {kept}."
        return ""


def _settings(*keys: str | Setting) -> tuple[Setting, ...]:
    return tuple(k if isinstance(k, Setting) else Setting(k) for k in keys)


def S(key: str, default: Any) -> Setting:  # noqa: N802 (short: a typed setting in the table below)
    """A setting whose default, and so whose type, is fixed."""
    return Setting(key, type(default), default)


SECTIONS = ("Attention", "Inside the model", "Systems from the textbooks", "Research tools", "Teaching")

PAGES: tuple[Page, ...] = (
    Page(
        "Course_Map", "Course Map", "Course map", ":material/map:", "Attention",
        "Course map: self-attention growing into the transformer, each part linked to the page and tab "
        "that shows it.",
        "pages/22_Course_Map.py",
        _settings("map_part"),
    ),
    Page(
        "Self_Attention", "Self Attention", "Self-attention, step by step", ":material/calculate:", "Attention",
        "Self-attention step by step: a toy you can edit, several heads, then one real query of a real model.",
        "pages/1_Self_Attention.py",
        _settings(
            "view", S("fig_12_1", False), S("n_tokens", 3), S("d_model", 4), S("seed", 0), S("scaled", True),
            "query", "n_heads", "real_model", "real_text", "real_layer", "real_head", "real_query",
        ),
    ),
    Page(
        "Attention_Explorer", "Attention Explorer", "Attention Explorer", ":material/grid_on:", "Attention",
        "Every head and layer of a real model on your text: heatmaps, grids, token focus, rollout.",
        "pages/2_Attention_Explorer.py",
        _settings(
            "model", "text", "layer", "head", S("hide_special", False), S("whole_words", False),
            S("log_scale", False), S("threshold", 0.0), "aggregate", "view", "focus_token",
            S("focus_mean", False),
        ),
    ),
    Page(
        "Masking_Patterns", "Masking Patterns", "Masking patterns", ":material/filter_alt:", "Attention",
        "Masking patterns: which pairs attention computes, what a pattern does to a real model, and what it "
        "saves.",
        "pages/5_Masking_Patterns.py",
        _settings(
            "view", "gallery_pattern", S("gallery_n", 16), "model", "text", "model_pattern", "layer", "head",
            S("swin_h", 8), S("swin_w", 8), S("swin_window", 4),
        ),
    ),
    Page(
        "Soft_vs_Hard", "Soft vs Hard", "Soft vs hard attention", ":material/tune:", "Attention",
        "Soft vs hard attention: one real model under five normalizers, and a toy trained both ways.",
        "pages/7_Soft_vs_Hard.py",
        _settings(
            "model", "text", S("temperature", 0.5), S("k", 2), "layer", "head", "measure", S("new_tokens", 8),
            S("example", 0),
        ),
    ),
    Page(
        "Why_Attention", "Why Attention", "Why attention", ":material/compare_arrows:", "Attention",
        "Why attention: a CNN, an RNN and self-attention compared by path length and cost, measured here "
        "(Table 15.1).",
        "pages/14_Why_Attention.py",
        _settings(
            S("n", 8), S("k", 3), "view", Setting("depth", int), S("forget_n", 32), "metric",
            S("hier_model", "minilm"), Setting("hier_example", str),
        ),
    ),
    Page(
        "Tokenization", "Tokenization", "BPE merge lab", ":material/content_cut:", "Inside the model",
        "BPE merge lab: train byte-pair encoding merge by merge, then see real tokenizers cut your text.",
        "pages/4_Tokenization.py",
        _settings(
            "bpe_view", "bpe_corpus", S("bpe_target", 0), S("bpe_step", 0), Setting("bpe_real_text", str),
            "bpe_real_word",
        ),
    ),
    Page(
        "Positional_Encoding", "Positional Encoding", "Positional encoding lab", ":material/waves:",
        "Inside the model",
        "Positional encoding lab: sinusoids, binary positions, shifts as rotations, learned and rotary "
        "positions.",
        "pages/3_Positional_Encoding.py",
        _settings(
            S("n", 60), S("d", 32), S("base", 10000), "view", S("bits", 3), Setting("t", int), S("phi", 5),
            "measure", "xp_text", "xp_source",
        ),
    ),
    Page(
        "Transformer_Block", "Transformer Block", "Transformer Block", ":material/account_tree:",
        "Inside the model",
        "The transformer block on a real model: data flow, one block as code, residual stream, norms, logit "
        "lens.",
        "pages/11_Transformer_Block.py",
        _settings(
            "model", "text", Setting("block_stack", str), "block_layer",
            S("block_stage", "embedding"), "block_view", "block_head", "block_step",
        ),
    ),
    Page(
        "Live_Generation", "Live Generation", "Live Generation", ":material/edit_note:", "Inside the model",
        "Live generation: tokens appear one by one, with what each step considered and attended to.",
        "pages/8_Live_Generation.py",
        _settings(
            "gen_model", Setting("gen_prompt", str), S("gen_max", 32), S("gen_temperature", 0.0),
            S("gen_seed", 0), S("gen_top_k", 0), S("gen_top_p", 1.0), "gen_layer", "gen_head", "gen_view",
            S("gen_steer", False), "gen_steer_towards", "gen_steer_away", "gen_steer_layer",
            "gen_steer_strength",
        ),
    ),
    Page(
        "Encoder_Decoder", "Encoder Decoder", "Encoder-decoder and cross-attention", ":material/swap_horiz:",
        "Inside the model",
        "Encoder-decoder: decoding step by step, with cross-attention aligning target to source.",
        "pages/9_Encoder_Decoder.py",
        _settings(
            "model", "method", S("beams", 4), S("max_steps", 40), "source_*", "view", Setting("step", int),
            "kind",
            *(f"{part}_{kind}" for kind in ("cross", "decoder", "encoder") for part in ("layer", "head")),
            "x_layer", "x_head", "x_query", "grammar_*",
        ),
    ),
    Page(
        "Coreference", "Coreference", "Coreference", ":material/link:", "Systems from the textbooks",
        "Coreference: where does a pronoun look, and does that follow what it means?",
        "pages/6_Coreference.py",
        _settings(
            "model", "pair_source", "pair_index", Setting("own_a", str), Setting("own_b", str), "query", "kind",
            "layer_*@*", "head_*@*",
        ),
    ),
    Page(
        "Entailment", "Entailment", "Entailment", ":material/rule:", "Systems from the textbooks",
        "Entailment: decomposable attention aligns a premise with a hypothesis, compares, sums and classifies.",
        "pages/15_Entailment.py",
        _settings("example", Setting("premise", str), Setting("hypothesis", str)),
    ),
    Page(
        "Vision_Transformer", "Vision Transformer", "Vision Transformer", ":material/image:",
        "Systems from the textbooks",
        "Vision transformer: an image cut into patches, and where each head of the model looks.",
        "pages/10_Vision_Transformer.py",
        _settings(
            "vit_view", "book_photo", S("book_patch", 90), "vision_model", "image_source", "sample", "view",
            "layer", "head", Setting("patch", int), S("opacity", 0.6), S("threshold", 0.0), "ablate_layer",
            "ablate_head", "sagan_photo", S("sagan_row", 10), S("sagan_col", 20), S("detr_seed", 0),
            S("detr_digits", 3),
        ),
    ),
    Page(
        "Image_GPT", "Image GPT", "Image GPT", ":material/draw:", "Systems from the textbooks",
        "Image GPT: a transformer decoder draws digits pixel by pixel, and completes the lower half of one.",
        "pages/12_Image_GPT.py",
        _settings(S("igpt_digit", "7"), "view", Setting("igpt_pixel", int), S("igpt_heldout", 0), S("igpt_told", False)),
    ),
    Page(
        "Image_Captioning", "Image Captioning", "Image Captioning", ":material/closed_caption:",
        "Systems from the textbooks",
        "Image captioning: soft attention averages image regions, hard attention picks one, word by word.",
        "pages/13_Image_Captioning.py",
        _settings(Setting("cap_source", str), Setting("cap_index", int), "cap_digits", S("cap_seed", 0), S("cap_sample", 0)),
    ),
    Page(
        "Head_Detectors", "Head Detectors", "Head Detectors", ":material/biotech:", "Research tools",
        "Head detectors: score every head for previous-token, sink, induction and more; attention against "
        "attribution; two models side by side.",
        "pages/16_Head_Detectors.py",
        _settings(
            "model", S("detector", "previous_token"), "pick_layer", "pick_head", "model_b", "heads_view",
            Setting("attr_text", str), Setting("attr_other", str), S("attr_skip", True), "cmp_detector",
            S("cmp_rel_depth", 0.5),
        ),
    ),
    Page(
        "Head_Atlas", "Head Atlas", "Head Atlas", ":material/travel_explore:", "Research tools",
        "Head Atlas: every head of a model scored over a whole corpus once, stored, and given its own page.",
        "pages/24_Head_Atlas.py",
        _settings(
            "model", "atlas_corpus", "atlas_chars", S("atlas_window", 256), Setting("atlas_open", bool),
            "atlas_view", "metric", "metric_x", "metric_y", "finder_rank", "layer", "head", "criterion",
            "context", "model_b", "cmp_metric",
        ),
    ),
    Page(
        "Query_Key_Space", "Query Key Space", "Query Key Space", ":material/scatter_plot:", "Research tools",
        "The query-key space of a head: every token's query and key in one 2-D map, as in AttentionViz.",
        "pages/17_Query_Key_Space.py",
        _settings(
            "model", "qk_layer", "qk_head", S("qk_method", "PCA"), S("qk_color", "query / key"),
            S("qk_translate", True), S("qk_skip_first", False), "qk_view",
        ),
    ),
    Page(
        "Why_Attend", "Why Attend", "Why Attend", ":material/join_inner:", "Research tools",
        "Why a head attends: one attention score split exactly into what built the query and what built the "
        "key.",
        "pages/23_Why_Attend.py",
        _settings(
            "model", "why_text", "why_layer", "why_head", "why_query", "why_key", S("why_mode", "this key"),
            "why_other", S("why_features", False),
        ),
    ),
    Page(
        "Features", "Features", "Features of your own model", ":material/blur_on:", "Research tools",
        "Features of your own model: a sparse autoencoder trained here at a place, a page per feature.",
        "pages/25_Features.py",
        _settings(
            "model", "place", Setting("feature", int), "features_corpus", S("features_tokens", 16_384),
            "features_view",
        ),
    ),
    Page(
        "Interventions", "Interventions", "Interventions", ":material/content_cut:", "Research tools",
        "Interventions: ablate, patch and steer heads, MLPs and the residual stream, and see which parts "
        "matter.",
        "pages/18_Interventions.py",
        _settings(
            "model", "text", S("answer", " Mary"), S("wrong", " John"), "metric", S("target", "head"),
            "iv_layer", "iv_head", S("mode", "zero"), "iv_view", "sweep_mode", Setting("corrupt", str),
            "patch_layer", "patch_head", "positive", "negative", S("steer_prompt", "I think the movie was"),
            "steer_layer", "strength", S("steer_new", 24),
        ),
    ),
    Page(
        "Long_Documents", "Long Documents", "Long Documents", ":material/article:", "Research tools",
        "Thousands of tokens of attention: every layer reduced while it runs, the whole document first, exact "
        "rows on demand.",
        "pages/19_Long_Documents.py",
        _settings(
            "model", "text", Setting("max_tokens", int), "layer", "head", S("heads_mean", True), S("tile_stat", "mean"),
            S("level", "sentences"), S("log_scale", True), "view", "queries", "keys",
        ),
    ),
    Page(
        "Lectures", "Lectures", "Lectures", ":material/school:", "Teaching",
        "Lectures as guided tours: each step opens a page with its settings, and asks you to predict first.",
        "pages/20_Lectures.py",
        _settings("lecture", "tour_model"),
    ),
    Page(
        "Lecture_Room", "Lecture Room", "Lecture Room", ":material/co_present:", "Teaching",
        "Lecture room: lead thirty laptops through a lecture, ask the class to predict, reveal the live answer.",
        "pages/21_Lecture_Room.py",
        _settings("room_lecture"),
    ),
)  # fmt: skip

BY_NAME = {page.name: page for page in PAGES}
BY_FILE = {page.file: page for page in PAGES}


class UnknownPage(KeyError):
    """A name (or script) the map does not hold."""


def page(name: str) -> Page:
    """The page of that name; UnknownPage lists the names there are."""
    try:
        return BY_NAME[name]
    except KeyError:
        raise UnknownPage(f"no page {name!r}; pages are {', '.join(BY_NAME)}") from None


def of_file(script: str | Path) -> Page:
    """The page whose script this is ("pages/2_Attention_Explorer.py", relative or absolute)."""
    path = Path(script)
    relative = path.relative_to(paths.ROOT).as_posix() if path.is_absolute() else path.as_posix()
    try:
        return BY_FILE[relative]
    except KeyError:
        raise UnknownPage(f"no page has the script {relative!r}") from None


def in_section(section: str) -> tuple[Page, ...]:
    """The pages of one section, in the sidebar's order."""
    return tuple(p for p in PAGES if p.section == section)
