"""Why Attention's Cost and Table 15.1 tabs: every layer type's FLOPs and time measured on this
machine, then the book's table rebuilt from those measurements."""

from dataclasses import dataclass

import pandas as pd
import streamlit as st

from txviz.app import ui, widgets
from txviz.why import cost, table
from txviz.why import figures as figs
from txviz.why.views import COLUMNS, Sizes
from txviz.why.views.path_length import cached_depths

N_SIZES = (16, 32, 64, 128, 256, 512, 1024)
D_SIZES = (16, 32, 64, 128, 256, 512)


@ui.shared_resource(max_entries=8, spinner="Counting FLOPs and timing each layer (about 20 s)...")
def cached_costs(d: int, n_fixed: int, k: int, thread_n: int, thread_d: int, run: int):
    by_n = cost.sweep("n", N_SIZES, d, k, budget_s=5.0)
    by_d = cost.sweep("d", D_SIZES, n_fixed, k, budget_s=4.0)
    return by_n, by_d, cost.thread_times(thread_n, thread_d, k)


@dataclass(frozen=True)
class Measured:
    """The sweeps over n and d and the thread test, with the sizes they were run at."""

    d: int
    n_fixed: int
    thread_n: int
    by_n: cost.Sweep
    by_d: cost.Sweep
    threads: cost.ThreadTimes


def measure(sizes: Sizes) -> Measured | None:
    """The sweep sizes and the measure button both tabs share; None until the reader presses it."""
    c1, c2, c3 = st.columns(3)
    d = int(c1.select_slider("d for the n sweep", [16, 32, 64, 128], 64, key="d"))
    n_fixed = int(c2.select_slider("n for the d sweep", [32, 64, 128, 256], 128, key="n_fixed"))
    thread_n = int(c3.select_slider("n for the thread test", [128, 256, 512, 1024], 512, key="thread_n"))
    # Measuring takes tens of seconds: it waits for the button, then stays for the session.
    measured = "_why_run" in st.session_state
    label = "Measure again" if measured else "Count FLOPs and time each layer (about 20 s)"
    if st.button(label, key="remeasure", type="secondary" if measured else "primary"):
        st.session_state["_why_run"] = st.session_state.get("_why_run", -1) + 1
        st.rerun()  # the button's label follows at once
    if not measured:
        st.caption(
            "The cost and the table are measured on this machine: every layer type counted and timed at "
            f"{len(N_SIZES) + len(D_SIZES)} sizes. Press the button to measure."
        )
        return None
    by_n, by_d, threads = cached_costs(d, n_fixed, sizes.k, thread_n, 128, st.session_state["_why_run"])
    return Measured(d, n_fixed, thread_n, by_n, by_d, threads)


def show_cost(sizes: Sizes) -> None:
    """FLOPs or time against n and d, where the lines cross, and one thread against two."""
    if not (measured := measure(sizes)):
        return
    d, k, by_n = measured.d, sizes.k, measured.by_n
    metrics = ["FLOPs (counted)", "wall time"]
    metric = widgets.linked_radio("Measure", metrics, "metric")

    key = "flops" if metric.startswith("FLOPs") else "seconds"
    left, right = st.columns(2)
    with left:
        ui.show_figure(figs.cost_lines(by_n, key), key="by_n")
    with right:
        ui.show_figure(figs.cost_lines(measured.by_d, key), key="by_d")
    values = by_n.flops if key == "flops" else by_n.seconds
    lines = []
    for other in ("rnn", "gru", "conv", "attention+proj"):
        where = cost.crossing(by_n.sizes, values["attention"], values[other])
        verdict = f"cross at n ≈ {where:.0f}" if where else "do not cross in this range"
        lines.append(f"- self-attention and {cost.LABELS[other]}: {verdict}")
    st.markdown(f"**Where the lines cross** ({metric}, d = {d}, k = {k}):\n" + "\n".join(lines))
    st.caption(
        f"Formulas: RNN 4 n d², so the crossing with self-attention's 4 n² d is n = d = {d}; a CNN "
        f"2 k n d² crosses it at n = k d / 2 = {k * d / 2:.0f}. Wall time adds what FLOPs ignore: "
        "each RNN step is a separate small matrix product."
    )
    st.markdown(f"**Complexity per layer.** {COLUMNS['Complexity per layer']}")
    ui.show_figure(figs.thread_bars(measured.threads), key="threads")
    st.caption(
        "torch.set_num_threads(1) and (2) in alternating blocks, per layer; the previous setting is restored. "
        "Each bar is the fastest run: this machine is shared, and a second thread that waits for a busy core "
        "makes the median tens of times slower, which says nothing about the layer. The convolution and "
        "self-attention split their work across threads; the RNN's steps are too small to split. Times "
        "are noisy: press 'Measure again' to repeat."
    )
    st.markdown(f"**Sequential operations.** {COLUMNS['Sequential operations']}")


def show_table(sizes: Sizes) -> None:
    """Table 15.1 with each measured cell under the book's entry, then the three columns explained."""
    if not (measured := measure(sizes)):
        return
    n, k = sizes.n, sizes.k
    depth_at_n = {kind: values[0] for kind, values in cached_depths(k, (n,)).items()}
    rows = table.rebuilt_table(measured.by_n, measured.by_d, measured.threads, depth_at_n, n, k)
    st.dataframe(pd.DataFrame(rows).set_index("layer").T)  # one column per layer type: each measured
    # cell under the book's entry
    st.caption(
        f"FLOP exponents fitted on log-log axes over n = {N_SIZES[0]}..{N_SIZES[-1]} (d = {measured.d}) and "
        f"d = {D_SIZES[0]}..{D_SIZES[-1]} (n = {measured.n_fixed}); the time exponent over n on one thread; "
        f"the speed-up at n = {measured.thread_n}, d = 128. The dilated CNN costs what the CNN costs per layer."
    )
    for column, text in COLUMNS.items():
        st.markdown(f"**{column}.** {text}")
