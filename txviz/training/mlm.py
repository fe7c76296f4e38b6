"""Train the tiny BERT of the objectives tab on masked words (`python -m txviz train mlm`)."""

from __future__ import annotations

import argparse
import json
import random
import time
from pathlib import Path

import torch
from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, processors
from transformers import BertConfig, BertForMaskedLM, PreTrainedTokenizerFast

from txviz.objectives import corpus
from txviz.objectives.masked import MLM_DIR, SUBSET_SENTENCES, as_loaded, masked_accuracy, unigram_accuracy

SPECIAL_TOKENS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")
MAX_TOKENS = 16  # the longest sentence has 10 words
MASK_SHARE = 0.15


def build_tokenizer() -> PreTrainedTokenizerFast:
    """Word-level tokenizer over the grammar's words, with BERT's [CLS] ... [SEP] around a sentence."""
    vocab = {tok: i for i, tok in enumerate([*SPECIAL_TOKENS, *corpus.vocabulary()])}
    core = Tokenizer(models.WordLevel(vocab=vocab, unk_token="[UNK]"))
    core.normalizer = normalizers.Lowercase()
    core.pre_tokenizer = pre_tokenizers.Whitespace()
    core.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", special_tokens=[("[CLS]", vocab["[CLS]"]), ("[SEP]", vocab["[SEP]"])]
    )
    return PreTrainedTokenizerFast(
        tokenizer_object=core,
        pad_token="[PAD]",
        unk_token="[UNK]",
        cls_token="[CLS]",
        sep_token="[SEP]",
        mask_token="[MASK]",
        model_max_length=MAX_TOKENS,
    )


def build_model(tokenizer: PreTrainedTokenizerFast, hidden: int = 64) -> BertForMaskedLM:
    """Two layers, four heads, d = 64: a BERT small enough to train in minutes on one core."""
    config = BertConfig(
        vocab_size=len(tokenizer),
        hidden_size=hidden,
        num_hidden_layers=2,
        num_attention_heads=4,
        intermediate_size=4 * hidden,
        max_position_embeddings=MAX_TOKENS,
        type_vocab_size=1,
        pad_token_id=tokenizer.pad_token_id,
    )
    return BertForMaskedLM(config)


def mask_batch(tokenizer, sentences: list[str], generator: torch.Generator) -> dict[str, torch.Tensor]:
    """BERT's recipe: 15% of words chosen (at least one), 80% -> [MASK], 10% random, 10% kept."""
    enc = tokenizer(sentences, padding=True, return_tensors="pt")
    input_ids, labels = enc.input_ids.clone(), enc.input_ids.clone()
    words = (
        (enc.attention_mask == 1)
        & (input_ids != tokenizer.cls_token_id)
        & (input_ids != tokenizer.sep_token_id)
    )
    chosen = (torch.rand(input_ids.shape, generator=generator) < MASK_SHARE) & words
    for row in range(len(sentences)):  # every sentence contributes at least one loss term
        if not chosen[row].any():
            candidates = words[row].nonzero().flatten()
            chosen[row, candidates[torch.randint(len(candidates), (1,), generator=generator)]] = True
    labels[~chosen] = -100
    roll = torch.rand(input_ids.shape, generator=generator)
    input_ids[chosen & (roll < 0.8)] = tokenizer.mask_token_id
    randomised = chosen & (roll >= 0.8) & (roll < 0.9)
    first_word = len(SPECIAL_TOKENS)
    input_ids[randomised] = torch.randint(
        first_word, len(tokenizer), (int(randomised.sum()),), generator=generator
    )
    return {"input_ids": input_ids, "attention_mask": enc.attention_mask, "labels": labels}


def train(steps: int, batch_size: int, lr: float, seed: int, log=print):
    """Train from scratch with a fixed seed; returns the model, tokenizer and the loss per step."""
    torch.manual_seed(seed)
    torch.set_num_threads(1)  # the machine is shared
    generator = torch.Generator().manual_seed(seed)
    train_sentences, _ = corpus.train_and_heldout(seed)
    tokenizer = build_tokenizer()
    model = build_model(tokenizer)
    optim = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.01)
    warmup = max(1, steps // 20)
    sched = torch.optim.lr_scheduler.LambdaLR(
        optim, lambda s: min((s + 1) / warmup, max(0.0, (steps - s) / max(1, steps - warmup)))
    )
    rng = random.Random(seed)
    losses, started = [], time.perf_counter()
    model.train()
    for step in range(steps):
        batch = mask_batch(tokenizer, rng.sample(train_sentences, batch_size), generator)
        loss = model(**batch).loss
        optim.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optim.step()
        sched.step()
        losses.append(loss.item())
        if (step + 1) % max(1, steps // 10) == 0:
            recent = sum(losses[-50:]) / len(losses[-50:])
            log(f"step {step + 1}/{steps}: loss {recent:.4f}, {time.perf_counter() - started:.0f} s")
    model.eval()
    return model, tokenizer, losses


def evaluate(model, tokenizer, seed: int) -> dict:
    """Held-out masked-word accuracy, the unigram baseline, and the fixed subset's accuracy."""
    train_sentences, heldout = corpus.train_and_heldout(seed)
    guess, unigram = unigram_accuracy(train_sentences, heldout)
    return {
        "heldout_masked_accuracy": round(masked_accuracy(as_loaded(model, tokenizer), heldout), 4),
        "unigram_baseline_accuracy": round(unigram, 4),
        "unigram_guess": guess,
        "subset_masked_accuracy": masked_accuracy(as_loaded(model, tokenizer), heldout[:SUBSET_SENTENCES]),
        "heldout_sentences": len(heldout),
        "heldout_words": sum(len(s.split()) for s in heldout),
    }


def save(model, tokenizer, scores: dict, steps: int, seconds: float, out_dir: Path) -> None:
    """Weights (safetensors), tokenizer and txviz.json with the measured accuracies."""
    out_dir.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out_dir, safe_serialization=True)
    tokenizer.save_pretrained(out_dir)
    meta = {
        "kind": "encoder",
        "description": (
            "Tiny BERT (2 layers, 4 heads, d 64) with its masked-word head, trained by txviz on "
            "sentences from a small English grammar (txviz/objectives/corpus.py)."
        ),
        "task": "Predict a masked word: 'the dog [MASK] loudly' -> 'barks'. Each word of each held-out sentence masked in turn.",
        **scores,
        "training_steps": steps,
        "training_seconds": round(seconds),
        "example_text": "the dog barks loudly in the garden",
    }
    (out_dir / "txviz.json").write_text(json.dumps(meta, indent=2) + "\n")


def main(argv: list[str] | None = None) -> int:
    """Command line: train, measure on held-out sentences, save."""
    parser = argparse.ArgumentParser(prog="python -m txviz train mlm", description=__doc__)
    parser.add_argument("--steps", type=int, default=3000)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--lr", type=float, default=2e-3)
    parser.add_argument("--seed", type=int, default=corpus.SEED)
    parser.add_argument("--out", type=Path, default=MLM_DIR)
    args = parser.parse_args(argv)
    started = time.perf_counter()
    model, tokenizer, _ = train(args.steps, args.batch_size, args.lr, args.seed)
    seconds = time.perf_counter() - started
    scores = evaluate(model, tokenizer, args.seed)
    save(model, tokenizer, scores, args.steps, seconds, args.out)
    print(
        f"saved to {args.out}: held-out masked-word accuracy {scores['heldout_masked_accuracy']:.4f} "
        f"vs unigram baseline ({scores['unigram_guess']!r}) {scores['unigram_baseline_accuracy']:.4f}, "
        f"ratio {scores['heldout_masked_accuracy'] / max(scores['unigram_baseline_accuracy'], 1e-9):.1f}x; "
        f"{seconds:.0f} s training"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
