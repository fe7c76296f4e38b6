"""Fine-tune the tiny BERT for the sentence and word tasks, against heads on the frozen one; write assets/finetune/."""

from __future__ import annotations

from txviz.objectives.finetune import ASSETS_FILE, RUNS, FinetuneConfig, measure, save
from txviz.training import _trainer


def main(argv: list[str] | None = None) -> int:
    """Reproduce assets/finetune/runs.json (fixed seed, one thread); print held-out numbers against the baselines."""
    config, out = _trainer.config_and_out(
        argv, "finetune", __doc__, FinetuneConfig, ASSETS_FILE, out_help="output JSON file"
    )
    _trainer.one_thread()
    weights, runs = measure(config)
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
    save(weights, runs, out)
    print(f"wrote {out} and the runs' weights beside it")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
