"""The Interventions page's tabs: ablate one part, ablate every head, patch, steer."""

from __future__ import annotations

from dataclasses import dataclass

import streamlit as st

from txviz.app import teaching, ui, widgets
from txviz.figures import grids
from txviz.interventions import ablation, export, metrics, patching, runs, steering
from txviz.interventions import figures as figs

TEXT = "When Mary and John went to the store, John gave a drink to"
CORRUPT = "When Mary and John went to the store, Mary gave a drink to"
POSITIVE, NEGATIVE = steering.POSITIVE, steering.NEGATIVE  # shared with Live Generation
ANSWER_KEYS = ("answer", "answer_sweep", "answer_patch")  # each tab's answer box
WRONG_KEYS = ("wrong", "wrong_sweep", "wrong_patch")
# With the prompt sets swapped (towards NEGATIVE) this turns SmolLM2's upbeat continuation of
# "I think the movie was" into "a disaster..."; 4 and more make it babble.
STEER_STRENGTH = 1.0


@dataclass(frozen=True)
class Settings:
    """What every tab shares: the model's name (for links and scripts) and the page's prompt."""

    name: str
    text: str


def prompt(loaded, name: str) -> Settings:
    """One prompt for the page, above the tabs: Ablate, Every head and Patch (as its clean prompt) read it."""
    text = ui.text_input("Prompt", TEXT)
    follow_prompt(loaded, text)
    return Settings(name, text)


@ui.cached(max_entries=16)
@ui.heavy
def cached_ablation(loaded, text, kind, answer, wrong, parts, mode, reference, edges, view):
    metric = metrics.make_metric(loaded, kind, answer, wrong)
    return ablation.ablate(loaded, text, metric, parts, mode, reference, edges, view)


@ui.cached(max_entries=4, spinner="Ablating every head and MLP, one per batch row...")
@ui.heavy
def cached_sweep(loaded, text, kind, answer, wrong, mode, reference):
    return ablation.sweep(loaded, text, metrics.make_metric(loaded, kind, answer, wrong), mode, reference)


@ui.cached(max_entries=4, spinner="Patching every layer, position, head and MLP...")
@ui.heavy
def cached_patch(loaded, clean, corrupt, kind, answer, wrong):
    return patching.patch(loaded, clean, corrupt, metrics.make_metric(loaded, kind, answer, wrong))


@ui.cached(max_entries=8, progress="Generating with and without the steering vector...")
@ui.heavy
def cached_steer(loaded, positive, negative, layer, prompt, strength, max_new, progress):
    found, pair = steering.steer(
        loaded, positive, negative, layer, prompt, strength, max_new, progress=progress
    )
    return found.norm, pair


@ui.cached(max_entries=32, spinner=False)
@ui.heavy
def top_token(loaded, text):
    return runs.top_next_token(loaded, text)


@ui.cached(max_entries=32, spinner=False)
@ui.heavy
def likeliest_two(loaded, text):
    return tuple(runs.likeliest_next_tokens(loaded, text, 2))


def follow_prompt(loaded, text: str) -> None:
    """Answers and a corrupted prompt typed for an earlier prompt do not fit a new one: when the prompt
    changes, every tab's answer becomes the model's likeliest next token after it, the wrong answer the
    runner-up, and the corrupted prompt starts as the prompt itself, for the reader to change one word."""
    before = st.session_state.get("answers_for")
    st.session_state["answers_for"] = text
    if before is None or before == text:  # a first run keeps what a link or lesson gave
        return
    try:
        answer, wrong = likeliest_two(loaded, text)
    except ui.UserError:  # a prompt the model cannot read: the tab that reads it says why
        return
    for key in ANSWER_KEYS:
        st.session_state[key] = answer
    for key in WRONG_KEYS:
        st.session_state[key] = wrong
    for key, value in (("answer", answer), ("wrong", wrong), ("corrupt", text)):
        ui.link_set(key, value)  # the link is written before the widgets run


def metric_inputs(loaded, text: str, key: str = "") -> tuple[str, str, str]:
    """The metric's kind and answers; the metric is checked (and its notice shown) here. With no
    answer given (a "test this head" link), the model's own likeliest next token is scored."""
    kinds = list(metrics.KINDS)
    a, b, c = st.columns(3)
    kind = a.selectbox(
        "Metric",
        kinds,
        index=kinds.index(ui.link_value("metric", kinds[0], kinds)),
        format_func=metrics.LABELS.get,
        key=f"metric{key}",
    )
    answer = b.text_input(
        "Answer (next token)",
        ui.link_value("answer", " Mary"),
        key=f"answer{key}",
        max_chars=ui.max_text_chars(80),
    )
    if not answer and kind != "logit_difference":
        with ui.user_errors():
            answer = top_token(loaded, text)
        st.info(f"No answer given: scoring the model's own likeliest next token {answer!r}.")
    wrong = ""
    if kind == "logit_difference":
        wrong = c.text_input(
            "Wrong answer",
            ui.link_value("wrong", " John"),
            key=f"wrong{key}",
            max_chars=ui.max_text_chars(80),
        )
    with ui.user_errors():
        metric = metrics.make_metric(loaded, kind, answer, wrong)
    if metric.notice:
        st.info(metric.notice)
    return kind, answer, wrong


def script_download(script: str, key: str) -> None:
    with st.expander("Export: a Python script that reproduces these numbers"):
        st.code(script, language="python")
        st.download_button("Download the script", script, f"{key}.py", "text/x-python", key=f"{key}_script")


def change_grid(values, title: str, label: str):
    """A head grid of a signed change, coloured both ways from zero."""
    return grids.head_grid(values, title, label, presenting=ui.presenting(), diverging=True)


def ablate(loaded, settings: Settings) -> None:
    """One head, MLP or attention edge ablated: the metric and the likeliest tokens before and after."""
    text = settings.text
    kind, answer, wrong = metric_inputs(loaded, text)
    targets = ["head", "MLP", "attention edge"]
    left, middle, right = st.columns(3)
    target = left.selectbox(
        "Ablate", targets, index=targets.index(ui.link_value("target", "head", targets)), key="target"
    )
    layer = widgets.index_picker("Layer", loaded.n_layers, "iv_layer", widget="number", where=middle)
    modes = list(ablation.MODES)
    mode = right.selectbox("By", modes, index=modes.index(ui.link_value("mode", "zero", modes)), key="mode")
    reference, parts, edges, head = "", (), (), 0
    if target == "head":
        head = widgets.index_picker("Head", loaded.n_heads, "iv_head", widget="number", where=middle)
        parts = (ablation.Component("head_out", layer, head),)
    elif target == "MLP":
        parts = (ablation.Component("ffn", layer),)
    else:
        edges = (edge_inputs(loaded, text, layer),)
    if target != "attention edge" and mode != "zero":
        reference = st.text_input(
            "Reference text (mean: averaged over its tokens; resample: same positions, at least as long)",
            CORRUPT if mode == "resample" else "The weather was mild and the streets were quiet that day.",
            key="reference",
            max_chars=ui.max_text_chars(2000),
        )
    view_layer = min(layer + 1, loaded.n_layers - 1) if target != "attention edge" else layer
    view = (view_layer, head)
    with ui.user_errors():
        result = cached_ablation(loaded, text, kind, answer, wrong, parts, mode, reference, edges, view)
    a, b, c = st.columns(3)
    a.metric(f"{result.metric.label}: before", f"{result.before:.3f}")
    b.metric("after", f"{result.after:.3f}", f"{result.change:+.3f}")
    c.metric("Top next token after", result.top_after)
    before, after = result.candidates.probs
    ui.show_figure(
        figs.before_after_bars(result.candidates.tokens, before, after, "Likeliest next tokens"),
        key="iv_bars",
    )
    teaching.notice(
        "most single heads barely move the answer when removed: the residual stream still carries every "
        "other head's work. The Every head tab finds the few that matter for this prompt."
    )
    ui.show_figure(
        figs.attention_change(
            result.attention_before,
            result.attention_after,
            result.tokens,
            f"Attention of layer {view[0]}, head {view[1]}",
            ui.presenting(),
        ),
        key="iv_attention",
    )
    script_download(
        export.ablation_script(
            settings.name, loaded.device, text, result.metric, answer, wrong, parts, mode, reference, edges
        ),
        "ablation",
    )


def edge_inputs(loaded, text: str, layer: int) -> ablation.Edge:
    """The attention edge to cut: a query token, a key token at or before it, and the layers."""
    with ui.user_errors():
        tokens = runs.prompt_tokens(loaded, text)
    q, k = st.columns(2)
    query = q.selectbox(
        "From query token",
        range(len(tokens)),
        len(tokens) - 1,
        format_func=lambda i: f"{i}: {tokens[i]}",
        key="edge_query",
    )
    key_pos = k.selectbox(
        "To key token", range(query + 1), 0, format_func=lambda i: f"{i}: {tokens[i]}", key="edge_key"
    )
    cut = st.multiselect("Cut it in layers", range(loaded.n_layers), [layer], key="edge_layers")
    return ablation.Edge(int(query), int(key_pos), tuple(int(x) for x in cut))


def every_head(loaded, settings: Settings) -> None:
    """Every head and MLP ablated alone, one batch row each: the change of the metric for each."""
    text = settings.text
    with ui.user_errors():  # before the toggle: a bad prompt is told at once
        runs.prompt_ids(loaded, text)
    kind, answer, wrong = metric_inputs(loaded, text, "_sweep")
    mode = st.selectbox(
        "Ablate each by",
        list(ablation.MODES),
        index=ui.link_index("sweep_mode", list(ablation.MODES)),
        key="sweep_mode",
    )
    reference = ""
    if mode != "zero":
        reference = st.text_input(
            "Reference text", CORRUPT, key="sweep_reference", max_chars=ui.max_text_chars(2000)
        )
    if not st.toggle(
        f"Ablate all {loaded.n_layers * loaded.n_heads} heads and {loaded.n_layers} MLPs", key="sweep_go"
    ):
        return
    with ui.user_errors():
        swept = cached_sweep(loaded, text, kind, answer, wrong, mode, reference)
    st.caption(f"{swept.metric.label} = {swept.base:.3f} with nothing ablated; {swept.seconds:.1f} s.")
    grid = change_grid(
        swept.heads,
        "Change of the metric when each head is ablated alone (click a head to pick it in Ablate)",
        "change",
    )
    widgets.head_grid(grid, "sweep_heads", ("iv_layer", "iv_head"))
    if swept.notice:  # a model placed by discovery: its heads are swept, its MLPs cannot be placed
        st.info(swept.notice)
    else:
        ui.show_figure(
            figs.layer_bars(swept.ffn, "Change when each MLP is ablated alone", "change"), key="sweep_mlp"
        )
    script_download(
        export.sweep_script(settings.name, loaded.device, text, swept.metric, answer, wrong, mode, reference),
        "sweep",
    )


def patch(loaded, settings: Settings) -> None:
    """Activation patching from the page's prompt into a corrupted one, beside the gradient estimate."""
    clean = settings.text  # the page's prompt, above the tabs
    corrupt = st.text_area(
        "Corrupted prompt (the prompt above with one word changed: the same number of tokens)",
        ui.link_value("corrupt", CORRUPT),
        key="corrupt",
        max_chars=ui.max_text_chars(2000),
    )
    with ui.user_errors():  # before the toggle: bad prompts are told at once
        if corrupt == clean:  # where a new prompt starts, not a mistake: said below the answers
            runs.prompt_ids(loaded, clean, "clean prompt")
        else:
            patching.paired_ids(loaded, clean, corrupt)
    kind, answer, wrong = metric_inputs(loaded, clean, "_patch")
    if corrupt == clean:
        st.info(
            "The corrupted prompt is the prompt above: change one word in it (a name for another name, "
            "the same number of tokens) to patch, and see which parts carry the difference."
        )
        return
    if not st.toggle("Patch every layer, position, head and MLP", key="patch_go"):
        return
    with ui.user_errors():
        result = cached_patch(loaded, clean, corrupt, kind, answer, wrong)
    st.caption(
        f"{result.metric.label}: clean {result.clean_value:.3f}, corrupted {result.corrupt_value:.3f}. "
        f"Recovered fraction: 0 is the corrupted run, 1 the clean one. {result.seconds:.1f} s."
    )
    rows = patching.row_names(loaded.n_layers)
    estimated = "Attribution estimate (rank correlation {:.2f})"
    residuals = (
        (result.residual, "Residual stream, exact", "patch_resid"),
        (result.estimate.residual, estimated.format(result.residual_rho), "patch_resid_est"),
    )
    for column, (values, title, key) in zip(st.columns(2), residuals, strict=True):
        with column:
            figure = figs.layer_position_grid(
                values, result.tokens, title, row_names=rows, presenting=ui.presenting()
            )
            ui.show_figure(figure, key=key)
    picks = ("patch_layer", "patch_head")  # a click opens that head in the Explorer's link below
    heads = (
        (result.heads, "Heads, exact (click one)", "patch_heads"),
        (result.estimate.heads, estimated.format(result.heads_rho), "patch_heads_est"),
    )
    for column, (values, title, key) in zip(st.columns(2), heads, strict=True):
        with column:
            widgets.head_grid(change_grid(values, title, "recovered"), key, picks)
    if result.notice:  # a model placed by discovery: its MLPs cannot be placed
        st.info(result.notice)
    else:
        ui.show_figure(figs.layer_bars(result.ffn, "MLPs, exact"), key="patch_mlp")
    st.caption(
        "The estimate is a forward of each prompt and one backward: gradient x (clean - corrupted) at every point "
        "(Nanda 2023). Where the rank correlation is low, trust the exact grid."
    )
    layer, head = widgets.layer_head_picker(
        loaded.n_layers,
        loaded.n_heads,
        picks,
        widget="number",
        columns=st.columns(2),
        labels=("Open layer", "head"),
    )
    widgets.explorer_head_link(settings.name, clean, layer, head)
    script_download(
        export.patching_script(settings.name, loaded.device, clean, corrupt, result.metric, answer, wrong),
        "patching",
    )


def steer(loaded, settings: Settings) -> None:
    """Generation with and without a steering vector, the difference of two sets of prompts."""
    # the plain continuation is upbeat: steering towards sour shows the change
    positive, negative = widgets.steering_sets(("positive", "negative"), (NEGATIVE, POSITIVE))
    prompt = st.text_input(
        "Prompt to continue",
        ui.link_value("steer_prompt", "I think the movie was"),
        key="steer_prompt",
        max_chars=ui.max_text_chars(2000),
    )
    st.caption(
        "Steering continues a prompt of its own: it generates text and reads no next-token metric, "
        "so the prompt above the tabs is not used here."
    )
    with ui.user_errors():
        prompt, cut = runs.cut_prompt(loaded, prompt, "prompt to continue")
    if cut:
        st.warning(cut)
    a, b, c = st.columns(3)
    layer, strength = widgets.steering_strength(
        loaded.n_layers, ("steer_layer", "strength"), STEER_STRENGTH, (a, b), widget="number"
    )
    max_new = int(
        c.number_input("New tokens", 1, 64, ui.link_value("steer_new", 24, range(1, 65)), key="steer_new")
    )
    with ui.user_errors():  # bad prompt sets are told at once, before the button
        steering.check_sets(positive, negative)
        (positive, negative), cuts = steering.cut_sets(loaded, positive, negative)
    for notice in cuts:
        st.warning(notice)
    chosen = (tuple(positive), tuple(negative), layer, prompt, strength, max_new)
    # Two generations take tens of seconds on a shared CPU: they run when asked, for these settings.
    if st.button("Generate with and without the vector", key="steer_go", type="primary"):
        st.session_state["steer_ran"] = chosen
    if st.session_state.get("steer_ran") != chosen:
        st.caption("Press the button to generate the prompt's continuation with and without steering.")
        return
    with ui.user_errors():
        norm, (plain, steered) = cached_steer(loaded, *chosen)
    unsteered_col, steered_col = st.columns(2)
    unsteered_col.caption("Unsteered")
    unsteered_col.code(prompt + plain, language=None, wrap_lines=True)
    steered_col.caption(f"Steered: + {strength:g} x direction (norm {norm:.2f}) after layer {layer}")
    steered_col.code(prompt + steered, language=None, wrap_lines=True)
    st.caption(
        "Greedy decoding through the same generation loop as Live Generation, with and without the vector."
    )
    script_download(
        export.steering_script(
            settings.name, loaded.device, positive, negative, layer, prompt, strength, max_new
        ),
        "steering",
    )
