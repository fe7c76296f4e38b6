"""Train the tiny encoder-decoder on dates in words -> ISO (`python -m txviz train seq2seq`)."""

from __future__ import annotations

import argparse
import json
import random
import time
from pathlib import Path

import torch
from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors
from transformers import BartConfig, BartForConditionalGeneration, PreTrainedTokenizerFast

from txviz.core import paths
from txviz.seq2seq import dates

OUT_DIR = paths.MODELS / "date-bart"
SPECIAL_TOKENS = ("<s>", "<pad>", "</s>", "<unk>")  # BART's ids 0, 1, 2, 3
MAX_SOURCE_TOKENS = 32  # sources are at most 9 words; room for a user's longer phrase
MAX_TARGET_TOKENS = 12  # 10 ISO characters, </s>, and one to spare


def build_tokenizer() -> PreTrainedTokenizerFast:
    """Word-level tokenizer: one token per English word, one per digit or '-'."""
    vocab = {tok: i for i, tok in enumerate([*SPECIAL_TOKENS, *dates.vocabulary()])}
    core = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
    core.normalizer = normalizers.Lowercase()
    # Whitespace splits words and "-"; Digits then cuts "2026" into 2, 0, 2, 6.
    core.pre_tokenizer = pre_tokenizers.Sequence(
        [pre_tokenizers.Whitespace(), pre_tokenizers.Digits(individual_digits=True)]
    )
    core.post_processor = processors.TemplateProcessing(
        single="$A </s>", special_tokens=[("</s>", vocab["</s>"])]
    )
    core.decoder = decoders.Fuse()  # outputs are ISO dates: digits and '-' with no spaces
    return PreTrainedTokenizerFast(
        tokenizer_object=core,
        bos_token="<s>",
        pad_token="<pad>",
        eos_token="</s>",
        unk_token="<unk>",
        model_max_length=MAX_SOURCE_TOKENS,
    )


def build_model(tokenizer: PreTrainedTokenizerFast, d_model: int = 64) -> BartForConditionalGeneration:
    """A 2 + 2 layer BART with 4 heads per attention, small enough to train on one CPU core."""
    config = BartConfig(
        vocab_size=len(tokenizer),
        d_model=d_model,
        encoder_layers=2,
        decoder_layers=2,
        encoder_attention_heads=4,
        decoder_attention_heads=4,
        encoder_ffn_dim=4 * d_model,
        decoder_ffn_dim=4 * d_model,
        max_position_embeddings=MAX_SOURCE_TOKENS,
        dropout=0.0,  # a plain task with 35k examples; dropout only slowed learning
        pad_token_id=tokenizer.pad_token_id,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        decoder_start_token_id=tokenizer.bos_token_id,
        forced_eos_token_id=None,
    )
    return BartForConditionalGeneration(config)


def encode_batch(tokenizer: PreTrainedTokenizerFast, pairs: list[dates.DatePair]) -> dict[str, torch.Tensor]:
    """Source ids, mask and labels (pad -> -100 so the loss skips it) for a batch."""
    enc = tokenizer([p.source for p in pairs], padding=True, return_tensors="pt")
    labels = tokenizer([p.target for p in pairs], padding=True, return_tensors="pt").input_ids
    labels[labels == tokenizer.pad_token_id] = -100
    return {"input_ids": enc.input_ids, "attention_mask": enc.attention_mask, "labels": labels}


@torch.no_grad()
def predict(
    model: BartForConditionalGeneration,
    tokenizer: PreTrainedTokenizerFast,
    sources: list[str],
    batch_size: int = 250,
) -> list[str]:
    """Greedy outputs for these sources, decoded to text."""
    model.eval()
    out: list[str] = []
    for start in range(0, len(sources), batch_size):
        enc = tokenizer(sources[start : start + batch_size], padding=True, return_tensors="pt")
        ids = model.generate(**enc, max_new_tokens=MAX_TARGET_TOKENS, num_beams=1, do_sample=False)
        out.extend(tokenizer.batch_decode(ids, skip_special_tokens=True))
    return out


def exact_match(
    model: BartForConditionalGeneration,
    tokenizer: PreTrainedTokenizerFast,
    pairs: list[dates.DatePair],
) -> float:
    """Share of pairs whose greedy output equals the ISO target exactly."""
    predictions = predict(model, tokenizer, [p.source for p in pairs])
    return sum(p == pair.target for p, pair in zip(predictions, pairs, strict=True)) / len(pairs)


def train(
    epochs: int, batch_size: int, lr: float, seed: int, log=print
) -> tuple[BartForConditionalGeneration, PreTrainedTokenizerFast, float]:
    """Train from scratch with a fixed seed; returns model, tokenizer, held-out exact match."""
    torch.manual_seed(seed)
    torch.set_num_threads(1)  # the training machine is shared; one core is enough
    train_pairs, heldout_pairs = dates.train_and_heldout(seed)
    tokenizer = build_tokenizer()
    model = build_model(tokenizer)
    steps_per_epoch = len(train_pairs) // batch_size
    total = epochs * steps_per_epoch
    optim = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.01)
    # short warm-up, then linear decay to zero (post-LayerNorm BART dislikes a sudden high lr)
    warmup = max(1, total // 20)
    sched = torch.optim.lr_scheduler.LambdaLR(
        optim, lambda step: min((step + 1) / warmup, max(0.0, (total - step) / (total - warmup)))
    )
    rng = random.Random(seed)
    started = time.perf_counter()
    for epoch in range(epochs):
        model.train()
        order = train_pairs[:]
        rng.shuffle(order)
        loss_sum = 0.0
        for step in range(steps_per_epoch):
            batch = encode_batch(tokenizer, order[step * batch_size : (step + 1) * batch_size])
            loss = model(**batch).loss
            optim.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optim.step()
            sched.step()
            loss_sum += loss.item()
        acc = exact_match(model, tokenizer, heldout_pairs)
        log(
            f"epoch {epoch + 1}/{epochs}: loss {loss_sum / steps_per_epoch:.4f}, "
            f"held-out exact match {acc:.4f}, {time.perf_counter() - started:.0f} s"
        )
    return model, tokenizer, acc


def save(
    model: BartForConditionalGeneration,
    tokenizer: PreTrainedTokenizerFast,
    heldout_accuracy: float,
    out_dir: Path,
) -> None:
    """Write weights (safetensors), tokenizer and txviz.json to out_dir."""
    out_dir.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out_dir, safe_serialization=True)
    tokenizer.save_pretrained(out_dir)
    meta = {
        "kind": "encoder-decoder",
        "description": (
            "Tiny BART (2 encoder + 2 decoder layers, 4 heads, d_model 64) trained by txviz "
            "to turn dates written in English words into ISO dates."
        ),
        "task": (
            "Dates in words, day or month first, year last ('twenty second of november two "
            "thousand twenty six', 'november twenty second two thousand twenty six') -> ISO "
            f"'2026-11-22'. Years {dates.FIRST_YEAR}-{dates.LAST_YEAR}; held-out set: "
            f"{dates.HELDOUT_DATES} calendar days never seen in training."
        ),
        "heldout_exact_match": round(heldout_accuracy, 4),
        "example_source": "twenty second of november two thousand twenty six",
    }
    (out_dir / "txviz.json").write_text(json.dumps(meta, indent=2) + "\n")


def main(argv: list[str] | None = None) -> int:
    """Command line: train and save the date model."""
    parser = argparse.ArgumentParser(prog="python -m txviz train seq2seq", description=__doc__)
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--lr", type=float, default=1.5e-3)
    parser.add_argument("--seed", type=int, default=dates.SEED)
    parser.add_argument("--out", type=Path, default=OUT_DIR)
    args = parser.parse_args(argv)
    model, tokenizer, acc = train(args.epochs, args.batch_size, args.lr, args.seed)
    save(model, tokenizer, acc, args.out)
    print(f"saved to {args.out} (held-out exact match {acc:.4f})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
