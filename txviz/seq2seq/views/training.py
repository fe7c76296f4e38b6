"""date-bart retrained: the decoder reading an earlier encoder layer, and trained on exact match itself."""

from __future__ import annotations

import streamlit as st

from txviz.app import teaching, ui
from txviz.seq2seq import variants
from txviz.seq2seq.views.settings import Settings


@ui.shared_resource(spinner="Loading the retrained variants...")
def shipped_variants() -> dict:
    return {
        "tokenizer": variants.tokenizer(),
        **{layer: variants.load_variant(layer) for layer in variants.LAYERS},
    }


@ui.cached(max_entries=16, spinner="Decoding with each encoder layer...")
@ui.heavy
def layer_reads(loaded, source: str) -> list[dict]:
    return variants.read_each_layer(loaded, shipped_variants(), source)


def cross_layer_tab(loaded, settings: Settings) -> None:
    """Held-out exact match of date-bart retrained with its decoder reading layer 0, 1 or 2, and each on the source."""
    results = variants.load_results()
    budget = results["budget"]
    st.markdown(
        "In the standard Transformer every decoder layer's cross-attention reads the encoder's **last** "
        "layer. Here date-bart is retrained three times, its decoder reading encoder layer l instead: "
        "0 (the embeddings, words and positions with no context), 1, or 2 (the last: the standard "
        "model). One encoder run keeps every hidden state; the chosen one is what cross-attention's "
        "keys and values are made from."
    )
    ui.show_figure(variants.variants_figure(results), key="variants_heldout")
    em = {int(k): v["heldout_exact_match"] for k, v in results["variants"].items()}
    teaching.notice(
        f"after the same {budget['steps']} steps the decoders reading earlier layers are ahead "
        f"({em[0]:.3f} from the embeddings, {em[1]:.3f} from layer 1) of the standard one reading the last "
        f"layer ({em[2]:.3f}): a shorter path from the source words learns sooner here; the standard "
        "date-bart gets to 1.000 with 1,110 steps."
    )
    st.dataframe(variants.variant_rows(results), hide_index=True, width="stretch")
    with ui.user_errors():
        rows = layer_reads(loaded, settings.source)
    st.markdown(f"On the source *{settings.source}*:")
    st.dataframe(rows, hide_index=True, width="stretch")
    st.caption(
        f"Each variant: date-bart's shape (2 + 2 layers, 4 heads, d_model 64) from scratch, "
        f"{budget['steps']} AdamW steps of {budget['batch_size']} (the shipped date-bart had 1,110), "
        f"seed {budget['seed']}, the same batches for all three; weights stored in float16 and scored "
        f"from them on {results['heldout_days']:,} calendar days never trained on. The first column "
        "is the shipped model handed an earlier layer without retraining. Trained by "
        "`python -m txviz train date_variants`."
    )


def metric_tab(loaded, settings: Settings) -> None:
    """Self-critical REINFORCE on exact match against cross-entropy continued as long, from one start."""
    results = variants.load_results()
    rl, budget = results["reinforce"], results["budget"]
    st.markdown(
        "Cross-entropy trains each next token under teacher forcing; the page scores whole outputs by "
        "exact match. REINFORCE trains on the score itself (Ranzato et al. 2016): sample an output, "
        "and raise its log-probability in proportion to its reward minus a baseline. The self-critical "
        "baseline (Rennie et al. 2017) is the reward of the model's own greedy output on the same "
        "source, so a sample is pushed up only when it beats what the model would say now."
    )
    st.latex(
        r"\nabla L = -\big(r(\hat y^{\,s}) - r(\hat y^{\,\mathrm{greedy}})\big)\,\nabla \log p(\hat y^{\,s}\mid x)"
    )
    ui.show_figure(variants.curves_figure(results), key="reinforce_curves")
    st.dataframe(variants.reinforce_rows(results), hide_index=True, width="stretch")
    reward = (
        "exact match only (1 or 0)"
        if not budget["partial"]
        else f"exact match mixed with {budget['partial']} x per-character credit"
    )
    st.caption(
        f"Start: the previous tab's variant whose decoder reads encoder layer {budget['start_layer']} "
        f"({budget['steps']} cross-entropy steps, held-out exact match {rl['start']:.3f}; the standard one "
        f"was still at {results['variants']['2']['heldout_exact_match']:.3f} after as many steps, and with "
        "greedy never right a self-critical sample has nothing to beat). Then "
        f"{rl['steps']} steps of each objective from that start, AdamW, batches of {budget['batch_size']}, "
        f"seed {budget['seed']}: the same batches and samples for every run. Reward: {reward}; one sample "
        "per source at temperature 1, so a sample is rarely all right while greedy often is: most "
        "advantages are -1, and they push down whole sequences, greedy's own prefix included. "
        f"Times on 2 shared cores: cross-entropy {rl['ce']['seconds']} s, REINFORCE {rl['scst']['seconds']} s "
        f"and {rl['scst_low']['seconds']} s (a greedy decode, a sampled one and a scoring pass per step). "
        "Trained by `python -m txviz train date_variants`."
    )
