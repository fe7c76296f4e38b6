"""Fine-tune the tiny BERT for the sentence and word tasks, against heads on the frozen one; write assets/finetune/."""

from __future__ import annotations

import argparse
from pathlib import Path

from txviz.objectives.finetune import ASSETS_FILE, RUNS, FinetuneConfig, measure, save


def main(argv: list[str] | None = None) -> int:
    """Reproduce assets/finetune/runs.json (fixed seed, one thread); print held-out numbers against the baselines."""
    parser = argparse.ArgumentParser(prog="python -m txviz train finetune", description=__doc__)
    parser.add_argument("--out", type=Path, default=ASSETS_FILE, help="output JSON file")
    parser.add_argument("--seed", type=int, default=FinetuneConfig.seed)
    parser.add_argument("--steps", type=int, default=FinetuneConfig.steps)
    args = parser.parse_args(argv)
    import torch

    torch.set_num_threads(1)  # a tiny model: one thread keeps runs identical and leaves the other core free
    weights, runs = measure(FinetuneConfig(seed=args.seed, steps=args.steps))
    print(
        f"baselines: majority {runs['majority_accuracy']:.4f}; each word's most frequent tag "
        f"{runs['word_tag_baseline']['word_accuracy']:.4f} ({runs['heldout_sentences']} held-out sentences)"
    )
    for name in RUNS:
        held = runs[name]["heldout"]
        print(
            f"{name}: sentence {held['sentence_accuracy']:.4f}, word tags {held['tagger']['word_accuracy']:.4f}, "
            f"false sentences exact {held['tagger']['false_sentences_exact']:.4f}; "
            f"{runs[name]['trained_weights']:,} weights trained in {runs[name]['seconds']} s"
        )
    save(weights, runs, args.out)
    print(f"wrote {args.out} and the runs' weights beside it")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
