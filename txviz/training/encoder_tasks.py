"""Fit the sentence classifier and the word tagger on the frozen tiny BERT; write assets/encoder_tasks/."""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

from txviz.core.threads import torch_threads
from txviz.objectives import encoder_tasks as tasks
from txviz.objectives.masked import load_mlm

C_GRID = (0.01, 0.1, 1.0, 10.0, 100.0)  # inverse regularisation, chosen by 5-fold CV on training only


def fit(features: np.ndarray, targets: np.ndarray):
    """A logistic regression whose regularisation 5-fold cross-validation on the training set chose."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import GridSearchCV

    search = GridSearchCV(LogisticRegression(max_iter=5000), {"C": list(C_GRID)}, cv=5)
    return search.fit(features, targets).best_estimator_


def measure(seed: int = tasks.SEED) -> dict:
    """Features of the frozen encoder, both probes fitted on training, scored on held-out sentences."""
    start = time.process_time()
    train, heldout = tasks.train_and_heldout(seed)
    with torch_threads(1):
        loaded = load_mlm()
        seen = tasks.features(loaded, [e.text for e in train])
        unseen = tasks.features(loaded, [e.text for e in heldout])
    sentence = fit(seen.cls, np.array([e.label for e in train]))
    tagger = fit(np.concatenate(seen.words), np.concatenate([e.tags for e in train]))
    baseline = tasks.word_tag_baseline(train)
    runs = {
        "seed": seed,
        "train_sentences": len(train),
        "heldout_sentences": len(heldout),
        "sentence_accuracy": float(sentence.score(unseen.cls, [e.label for e in heldout])),
        "sentence_train_accuracy": float(sentence.score(seen.cls, [e.label for e in train])),
        "majority_accuracy": tasks.majority_accuracy(train, heldout),
        "tagger": tasks.tag_scores([tagger.predict(w) for w in unseen.words], heldout),
        "word_tag_baseline": tasks.tag_scores(
            [np.array([baseline.get(w, 0) for w in e.words]) for e in heldout], heldout
        ),
        "chosen_c": {"sentence": sentence.C, "tag": tagger.C},
        "cpu_seconds": round(time.process_time() - start, 1),
    }
    return {
        "sentence": {"coef": sentence.coef_.tolist(), "intercept": sentence.intercept_.tolist()},
        "tag": {"coef": tagger.coef_.tolist(), "intercept": tagger.intercept_.tolist()},
        "runs": runs,
    }


def main(argv: list[str] | None = None) -> int:
    """Reproduce assets/encoder_tasks/probes.json; print held-out numbers against the baselines."""
    parser = argparse.ArgumentParser(prog="python -m txviz train encoder_tasks", description=__doc__)
    parser.add_argument("--out", type=Path, default=tasks.ASSETS_FILE, help="output JSON file")
    parser.add_argument("--seed", type=int, default=tasks.SEED)
    args = parser.parse_args(argv)
    shipped = measure(args.seed)
    runs = shipped["runs"]
    print(
        f"sentence true/false from <cls>: held-out {runs['sentence_accuracy']:.4f} "
        f"vs majority {runs['majority_accuracy']:.4f} ({runs['heldout_sentences']} sentences)"
    )
    for name, scores in (("tagger", runs["tagger"]), ("word's most frequent tag", runs["word_tag_baseline"])):
        print(
            f"{name}: word accuracy {scores['word_accuracy']:.4f}, "
            f"false sentences tagged exactly {scores['false_sentences_exact']:.4f}"
        )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(shipped) + "\n")
    print(f"wrote {args.out} in {runs['cpu_seconds']} CPU s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
