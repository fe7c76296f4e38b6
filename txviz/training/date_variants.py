"""Retrain date-bart with its decoder reading encoder layer 0, 1 or 2, then self-critical REINFORCE on exact
match against continued cross-entropy (`python -m txviz train date_variants`); writes assets/date_variants/."""

from __future__ import annotations

import argparse
import json
import os
import random
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import torch
from safetensors.torch import save_file

from txviz.seq2seq import dates, variants
from txviz.training import seq2seq


@dataclass(frozen=True)
class Budget:
    """Everything that decides a run; the seed fixes the initial weights, every batch and every sample."""

    seed: int = dates.SEED
    steps: int = 250  # from scratch per variant: well short of date-bart's 1,110, so the variants can differ
    batch_size: int = 64
    lr: float = 1.5e-3
    # then, from one variant: cross-entropy or REINFORCE, as many steps; at 250 steps the standard one
    # is still at 0 (greedy never right, so no reward to learn from) and layer 1's is half right
    start_layer: int = 1
    continue_steps: int = 300
    continue_lr: float = 3e-4
    scst_low_lr: float = 3e-5  # REINFORCE again at a tenth of the rate: at 3e-4 it collapsed to 0
    eval_every: int = 50
    partial: float = 0.0  # reward = exact match only; >0 mixes in per-character credit
    check_steps: int = 3  # the tiny run the tests repeat from the shipped start
    check_batch: int = 8


def batches(pairs: list, batch_size: int, steps: int, seed: int):
    """``steps`` batches, epochs shuffled by a generator seeded with ``seed``."""
    rng = random.Random(seed)
    order: list = []
    for _ in range(steps):
        if len(order) < batch_size:
            order = pairs[:]
            rng.shuffle(order)
        yield order[:batch_size]
        order = order[batch_size:]


def train_variant(layer: int, budget: Budget, tok, train_pairs: list) -> tuple[torch.nn.Module, float]:
    """date-bart's recipe (AdamW, warm-up then linear decay) for ``budget.steps``, the decoder reading ``layer``."""
    torch.manual_seed(budget.seed)
    model = seq2seq.build_model(tok)
    optim = torch.optim.AdamW(model.parameters(), lr=budget.lr, weight_decay=0.01)
    total, warmup = budget.steps, max(1, budget.steps // 20)
    sched = torch.optim.lr_scheduler.LambdaLR(
        optim, lambda step: min((step + 1) / warmup, max(0.0, (total - step) / (total - warmup)))
    )
    model.train()
    losses = []
    for batch in batches(train_pairs, budget.batch_size, budget.steps, budget.seed):
        b = seq2seq.encode_batch(tok, batch)
        loss = variants.loss(model, layer, b["input_ids"], b["attention_mask"], b["labels"])
        optim.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optim.step()
        sched.step()
        losses.append(loss.item())
    return model, sum(losses[-50:]) / len(losses[-50:])


def as_shipped(model) -> torch.nn.Module:
    """The model with its weights rounded to float16, as the shipped file holds them."""
    model.load_state_dict({k: v.half().float() for k, v in model.state_dict().items()})
    return model.eval()


def scst_step(model, layer: int, tok, batch: list, partial: float) -> tuple[torch.Tensor, dict]:
    """One self-critical step's loss: a sample per source, the greedy output's reward as its baseline."""
    enc = tok([p.source for p in batch], padding=True, return_tensors="pt")
    targets = [p.target for p in batch]
    greedy = tok.batch_decode(
        variants.decode(model, layer, enc.input_ids, enc.attention_mask), skip_special_tokens=True
    )
    sampled_ids = variants.decode(model, layer, enc.input_ids, enc.attention_mask, sample=True)
    sampled = tok.batch_decode(sampled_ids, skip_special_tokens=True)
    r_greedy = torch.tensor([variants.reward(g, t, partial) for g, t in zip(greedy, targets, strict=True)])
    r_sampled = torch.tensor([variants.reward(s, t, partial) for s, t in zip(sampled, targets, strict=True)])
    advantage = variants.self_critical_advantage(r_sampled, r_greedy)
    log_probs = variants.sequence_log_probs(
        model, layer, enc.input_ids, enc.attention_mask, sampled_ids, tok.eos_token_id
    )
    info = {"sampled": r_sampled.tolist(), "greedy": r_greedy.tolist(), "advantage": advantage.tolist()}
    return variants.reinforce_loss(log_probs, advantage), info


def ce_step(model, layer: int, tok, batch: list) -> tuple[torch.Tensor, dict]:
    """One cross-entropy step's loss under teacher forcing."""
    b = seq2seq.encode_batch(tok, batch)
    return variants.loss(model, layer, b["input_ids"], b["attention_mask"], b["labels"]), {}


def continue_training(
    start: torch.nn.Module,
    objective: str,
    budget: Budget,
    tok,
    train_pairs,
    heldout,
    steps=None,
    batch_size=None,
    lr=None,
) -> tuple[torch.nn.Module, dict]:
    """From a copy of ``start``: AdamW at a constant rate, same seed and batches for either objective."""
    steps = budget.continue_steps if steps is None else steps
    batch_size = budget.batch_size if batch_size is None else batch_size
    model = seq2seq.build_model(tok)
    model.load_state_dict(start.state_dict())
    torch.manual_seed(budget.seed + 1)  # the samples; the same for every run from this start
    optim = torch.optim.AdamW(
        model.parameters(), lr=budget.continue_lr if lr is None else lr, weight_decay=0.01
    )
    layer = budget.start_layer
    curve = {0: variants.exact_match(model, layer, tok, heldout)} if heldout else {}
    trace = []
    started = time.perf_counter()
    for i, batch in enumerate(batches(train_pairs, batch_size, steps, budget.seed + 2), start=1):
        model.train()
        loss, info = (
            scst_step(model, layer, tok, batch, budget.partial)
            if objective.startswith("scst")
            else ce_step(model, layer, tok, batch)
        )
        optim.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optim.step()
        trace.append(info)
        if heldout and (i % budget.eval_every == 0 or i == steps):
            curve[i] = variants.exact_match(model, layer, tok, heldout)
    seconds = time.perf_counter() - started
    return model, {"curve": curve, "final": curve.get(steps), "seconds": round(seconds, 1), "trace": trace}


def load() -> str:
    """The machine's load averages, as `uptime` prints them."""
    return ", ".join(f"{x:.2f}" for x in os.getloadavg())


def shipped_state(model) -> dict:
    """The weights in float16, each tensor once: a tied output layer shares the token table's storage."""
    seen, state = set(), {}
    for name, tensor in model.state_dict().items():
        if tensor.data_ptr() not in seen:
            seen.add(tensor.data_ptr())
            state[name] = tensor.half().contiguous()
    return state


def main(argv: list[str] | None = None) -> int:
    """Train the three variants and both continuations with one seed; print held-out numbers and times."""
    parser = argparse.ArgumentParser(prog="python -m txviz train date_variants", description=__doc__)
    parser.add_argument("--out", type=Path, default=variants.ASSETS_DIR)
    parser.add_argument("--seed", type=int, default=Budget.seed)
    parser.add_argument("--steps", type=int, default=Budget.steps)
    parser.add_argument("--continue-steps", type=int, default=Budget.continue_steps)
    parser.add_argument("--partial", type=float, default=Budget.partial)
    args = parser.parse_args(argv)
    budget = Budget(
        seed=args.seed, steps=args.steps, continue_steps=args.continue_steps, partial=args.partial
    )
    torch.set_num_threads(1)  # the training machine is shared; one core is enough
    train_pairs, heldout = dates.train_and_heldout(budget.seed)
    tok = seq2seq.build_tokenizer()
    results: dict = {
        "budget": asdict(budget),
        "heldout_days": len(heldout),
        "load_before": load(),
        "variants": {},
    }
    args.out.mkdir(parents=True, exist_ok=True)
    models = {}
    for layer in variants.LAYERS:
        started = time.perf_counter()
        model, final_loss = train_variant(layer, budget, tok, train_pairs)
        seconds = time.perf_counter() - started
        models[layer] = as_shipped(model)
        acc = variants.exact_match(models[layer], layer, tok, heldout)
        results["variants"][str(layer)] = {
            "heldout_exact_match": acc,
            "final_loss": round(final_loss, 4),
            "seconds": round(seconds, 1),
        }
        state = shipped_state(model)
        save_file(state, args.out / f"reads_layer_{layer}.safetensors")
        print(
            f"reads {variants.LAYER_NAMES[layer]}: held-out exact match {acc:.4f}, {seconds:.0f} s, load {load()}"
        )
    start = models[budget.start_layer]
    rl: dict = {
        "steps": budget.continue_steps,
        "start": results["variants"][str(budget.start_layer)]["heldout_exact_match"],
    }
    for objective, lr in (("ce", None), ("scst", None), ("scst_low", budget.scst_low_lr)):
        _, run = continue_training(start, objective, budget, tok, train_pairs, heldout, lr=lr)
        del run["trace"]
        rl[objective] = run
        print(
            f"{objective}: held-out exact match {rl['start']:.4f} -> {run['final']:.4f}, {run['seconds']} s, load {load()}"
        )
    results["reinforce"] = rl
    # the tiny run the tests repeat: a few self-critical steps from the shipped start, on a small batch
    _, check = continue_training(
        start, "scst", budget, tok, train_pairs, [], budget.check_steps, budget.check_batch
    )
    results["check"] = check["trace"]
    results["load_after"] = load()
    (args.out / "results.json").write_text(json.dumps(results, indent=1) + "\n")
    print(f"wrote {args.out}/results.json and reads_layer_{{0,1,2}}.safetensors")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
