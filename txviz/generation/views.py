"""The Live Generation page's views: the prompt and sampling settings, the live run (with its steered
twin) and the replay of one step, whose attention the page's tabs show."""

from __future__ import annotations

import time
from dataclasses import dataclass, replace

import streamlit as st

from txviz.app import projector, sessions, teaching, ui, widgets
from txviz.explain import views as explain_views
from txviz.generation import figures
from txviz.generation.batching import Waiting
from txviz.generation.loop import (
    MAX_NEW_TOKENS,
    GenerationRequest,
    generate,
    has_chat_template,
    prepare,
    sequence_tokens,
)
from txviz.generation.sampling import MAX_TEMPERATURE, SamplingSettings
from txviz.interventions import steering

FIGURE_INTERVAL_S = 0.5  # live figures redraw at most this often; the text every step


@dataclass(frozen=True)
class Steering:
    """The two prompt sets whose difference is the direction, the layer it is added after, its strength."""

    towards: tuple[str, ...]
    away: tuple[str, ...]
    layer: int
    strength: float


@dataclass(frozen=True)
class Settings:
    """The model's name, the request to generate and, when steering, the steering beside it."""

    name: str
    request: GenerationRequest
    steer: Steering | None


@dataclass(frozen=True)
class Replay:
    """The finished run's steps and tokens, and the step, layer and head chosen to replay."""

    steps: list
    tokens: list
    index: int
    layer: int
    head: int

    @property
    def step(self):
        return self.steps[self.index]


def settings(loaded, name: str) -> Settings:
    """The prompt, the length and sampling settings in three columns, and the steering when on."""
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
        max_new = widgets.linked_count("Max new tokens", "gen_max", 32, step=8, help=f"1 to {MAX_NEW_TOKENS}")
    with middle:
        temperature = widgets.linked_slider(
            "Temperature (0 = greedy)", "gen_temperature", 0.0, 0.05, high=MAX_TEMPERATURE
        )
        seed = widgets.linked_count("Seed", "gen_seed")
    with right:
        top_k = widgets.linked_count("Top-k (0 = off)", "gen_top_k")
        top_p = widgets.linked_slider("Top-p (1 = off)", "gen_top_p", 1.0, 0.05, low=0.05)
    if temperature == 0 and (top_k or top_p < 1):
        st.caption("Temperature 0 is greedy: top-k and top-p change nothing until it is above 0.")
    sampling = SamplingSettings(float(temperature), int(top_k), float(top_p), int(seed))
    return Settings(
        name, GenerationRequest(prompt_text, int(max_new), sampling, chat), steering_settings(loaded)
    )


def steering_settings(loaded) -> Steering | None:
    """The steer toggle and, when on, the prompt sets, the layer and the strength."""
    steer = widgets.linked_toggle(
        "Steer",
        "gen_steer",
        help="Also generate with a steering vector added, and show that text beside the unsteered one.",
    )
    if not steer:
        return None
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
        layer, strength = widgets.steering_strength(
            loaded.n_layers,
            ("gen_steer_layer", "gen_steer_strength"),
            4.0,
            st.columns(2),
            layer_label="Add after layer",
        )
    return Steering(tuple(towards), tuple(away), layer, strength)


def problem_of(loaded, settings: Settings):
    """The prompt prepared for the model, and what stops Generate from starting ("" when nothing)."""
    try:
        if settings.request.max_new_tokens > sessions.config().max_new_tokens:
            raise ui.UserError(
                f"This server makes at most {sessions.config().max_new_tokens} new tokens a run."
            )
        prompt, problem = prepare(loaded, settings.request), ""
    except ui.UserError as error:  # GenerationError, WrongModelKind
        prompt, problem = None, str(error)
    if settings.steer and not problem:
        try:
            steering.check_sets(settings.steer.towards, settings.steer.away)
        except ui.UserError as error:
            problem = str(error)
    return prompt, problem


@ui.cached(max_entries=8, spinner="Finding the steering direction: one forward per prompt...")
@ui.heavy
def steering_direction(loaded, towards, away, layer):
    return steering.direction(loaded, towards, away, layer)


class Slots:
    """The places the run is drawn in, above the controls in projector mode: its text (and the steered
    text beside it), its statistics and the live figures."""

    def __init__(self, beside: bool):
        with projector.on_stage():  # in projector mode the text and the live figures come first
            if beside:
                plain_col, steered_col = st.columns(2)
                plain_col.caption("Unsteered")
                self.text, self.steered = plain_col.empty(), steered_col.empty()
            else:
                self.text = st.empty()
            self.stats, self.live = st.empty(), st.empty()

    def show_text(self, prompt, steps) -> None:
        """The prompt and what was generated, as plain text (never rendered as markdown or HTML)."""
        self.text.code(prompt.text + (steps[-1].text if steps else ""), language=None, wrap_lines=True)

    def show_steered(self, prompt, steered) -> None:
        """The steered run beside the unsteered one (a hint until there is one)."""
        if not steered:
            self.steered.caption("Steered: press Generate to see the steered text here.")
            return
        with self.steered.container():
            st.caption(steered["label"])
            steps = steered["steps"]
            st.code(prompt.text + (steps[-1].text if steps else ""), language=None, wrap_lines=True)

    def show_stats(self, steps, device: str, note: str = "") -> None:
        last = steps[-1] if steps else None
        with self.stats.container():
            a, b, c, d = st.columns(4)
            a.metric("Tokens made", len(steps))
            b.metric("Tokens / s", f"{last.tokens_per_second:.1f}" if last else "-")
            c.metric("Device", device)
            d.metric("KV cache", f"{sum(last.kv_bytes) / 1e6:.2f} MB" if last else "-")
            if note:
                st.caption(note)

    def show_live(self, step, tokens) -> None:
        with self.live.container():
            bars, heads = st.columns(2)
            with bars:
                ui.show_figure(figures.candidate_bars(step), key=f"live_bars_{step.index}")
            with heads:
                last_layer = step.attention.shape[0] - 1
                figure = figures.newest_attention_all_heads(step, tokens, last_layer, ui.presenting())
                ui.show_figure(figure, key=f"live_heads_{step.index}")


def generate_steered(loaded, request, prompt, found, strength, steered, slots: Slots) -> None:
    """The steered run, streamed beside the unsteered one (steps kept even if a click interrupts)."""
    for step in generate(loaded, steering.steered_request(request, found, strength), prompt):
        steered["steps"].append(step)
        slots.show_steered(prompt, steered)


def run_generation(loaded, engine, settings: Settings, prompt, slots: Slots) -> dict:
    """Generate through the model's shared engine, streaming the text and figures; then the steered run."""
    steer, request = settings.steer, settings.request
    found = None
    if steer:
        with ui.user_errors():
            found = steering_direction(loaded, steer.towards, steer.away, steer.layer)
    run = {"prompt": prompt, "steps": [], "model": settings.name, "device": loaded.device, "steered": None}
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
                slots.stats.info(f"The server is busy: {ahead}. Your run starts when a place is free.")
                continue
            step = event
            run["steps"].append(step)  # kept even if a click interrupts the loop
            slots.show_text(prompt, run["steps"])
            slots.show_stats(run["steps"], loaded.device, f"Generating with {request.sampling.describe()}...")
            if time.perf_counter() - drawn > FIGURE_INTERVAL_S:
                slots.show_live(step, sequence_tokens(prompt, run["steps"]))
                drawn = time.perf_counter()
    slots.live.empty()
    if found is not None:
        # The shared engine batches every session's rows through one forward, so it cannot add one
        # session's vector: the steered run goes through the lone generation loop instead, in this
        # session's turn of the heavy-job queue (taking turns with other sessions' heavy passes).
        label = f"Steered: + {steer.strength:g} x direction (norm {found.norm:.2f}) after layer {steer.layer}"
        run["steered"] = {"label": label, "steps": []}
        slots.show_stats(
            run["steps"], loaded.device, "Generating the steered run with the same settings and seed..."
        )
        with ui.user_errors():
            sessions.heavy(
                generate_steered, loaded, request, prompt, found, steer.strength, run["steered"], slots
            )
    run["done"] = True
    return run


def preview(engine, settings: Settings, prompt, slots: Slots) -> None:
    """Before any run: the model's candidates for the first new token (the page stops after them)."""
    if prompt is None:
        st.stop()
    # Above the charts: the live slot, where they are drawn, sits below the stats slot.
    slots.stats.info("Press Generate. Before it starts, the model's candidates for the first new token:")
    ticket = engine.submit(replace(settings.request, max_new_tokens=1), owner=sessions.session_id())
    with ui.user_errors():
        first = next(ticket.steps(), None)
    ticket.cancel()
    if first is None:
        # Settings changed while it waited: the newer run of this session (fast reruns overlap) took its
        # place in the engine and cancelled it, and draws its own preview.
        st.stop()
    slots.show_live(first, prompt.tokens)
    teaching.notice(
        "before a single token is written the model already ranks every next token; Generate picks from "
        "these bars step by step, and the heads beside them show what the newest position reads."
    )
    st.stop()


def generation(loaded, settings: Settings) -> dict:
    """Generate and Stop, the run streamed as it is made, and the finished run (a preview of the first
    token, and a stop, until there is one); returns the run."""
    engine = sessions.engine(loaded)
    prompt, problem = problem_of(loaded, settings)
    go_col, stop_col = st.columns([1, 5])
    start = go_col.button("Generate", type="primary", key="gen_go")
    stop_col.button("Stop", key="gen_stop", help="Keeps the tokens made so far.")
    if problem:
        st.error(problem)
    run = st.session_state.get("generation")
    if run and not run["done"] and not start:  # a click (Stop or another widget) ended the loop
        run["done"], run["stopped"] = True, True

    beside = settings.steer is not None or bool(run and run.get("steered"))  # steered beside unsteered
    slots = Slots(beside)
    if beside:
        slots.show_steered(run["prompt"] if run else None, run.get("steered") if run else None)
    if start and not problem:
        run = run_generation(loaded, engine, settings, prompt, slots)
    if not run or not run["steps"]:
        preview(engine, settings, prompt, slots)

    prompt, steps = run["prompt"], run["steps"]
    ended = "stopped" if run["stopped"] else "ended: end of sequence" if steps[-1].finished else "done"
    slots.show_text(prompt, steps)
    slots.show_stats(steps, run["device"], f"{run['model']}, {ended}. {len(prompt)} prompt tokens.")
    if beside:
        slots.show_steered(prompt, run.get("steered"))
    if run.get("steered") and run["steered"]["steps"] and not run["stopped"]:
        parts = steering.first_difference(
            [s.token_id for s in steps], [s.token_id for s in run["steered"]["steps"]]
        )
        st.caption(
            "The steered run made the same tokens as the unsteered one."
            if parts is None
            else f"The steered run parts from the unsteered one at new token {parts}."
        )
    return run


def replay(run: dict) -> Replay:
    """How sure every step was, then one step's candidates and the layer and head the tabs show."""
    steps = run["steps"]
    explain_views.step_scores_strip(steps, st.session_state.get("gen_step", len(steps) - 1))
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
        "Layer",
        range(n_layers),
        index=ui.link_index("gen_layer", range(n_layers), n_layers - 1),
        key="gen_layer",
    )
    head = head_col.selectbox(
        "Head", range(n_heads), index=ui.link_index("gen_head", range(n_heads)), key="gen_head"
    )
    return Replay(steps, sequence_tokens(run["prompt"], steps), index, layer, head)


def this_head(shown: Replay) -> None:
    """The newest token's attention in the chosen head."""
    ui.show_figure(
        figures.newest_attention_head(shown.step, shown.tokens, shown.layer, shown.head), key="head_row"
    )


def all_heads(shown: Replay) -> None:
    """The newest token's attention in every head of the chosen layer."""
    figure = figures.newest_attention_all_heads(shown.step, shown.tokens, shown.layer, ui.presenting())
    ui.show_figure(figure, key="heads_rows")


def whole_sequence(shown: Replay) -> None:
    """Every step's attention in the chosen head, as one matrix."""
    figure = figures.sequence_heatmap(shown.steps, shown.tokens, shown.layer, shown.head, ui.presenting())
    ui.show_figure(figure, key="sequence")


def kv_cache(shown: Replay) -> None:
    """How the KV cache grew, step by step and layer by layer."""
    ui.show_figure(figures.kv_cache_growth(shown.steps, current=shown.index), key="kv_growth")
    ui.show_figure(figures.kv_cache_per_layer(shown.step), key="kv_layers")
