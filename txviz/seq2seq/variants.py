"""date-bart retrained two ways: its decoder reading an earlier encoder layer, and trained on exact match.

Cross-attention variants: the standard Transformer's decoder reads the encoder's last layer; here
it may read layer l instead (0 = the embeddings, 1, 2 = the last), by handing the decoder that
hidden state of one encoder run as its ``encoder_outputs``. Training on the metric (Ranzato et al.
2016, Rennie et al. 2017): REINFORCE on sampled outputs whose reward is exact match, with the
greedy output's reward as the baseline (self-critical), against cross-entropy continued as long.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

import plotly.graph_objects as go
import torch
from safetensors.torch import load_file
from transformers import BartConfig, BartForConditionalGeneration, PreTrainedTokenizerFast
from transformers.modeling_outputs import BaseModelOutput

from txviz.core import paths
from txviz.core.errors import require_kind
from txviz.core.running import generate, run
from txviz.figures.axes import margin
from txviz.figures.colors import PALETTE
from txviz.figures.text import plain

ASSETS_DIR = paths.ASSETS / "date_variants"
RESULTS = ASSETS_DIR / "results.json"
DATE_BART = paths.MODELS / "date-bart"
LAYERS = (0, 1, 2)  # hidden_states index: 0 the embeddings, 2 the last encoder layer
LAYER_NAMES = {0: "embeddings (layer 0)", 1: "encoder layer 1", 2: "encoder layer 2 (last: standard)"}
RUNS = {
    "ce": "cross-entropy continued (baseline)",
    "scst": "self-critical REINFORCE on exact match, same rate",
    "scst_low": "self-critical REINFORCE on exact match, a tenth of the rate",
}
MAX_NEW_TOKENS = 12  # 10 ISO characters, </s>, one to spare (as date-bart decodes)


def encoder_outputs(model, layer: int, input_ids, attention_mask, grad: bool = False) -> BaseModelOutput:
    """One encoder run with every hidden state kept; hidden state ``layer`` is what cross-attention reads."""
    states = run(
        model,
        outputs=("hidden_states",),
        grad=grad,
        part="encoder",
        input_ids=input_ids,
        attention_mask=attention_mask,
    ).hidden_states
    return BaseModelOutput(last_hidden_state=states[layer])


def loss(model, layer: int, input_ids, attention_mask, labels) -> torch.Tensor:
    """Cross-entropy of the labels under teacher forcing, the decoder reading encoder layer ``layer``."""
    memory = encoder_outputs(model, layer, input_ids, attention_mask, grad=True)
    output = run(
        model,
        outputs=("output",),
        grad=True,
        encoder_outputs=memory,
        attention_mask=attention_mask,
        labels=labels,
    ).output
    return output.loss


def decode(model, layer: int, input_ids, attention_mask, sample: bool = False) -> torch.Tensor:
    """Greedy (or sampled, at temperature 1 over the whole vocabulary) output ids, the decoder reading ``layer``."""
    memory = encoder_outputs(model, layer, input_ids, attention_mask)
    options = (
        {"do_sample": True, "top_k": 0, "top_p": 1.0, "temperature": 1.0} if sample else {"do_sample": False}
    )
    return generate(
        model,
        input_ids=input_ids,
        attention_mask=attention_mask,
        encoder_outputs=memory,
        max_new_tokens=MAX_NEW_TOKENS,
        num_beams=1,
        **options,
    )


def sequence_log_probs(model, layer: int, input_ids, attention_mask, sequences, eos: int) -> torch.Tensor:
    """log p(sequence | source) per row, with gradient: tokens after the start up to the first end token."""
    memory = encoder_outputs(model, layer, input_ids, attention_mask, grad=True)
    inputs, targets = sequences[:, :-1], sequences[:, 1:]
    logits = run(
        model,
        outputs=("logits",),
        grad=True,
        encoder_outputs=memory,
        attention_mask=attention_mask,
        decoder_input_ids=inputs,
    ).logits
    token = logits.log_softmax(-1).gather(-1, targets.unsqueeze(-1)).squeeze(-1)
    # generate pads after the end token: only tokens up to and including the first </s> were sampled
    ended_before = torch.cumsum((targets == eos).long(), dim=1) - (targets == eos).long()
    return (token * (ended_before == 0)).sum(1)


def reward(prediction: str, target: str, partial: float = 0.0) -> float:
    """Exact match (1 or 0), mixed with ``partial`` x the share of target characters right in place."""
    exact = float(prediction == target)
    if not partial:
        return exact
    right = sum(a == b for a, b in zip(prediction, target, strict=False)) / max(
        len(target), len(prediction), 1
    )
    return (1 - partial) * exact + partial * right


def self_critical_advantage(sampled: torch.Tensor, greedy: torch.Tensor) -> torch.Tensor:
    """Each sample's reward minus the greedy output's reward on the same source (Rennie et al. 2017)."""
    return sampled - greedy


def reinforce_loss(log_probs: torch.Tensor, advantage: torch.Tensor) -> torch.Tensor:
    """REINFORCE: minus the advantage-weighted log-probability of each sample, averaged over the batch."""
    return -(advantage.detach() * log_probs).mean()


@cache
def load_results(path: Path = RESULTS) -> dict:
    """The numbers of `python -m txviz train date_variants` (results.json)."""
    return json.loads(path.read_text())


def tokenizer() -> PreTrainedTokenizerFast:
    """date-bart's word-level tokenizer, as shipped."""
    return PreTrainedTokenizerFast.from_pretrained(DATE_BART)


def load_variant(layer: int) -> BartForConditionalGeneration:
    """The variant trained reading encoder ``layer``: date-bart's shape, shipped weights (float16 on disk)."""
    model = BartForConditionalGeneration(BartConfig.from_pretrained(DATE_BART))
    state = {k: v.float() for k, v in load_file(ASSETS_DIR / f"reads_layer_{layer}.safetensors").items()}
    model.load_state_dict(state, strict=False)  # the tied embeddings are stored once
    model.tie_weights()
    return model.eval()


def decode_texts(model, layer: int, tok, sources: list[str], batch_size: int = 250) -> list[str]:
    """Greedy outputs for these sources, the decoder reading encoder ``layer``, as text."""
    out: list[str] = []
    for start in range(0, len(sources), batch_size):
        enc = tok(sources[start : start + batch_size], padding=True, return_tensors="pt")
        ids = decode(model, layer, enc.input_ids, enc.attention_mask)
        out.extend(tok.batch_decode(ids, skip_special_tokens=True))
    return out


def exact_match(model, layer: int, tok, pairs) -> float:
    """Share of pairs whose greedy output (decoder reading ``layer``) equals the ISO target."""
    predictions = decode_texts(model, layer, tok, [p.source for p in pairs])
    return sum(p == pair.target for p, pair in zip(predictions, pairs, strict=True)) / len(pairs)


def read_each_layer(loaded, variants: dict, source: str) -> list[dict]:
    """Per layer l: the shipped date-bart's output when its decoder reads l unretrained, and the variant's."""
    require_kind(loaded, ("encoder-decoder",), "read an earlier encoder layer")
    results = load_results()
    tok = loaded.tokenizer
    enc = tok([source], return_tensors="pt", truncation=True)
    last = loaded.model.config.encoder_layers
    rows = []
    for layer in LAYERS:
        # another encoder-decoder's own last layer stands in for "2 = the last"
        as_is = decode(
            loaded.model, last if layer == LAYERS[-1] else layer, enc.input_ids, enc.attention_mask
        )
        retrained = decode_texts(variants[layer], layer, variants["tokenizer"], [source])[0]
        rows.append(
            {
                "decoder reads": LAYER_NAMES[layer],
                f"{loaded.name}, not retrained": tok.batch_decode(as_is, skip_special_tokens=True)[0],
                "retrained reading it": retrained,
                "held-out exact match (retrained)": results["variants"][str(layer)]["heldout_exact_match"],
            }
        )
    return rows


def variant_rows(results: dict) -> list[dict]:
    """One row per variant: held-out exact match, its final training loss and its train time."""
    return [
        {
            "decoder reads": LAYER_NAMES[int(layer)],
            "held-out exact match": v["heldout_exact_match"],
            "final training loss": v["final_loss"],
            "train seconds": v["seconds"],
        }
        for layer, v in results["variants"].items()
    ]


def reinforce_rows(results: dict) -> list[dict]:
    """Held-out exact match before and after the same number of steps of each objective."""
    rl, budget = results["reinforce"], results["budget"]
    rows = [
        {
            "run": "start (short cross-entropy run)",
            "learning rate": None,
            "steps": 0,
            "held-out exact match": rl["start"],
        }
    ]
    for key, lr in (
        ("ce", budget["continue_lr"]),
        ("scst", budget["continue_lr"]),
        ("scst_low", budget["scst_low_lr"]),
    ):
        rows.append(
            {
                "run": RUNS[key],
                "learning rate": lr,
                "steps": rl["steps"],
                "held-out exact match": rl[key]["final"],
            }
        )
    return rows


def variants_figure(results: dict) -> go.Figure:
    """Held-out exact match of each variant, one bar per encoder layer the decoder reads."""
    rows = variant_rows(results)
    fig = go.Figure(
        go.Bar(
            x=[plain(r["decoder reads"]) for r in rows],
            y=[100 * r["held-out exact match"] for r in rows],
            marker={"color": [PALETTE[i] for i in range(len(rows))]},
            text=[f"{100 * r['held-out exact match']:.1f}%" for r in rows],
            hovertemplate="%{x}: %{y:.1f}%<extra></extra>",
        )
    )
    fig.update_layout(
        title=f"Exact match on {results['heldout_days']:,} held-out days, {results['budget']['steps']} steps each",
        yaxis={"title": "held-out exact match (%)", "range": [0, 100]},
        xaxis={"title": "what cross-attention reads"},
        margin=margin(top=60),
    )
    return fig


def curves_figure(results: dict) -> go.Figure:
    """Held-out exact match against steps from the same start: cross-entropy continued and REINFORCE."""
    rl = results["reinforce"]
    fig = go.Figure()
    for i, (key, name) in enumerate(RUNS.items()):
        curve = rl[key]["curve"]
        fig.add_trace(
            go.Scatter(
                x=[int(s) for s in curve],
                y=[100 * v for v in curve.values()],
                mode="lines+markers",
                name=name,
                line={"color": PALETTE[i]},
                hovertemplate="step %{x}: %{y:.1f}%<extra></extra>",
            )
        )
    fig.update_layout(
        title=f"Exact match on {results['heldout_days']:,} held-out days from the same under-trained start",
        xaxis={"title": "steps after the start"},
        yaxis={"title": "held-out exact match (%)", "range": [0, 100]},
        legend={"orientation": "h", "y": -0.25},
        margin=margin(top=60),
    )
    return fig
