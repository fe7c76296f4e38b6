"""Running the pixel model: likelihoods, batch sampling, completion, and live steps with attention."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import torch

from txviz.core.capture import PLAIN, CaptureSettings
from txviz.core.errors import require_kind
from txviz.core.loaded import LoadedModel
from txviz.core.running import Run, run
from txviz.generation.sampling import SamplingSettings, apply_temperature, make_generator, top_k_filter
from txviz.imagegpt.data import N_LEVELS, N_PIXELS, SIDE, ImageInputError, first_token
from txviz.softhard.toy import single_thread

# The model is tiny: on a busy CPU a second torch thread mostly spins waiting (measured 30x slower).

HALF = N_PIXELS // 2  # completion keeps the top four rows


def make_config(n_embd: int = 64, n_layer: int = 4, n_head: int = 4):
    """A GPT-2 over 28 tokens (17 grey levels, 10 digit classes, 'any digit') and 65 positions."""
    from transformers import GPT2Config

    from txviz.imagegpt.data import NO_CLASS, SEQ_LEN, VOCAB

    return GPT2Config(
        vocab_size=VOCAB,
        n_positions=SEQ_LEN,
        n_embd=n_embd,
        n_layer=n_layer,
        n_head=n_head,
        n_inner=4 * n_embd,
        resid_pdrop=0.1,
        embd_pdrop=0.1,
        attn_pdrop=0.0,
        bos_token_id=NO_CLASS,
        eos_token_id=NO_CLASS,
        architectures=["GPT2LMHeadModel"],
    )


def pixel_logits(model, tokens: torch.Tensor, settings: CaptureSettings = PLAIN) -> tuple[torch.Tensor, Run]:
    """(B, L) tokens -> (B, L, 17): the next pixel's logits over grey levels after each position, and the run.

    Autograd stays as the caller has it: training differentiates the loss through this.
    """
    result = run(model, settings, ("logits",), grad=True, input_ids=tokens)
    return result.logits[..., :N_LEVELS].float(), result


def as_loaded(model) -> LoadedModel:
    """A pixel model being trained, as the LoadedModel the functions below take."""
    return LoadedModel("imagegpt", "image-decoder", model, None, None, "cpu")


def _check(loaded: LoadedModel) -> None:
    require_kind(loaded, ("image-decoder",), "draw digits pixel by pixel")


def pixel_loss(model, tokens: torch.Tensor) -> torch.Tensor:
    """Mean cross-entropy in nats of pixels 1..64 given everything before them."""
    logits, _ = pixel_logits(model, tokens[:, :-1])
    return torch.nn.functional.cross_entropy(logits.reshape(-1, N_LEVELS), tokens[:, 1:].reshape(-1))


@torch.no_grad()
def bits_per_pixel(loaded: LoadedModel, tokens: torch.Tensor, batch: int = 256) -> float:
    """Held-out negative log-likelihood in bits per pixel, over all given sequences."""
    _check(loaded)
    model, total = loaded.model, 0.0
    with single_thread():
        for part in tokens.split(batch):
            total += float(pixel_loss(model, part)) * len(part)
    return total / len(tokens) / float(np.log(2))


def image_bits(loaded: LoadedModel, image: np.ndarray, digit: int | None = None) -> float:
    """Bits per pixel the model gives one (8, 8) image of grey levels."""
    from txviz.imagegpt.data import sequences

    labels = None if digit is None else np.array([digit])
    return bits_per_pixel(loaded, torch.as_tensor(sequences(np.asarray(image)[None], labels)))


def _shape(logits: torch.Tensor, settings: SamplingSettings) -> torch.Tensor:
    """The generation page's temperature and top-k applied to a batch of logits."""
    if settings.greedy:
        return torch.where(logits == logits.max(-1, keepdim=True).values, 0.0, float("-inf"))
    return top_k_filter(apply_temperature(logits, settings.temperature), settings.top_k)


@torch.no_grad()
def sample(
    loaded: LoadedModel,
    digits: list[int | None],
    settings: SamplingSettings,
    prefix: np.ndarray | None = None,
    generator: torch.Generator | None = None,
) -> np.ndarray:
    """Draw len(digits) images (N, 8, 8); a prefix (N, P) of grey levels is kept as given."""
    _check(loaded)
    settings.validate()
    generator = generator or make_generator(settings.seed)
    heads = torch.tensor([first_token(d) for d in digits])[:, None]
    given = torch.as_tensor(np.zeros((len(digits), 0)) if prefix is None else prefix, dtype=torch.long)
    tokens = torch.cat([heads, given], dim=1)
    while tokens.shape[1] < 1 + N_PIXELS:
        with single_thread():
            logits = _shape(pixel_logits(loaded.model, tokens)[0][:, -1], settings)
        probs = torch.softmax(logits, dim=-1)
        tokens = torch.cat([tokens, torch.multinomial(probs, 1, generator=generator)], dim=1)
    return tokens[:, 1:].reshape(-1, SIDE, SIDE).numpy()


def complete(
    loaded: LoadedModel, image: np.ndarray, digit: int | None, n: int, settings: SamplingSettings
) -> np.ndarray:
    """n completions (n, 8, 8) of the image's lower half, its top half (four rows) kept."""
    top = np.asarray(image).reshape(1, N_PIXELS)[:, :HALF]
    if top.min() < 0 or top.max() >= N_LEVELS:
        raise ImageInputError("The image must hold grey levels 0..16.")
    return sample(loaded, [digit] * n, settings, np.repeat(top, n, axis=0))


@dataclass(frozen=True, eq=False)
class PixelStep:
    """One pixel drawn: where, which grey level, from which distribution, and the attention."""

    index: int  # 0..63 in raster order
    level: int
    before: np.ndarray  # (17,) the model's distribution
    after: np.ndarray  # (17,) after temperature / top-k: what was sampled from
    attention: (
        np.ndarray
    )  # (layer, head, 1 + index): the new pixel's query over the class token and earlier pixels
    pixels: np.ndarray  # (8, 8) the image so far, -1 where not drawn yet


@torch.no_grad()
def draw(
    loaded: LoadedModel, digit: int | None, settings: SamplingSettings, prefix: np.ndarray | None = None
) -> Iterator[PixelStep]:
    """Draw the image pixel by pixel, recording every head's attention for each new pixel."""
    _check(loaded)
    settings.validate()
    generator = make_generator(settings.seed)
    tokens = [first_token(digit)] + ([] if prefix is None else [int(v) for v in np.ravel(prefix)])
    pixels = np.full(N_PIXELS, -1)
    pixels[: len(tokens) - 1] = tokens[1:]
    record = CaptureSettings(record={"weights"}, newest_query_only=True)
    while len(tokens) < 1 + N_PIXELS:
        with single_thread():
            logits, recorder = pixel_logits(loaded.model, torch.tensor([tokens]), record)
        logits = logits[0, -1]
        shaped = _shape(logits[None], settings)[0]
        after = torch.softmax(shaped, dim=-1)
        level = int(torch.multinomial(after, 1, generator=generator))
        index = len(tokens) - 1
        tokens.append(level)
        pixels[index] = level
        yield PixelStep(
            index,
            level,
            torch.softmax(logits, dim=-1).numpy(),
            after.numpy(),
            recorder.stack("weights")[:, :, 0, :],
            pixels.reshape(SIDE, SIDE).copy(),
        )
