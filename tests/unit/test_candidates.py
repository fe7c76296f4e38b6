"""One candidates record for generation, decoding and masking, checked against topk by hand."""

from types import SimpleNamespace

import numpy as np
import torch

from txviz.core.candidates import OneHot, top_candidates

TOKENIZER = SimpleNamespace(
    convert_ids_to_tokens=lambda ids: [f"t{i}" for i in ids],
    convert_tokens_to_string=lambda pieces: "".join(pieces),
)
PROBS = torch.tensor([0.05, 0.4, 0.1, 0.3, 0.15])


def test_top_k_in_order_with_their_probabilities():
    c = top_candidates(TOKENIZER, PROBS, 3)
    assert c.ids == (1, 3, 4) and c.tokens == ("t1", "t3", "t4") and len(c) == 3
    np.testing.assert_allclose(c.model_probs, [0.4, 0.3, 0.15])
    assert c.pairs()[0] == ("t1", c.model_probs[0]) and c.stages == ("model",)
    assert c.chosen is None and c.chosen_rank is None


def test_chosen_token_is_added_when_outside_the_top_or_only_marked():
    added = top_candidates(TOKENIZER, PROBS, 2, chosen=0)
    assert added.ids == (1, 3, 0) and added.chosen_rank == 2
    marked = top_candidates(TOKENIZER, PROBS, 2, chosen=0, add_chosen=False)
    assert marked.ids == (1, 3) and marked.chosen_rank is None
    assert top_candidates(TOKENIZER, PROBS, 2, chosen=3).chosen_rank == 1


def test_every_stage_is_read_at_the_model_stage_candidates():
    one_hot = torch.zeros(5).index_fill(0, torch.tensor([3]), 1.0)
    c = top_candidates(TOKENIZER, (("model", PROBS), ("greedy", one_hot)), 2, chosen=1)
    assert c.stages == ("model", "greedy") and c.probs.shape == (2, 2) and c.probs.dtype == np.float32
    assert c.probs[1].tolist() == [0.0, 1.0]  # candidates ordered by the model, not by the stage


def _old_top_candidates(stages, k, chosen):
    """top_candidates' numbers as they were computed before OneHot: a torch index per stage."""
    first = stages[0][1].float().reshape(-1)
    top = first.topk(min(k, first.numel())).indices.tolist()
    if chosen is not None and chosen not in top:
        top.append(chosen)
    probs = torch.stack([p.float().reshape(-1)[torch.tensor(top)] for _, p in stages])
    return top, probs.numpy().astype(np.float32)


def test_one_hot_stage_reads_as_the_vector_did_on_random_logits():
    generator = torch.Generator().manual_seed(0)
    tokenizer = SimpleNamespace(convert_ids_to_tokens=lambda ids: [f"t{i}" for i in ids])
    for trial in range(20):
        probs = torch.softmax(torch.randn(5000, generator=generator) * 4, dim=-1)
        shaped = torch.softmax(torch.randn(5000, generator=generator), dim=-1)
        chosen = int(probs.argmax()) if trial % 2 else int(torch.randint(5000, (1,), generator=generator))
        vector = OneHot(chosen).tensor(probs)
        assert vector.sum() == 1.0 and vector[chosen] == 1.0
        top, old = _old_top_candidates((("model", probs), ("t", shaped), ("greedy", vector)), 10, chosen)
        new = top_candidates(
            tokenizer, (("model", probs), ("t", shaped), ("greedy", OneHot(chosen))), 10, chosen
        )
        assert list(new.ids) == top and new.probs.dtype == old.dtype
        np.testing.assert_array_equal(new.probs, old)
