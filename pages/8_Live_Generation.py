"""Live generation: tokens appear one by one, with what each step considered and attended to."""

import time
from dataclasses import replace

import streamlit as st

from txviz.app import explain_view, projector, sessions, teaching, ui, widgets
from txviz.generation import figures
from txviz.generation.batching import Waiting
from txviz.generation.loop import (
    MAX_NEW_TOKENS,
    GenerationRequest,
    check_model,
    generate,
    has_chat_template,
    prepare,
    sequence_tokens,
)
from txviz.generation.sampling import MAX_TEMPERATURE, SamplingSettings
from txviz.interventions import steering

FIGURE_INTERVAL_S = 0.5  # live figures redraw at most this often; the text every step

ui.setup_page(
    "Live_Generation",
    "A causal language model writes one token at a time: at every step it scores every token of "
    "its vocabulary, a sampling rule picks one, and the new token attends to all earlier ones "
    "through the KV cache. Attention weights show where a head looked, not why the model chose.",
)

name = ui.model_picker(kinds=("decoder",), default="smollm2", key="gen_model")
loaded = ui.load_model(name)
with ui.user_errors():
    check_model(loaded)

prompt_text = st.text_area(
    "Prompt",
    ui.link_value("gen_prompt", "Explain in one sentence why the sky is blue."),
    key="gen_prompt",
    max_chars=ui.max_text_chars(),
)
left, middle, right = st.columns(3)
with left:
    chat = st.toggle(
        "Use the chat template",
        value=has_chat_template(loaded),
        disabled=not has_chat_template(loaded),
        key="gen_chat",
        help="Instruct models were trained on prompts wrapped as a user turn.",
    ) and has_chat_template(loaded)
    max_new = st.number_input(
        "Max new tokens",
        min_value=0,
        value=ui.link_value("gen_max", 32, lambda v: v >= 0),
        step=8,
        key="gen_max",
        help=f"1 to {MAX_NEW_TOKENS}",
    )
with middle:
    temperature = st.slider(
        "Temperature (0 = greedy)",
        0.0,
        MAX_TEMPERATURE,
        ui.link_value("gen_temperature", 0.0, lambda v: 0 <= v <= MAX_TEMPERATURE),
        0.05,
        key="gen_temperature",
    )
    seed = st.number_input(
        "Seed", min_value=0, value=ui.link_value("gen_seed", 0, lambda v: v >= 0), step=1, key="gen_seed"
    )
with right:
    top_k = st.number_input(
        "Top-k (0 = off)",
        min_value=0,
        value=ui.link_value("gen_top_k", 0, lambda v: v >= 0),
        step=1,
        key="gen_top_k",
    )
    top_p = st.slider(
        "Top-p (1 = off)",
        0.05,
        1.0,
        ui.link_value("gen_top_p", 1.0, lambda v: 0.05 <= v <= 1),
        0.05,
        key="gen_top_p",
    )
if temperature == 0 and (top_k or top_p < 1):
    st.caption("Temperature 0 is greedy: top-k and top-p change nothing until it is above 0.")

steer = st.toggle(
    "Steer",
    ui.link_value("gen_steer", False),
    key="gen_steer",
    help="Also generate with a steering vector added, and show that text beside the unsteered one.",
)
if steer:
    with st.container(border=True):
        st.caption(
            "Activation addition (Turner et al. 2023) along a contrastive direction (Rimsky et al. 2024): "
            "the mean residual stream of the first prompt set minus that of the second, at each prompt's "
            "last token, added with this strength after the layer at every position. Same sampling "
            "settings and seed as the unsteered run: the steering is the only difference."
        )
        towards, away = widgets.steering_sets(
            ("gen_steer_towards", "gen_steer_away"), (steering.POSITIVE, steering.NEGATIVE)
        )
        steer_layer, strength = widgets.steering_strength(
            loaded.n_layers,
            ("gen_steer_layer", "gen_steer_strength"),
            4.0,
            st.columns(2),
            layer_label="Add after layer",
        )


engine = sessions.engine(loaded)
sampling = SamplingSettings(float(temperature), int(top_k), float(top_p), int(seed))
request = GenerationRequest(prompt_text, int(max_new), sampling, chat)

try:
    if max_new > sessions.config().max_new_tokens:
        raise ui.UserError(f"This server makes at most {sessions.config().max_new_tokens} new tokens a run.")
    prompt, problem = prepare(loaded, request), ""
except ui.UserError as error:  # GenerationError, WrongModelKind
    prompt, problem = None, str(error)
if steer and not problem:
    try:
        steering.check_sets(towards, away)
    except ui.UserError as error:
        problem = str(error)

go_col, stop_col = st.columns([1, 5])
start = go_col.button("Generate", type="primary", key="gen_go")
stop_col.button("Stop", key="gen_stop", help="Keeps the tokens made so far.")
if problem:
    st.error(problem)
run = st.session_state.get("generation")
if run and not run["done"] and not start:  # a click (Stop or another widget) ended the loop
    run["done"], run["stopped"] = True, True

beside = steer or bool(run and run.get("steered"))  # the steered text beside the unsteered one
with projector.on_stage():  # in projector mode the text and the live figures come first, the controls under
    if beside:
        plain_col, steered_col = st.columns(2)
        plain_col.caption("Unsteered")
        text_slot, steered_slot = plain_col.empty(), steered_col.empty()
    else:
        text_slot = st.empty()
    stats_slot, live_slot = st.empty(), st.empty()


def show_text(prompt, steps) -> None:
    """The prompt and what was generated, as plain text (never rendered as markdown or HTML)."""
    text_slot.code(prompt.text + (steps[-1].text if steps else ""), language=None, wrap_lines=True)


def show_steered(prompt, steered) -> None:
    """The steered run beside the unsteered one (a hint until there is one)."""
    if not steered:
        steered_slot.caption("Steered: press Generate to see the steered text here.")
        return
    with steered_slot.container():
        st.caption(steered["label"])
        steps = steered["steps"]
        st.code(prompt.text + (steps[-1].text if steps else ""), language=None, wrap_lines=True)


@ui.cached(max_entries=8, spinner="Finding the steering direction: one forward per prompt...")
@ui.heavy
def steering_direction(loaded, towards, away, layer):
    return steering.direction(loaded, towards, away, layer)


def generate_steered(request, prompt, found, strength, steered) -> None:
    """The steered run, streamed beside the unsteered one (steps kept even if a click interrupts)."""
    for step in generate(loaded, steering.steered_request(request, found, strength), prompt):
        steered["steps"].append(step)
        show_steered(prompt, steered)


def show_stats(steps, device: str, note: str = "") -> None:
    last = steps[-1] if steps else None
    with stats_slot.container():
        a, b, c, d = st.columns(4)
        a.metric("Tokens made", len(steps))
        b.metric("Tokens / s", f"{last.tokens_per_second:.1f}" if last else "-")
        c.metric("Device", device)
        d.metric("KV cache", f"{sum(last.kv_bytes) / 1e6:.2f} MB" if last else "-")
        if note:
            st.caption(note)


def show_live(step, tokens) -> None:
    with live_slot.container():
        bars, heads = st.columns(2)
        with bars:
            ui.show_figure(figures.candidate_bars(step), key=f"live_bars_{step.index}")
        with heads:
            last_layer = step.attention.shape[0] - 1
            figure = figures.newest_attention_all_heads(step, tokens, last_layer, ui.presenting())
            ui.show_figure(figure, key=f"live_heads_{step.index}")


if beside:
    show_steered(run["prompt"] if run else None, run.get("steered") if run else None)

if start and not problem:
    found = None
    if steer:
        with ui.user_errors():
            found = steering_direction(loaded, tuple(towards), tuple(away), steer_layer)
    run = {"prompt": prompt, "steps": [], "model": name, "device": loaded.device, "steered": None}
    run["done"] = run["stopped"] = False
    st.session_state["generation"] = run
    for key in ("gen_step", "gen_layer", "gen_head"):  # the new run may be shorter or smaller
        st.session_state.pop(key, None)
    drawn = 0.0
    with ui.user_errors():
        # Every session's run goes through the model's one engine: sessions share batched forwards.
        for event in engine.submit(request, owner=sessions.session_id()).events():
            if isinstance(event, Waiting):
                ahead = f"{event.ahead} request{'s' if event.ahead != 1 else ''} ahead of you"
                stats_slot.info(f"The server is busy: {ahead}. Your run starts when a place is free.")
                continue
            step = event
            run["steps"].append(step)  # kept even if a click interrupts the loop
            show_text(prompt, run["steps"])
            show_stats(run["steps"], loaded.device, f"Generating with {sampling.describe()}...")
            if time.perf_counter() - drawn > FIGURE_INTERVAL_S:
                show_live(step, sequence_tokens(prompt, run["steps"]))
                drawn = time.perf_counter()
    live_slot.empty()
    if found is not None:
        # The shared engine batches every session's rows through one forward, so it cannot add one
        # session's vector: the steered run goes through the lone generation loop instead, in this
        # session's turn of the heavy-job queue (taking turns with other sessions' heavy passes).
        label = f"Steered: + {strength:g} x direction (norm {found.norm:.2f}) after layer {steer_layer}"
        run["steered"] = {"label": label, "steps": []}
        show_stats(
            run["steps"], loaded.device, "Generating the steered run with the same settings and seed..."
        )
        with ui.user_errors():
            sessions.heavy(generate_steered, request, prompt, found, strength, run["steered"])
    run["done"] = True

if not run or not run["steps"]:
    if prompt is None:
        st.stop()
    # Above the charts: live_slot, where they are drawn, sits below stats_slot.
    stats_slot.info("Press Generate. Before it starts, the model's candidates for the first new token:")
    preview = engine.submit(replace(request, max_new_tokens=1), owner=sessions.session_id())
    with ui.user_errors():
        first = next(preview.steps(), None)
    preview.cancel()
    if first is None:
        # Settings changed while it waited: the newer run of this session (fast reruns overlap) took its
        # place in the engine and cancelled it, and draws its own preview.
        st.stop()
    show_live(first, prompt.tokens)
    teaching.notice(
        "before a single token is written the model already ranks every next token; Generate picks from "
        "these bars step by step, and the heads beside them show what the newest position reads."
    )
    st.stop()

prompt, steps = run["prompt"], run["steps"]
ended = "stopped" if run["stopped"] else "ended: end of sequence" if steps[-1].finished else "done"
show_text(prompt, steps)
show_stats(steps, run["device"], f"{run['model']}, {ended}. {len(prompt)} prompt tokens.")
if beside:
    show_steered(prompt, run.get("steered"))
if run.get("steered") and run["steered"]["steps"] and not run["stopped"]:
    parts = steering.first_difference(
        [s.token_id for s in steps], [s.token_id for s in run["steered"]["steps"]]
    )
    st.caption(
        "The steered run made the same tokens as the unsteered one."
        if parts is None
        else f"The steered run parts from the unsteered one at new token {parts}."
    )
tokens = sequence_tokens(prompt, steps)
explain_view.step_scores_strip(steps, st.session_state.get("gen_step", len(steps) - 1))

st.subheader("Replay a step")
index = st.slider("Step", 0, len(steps) - 1, len(steps) - 1, key="gen_step") if len(steps) > 1 else 0
step = steps[index]
n_layers, n_heads = step.attention.shape[:2] if step.attention is not None else (0, 0)
st.text(f"Step {index} chose {step.token!r} for position {step.position}.")
ui.show_figure(figures.candidate_bars(step), key="candidates")
teaching.notice(
    "the bars are the model's next-token probabilities at this step: greedy decoding takes the tallest, "
    "sampling may take another, and every later step builds on that choice."
)

layer_col, head_col = st.columns(2)
layer = layer_col.selectbox(
    "Layer", range(n_layers), index=ui.link_index("gen_layer", range(n_layers), n_layers - 1), key="gen_layer"
)
head = head_col.selectbox(
    "Head", range(n_heads), index=ui.link_index("gen_head", range(n_heads)), key="gen_head"
)
VIEWS = ["This head", "All heads", "Whole sequence", "KV cache"]
one, every, whole, cache = st.tabs(
    VIEWS, key="gen_view", on_change="rerun", default=ui.link_tab("gen_view", VIEWS)
)

with one:
    ui.show_figure(figures.newest_attention_head(step, tokens, layer, head), key="head_row")
with every:
    ui.show_figure(figures.newest_attention_all_heads(step, tokens, layer, ui.presenting()), key="heads_rows")
with whole:
    ui.show_figure(figures.sequence_heatmap(steps, tokens, layer, head, ui.presenting()), key="sequence")
with cache:
    ui.show_figure(figures.kv_cache_growth(steps, current=index), key="kv_growth")
    ui.show_figure(figures.kv_cache_per_layer(step), key="kv_layers")

explain_view.inspector(loaded, run["model"], prompt, steps, index, layer, head)
