"""Train the grammar's tiny encoder-decoder (parse:, tag:, count:, translate: on one set of weights); write assets/grammar/."""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

from txviz.grammar import language as lang
from txviz.grammar.model import ASSETS_DIR, GrammarConfig, GrammarModel, padded, save

BASELINE_DRAWS = 4000  # training draws per task the baselines are counted on


def train(config: GrammarConfig, split: lang.Split, log=print):
    """AdamW with a linear warm-up and decay; each batch fresh draws of the tasks in the config's shares."""
    import torch

    torch.manual_seed(config.seed)
    model = GrammarModel(config)
    optimiser = torch.optim.AdamW(model.parameters(), lr=config.lr, weight_decay=0.01)
    warm = config.steps // 20
    schedule = torch.optim.lr_scheduler.LambdaLR(
        optimiser, lambda s: min((s + 1) / warm, max(0.05, (config.steps - s) / (config.steps - warm)))
    )
    tasks = [t for t, n in zip(lang.TASKS, config.shares, strict=True) for _ in range(n)]
    start, cpu, loss = time.perf_counter(), time.process_time(), None
    for step in range(config.steps):
        examples = [split.draw(tasks[i % len(tasks)]) for i in range(config.batch_size)]
        source = padded([lang.ids(e.source) for e in examples])
        inputs = padded([[lang.START, *lang.ids(e.target)] for e in examples])
        targets = padded([[*lang.ids(e.target), lang.END] for e in examples])
        logits = model(source, inputs)
        loss = torch.nn.functional.cross_entropy(logits.transpose(1, 2), targets, ignore_index=lang.PAD)
        optimiser.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimiser.step()
        schedule.step()
        if (step + 1) % 400 == 0:
            log(f"step {step + 1}: loss {float(loss.detach()):.4f} ({time.perf_counter() - start:.0f} s)")
    model.eval()
    return (
        model,
        round(float(loss.detach()), 4),
        round(time.perf_counter() - start, 1),
        round(time.process_time() - cpu, 1),
    )


def main(argv: list[str] | None = None) -> int:
    """Reproduce the shipped model (fixed seed, one thread); print held-out exact match beside the baselines."""
    parser = argparse.ArgumentParser(prog="python -m txviz train grammar", description=__doc__)
    parser.add_argument("--out", type=Path, default=ASSETS_DIR, help="output folder")
    parser.add_argument("--seed", type=int, default=GrammarConfig.seed)
    parser.add_argument("--steps", type=int, default=GrammarConfig.steps)
    parser.add_argument("--lr", type=float, default=GrammarConfig.lr)
    args = parser.parse_args(argv)
    import torch

    from txviz.grammar import results

    torch.set_num_threads(1)  # a tiny model: one thread keeps runs identical and leaves the other core free
    config = GrammarConfig(seed=args.seed, steps=args.steps, lr=args.lr)
    split = lang.Split(config.seed, config.held_out)
    held_out = split.held_out_examples()
    load = os.getloadavg()[0]
    model, final_loss, seconds, cpu_seconds = train(config, split)
    scores = results.evaluate(model, held_out)
    counted = lang.Split(config.seed + 100, 1)  # a second stream of training draws for the baselines
    baselines = results.baselines(
        [counted.draw(t) for t in lang.TASKS for _ in range(BASELINE_DRAWS)], held_out
    )
    for name, score in scores.items():
        base = baselines[name]
        extra = (
            f"; pronoun {score['pronoun']:.4f} vs {base['baseline']} {base['pronoun']:.4f}"
            if "pronoun" in score
            else ""
        )
        versus = "" if "exact" not in base else f" vs {base['baseline']} {base['exact']:.4f}"
        print(f"held-out {name} ({score['n']}): exact {score['exact']:.4f}{versus}{extra}")
    print(f"pronoun's cross-attention: {scores['translate']['pronoun_attention']}")
    runs = {"heldout": scores, "baselines": baselines, "final_loss": final_loss, "seconds": seconds,
            "cpu_seconds": cpu_seconds, "load_average": round(load, 2), "threads": 1}  # fmt: skip
    save(model, runs, args.out)
    print(f"trained in {seconds} s ({cpu_seconds} s of CPU) on one thread, load average {load:.2f} at the start; "
          f"wrote {args.out}")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
