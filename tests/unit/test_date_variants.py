"""date-bart's variants: the decoder reading encoder layer l gets exactly that layer's hidden states, and
the self-critical REINFORCE pieces (reward, advantage, loss, sequence log-probability) checked by hand."""

import pytest
import torch
from tiny_models import tiny_model

from txviz.seq2seq import variants


@pytest.fixture(scope="module")
def bart():
    torch.manual_seed(0)
    model = tiny_model("bart").eval()
    ids = torch.tensor([[0, 5, 9, 12, 7, 2], [0, 8, 4, 2, 1, 1]])
    mask = (ids != 1).long()
    return model, ids, mask


def plain_states(model, ids, mask):
    return model.get_encoder()(input_ids=ids, attention_mask=mask, output_hidden_states=True).hidden_states


@pytest.mark.parametrize("layer", [0, 1, 2])
def test_the_decoder_reads_exactly_that_encoder_layer(bart, layer):
    model, ids, mask = bart
    expected = plain_states(model, ids, mask)[layer]
    seen = []

    def keep(module, args, kwargs):
        seen.append(kwargs["key_value_states"].detach().clone())

    handles = [
        block.encoder_attn.register_forward_pre_hook(keep, with_kwargs=True)
        for block in model.model.decoder.layers
    ]
    try:
        labels = torch.tensor([[0, 4, 6, 2], [0, 3, 2, -100]])
        variants.loss(model, layer, ids, mask, labels)
    finally:
        for handle in handles:
            handle.remove()
    assert len(seen) == len(model.model.decoder.layers)  # every decoder layer's cross-attention
    for states in seen:
        torch.testing.assert_close(states, expected, rtol=0, atol=0)
    if layer != 2:  # an earlier layer is not the last one: the variant really reads something else
        assert not torch.allclose(expected, plain_states(model, ids, mask)[-1])


def test_reading_the_last_layer_is_the_standard_model(bart):
    model, ids, mask = bart
    labels = torch.tensor([[0, 4, 6, 2], [0, 3, 2, -100]])
    standard = model(input_ids=ids, attention_mask=mask, labels=labels).loss
    assert variants.loss(model, 2, ids, mask, labels).item() == pytest.approx(standard.item(), abs=1e-6)
    greedy = model.generate(
        input_ids=ids, attention_mask=mask, max_new_tokens=6, do_sample=False, num_beams=1
    )
    assert torch.equal(variants.decode(model, 2, ids, mask)[:, : greedy.shape[1]], greedy)


def test_reward_is_exact_match_with_optional_character_credit():
    assert variants.reward("2026-11-22", "2026-11-22") == 1.0
    assert variants.reward("2026-11-21", "2026-11-22") == 0.0
    # 9 of 10 characters right in place, half the reward from them
    assert variants.reward("2026-11-21", "2026-11-22", partial=0.5) == pytest.approx(0.5 * 9 / 10)
    assert variants.reward("2026-11-22", "2026-11-22", partial=0.5) == pytest.approx(1.0)


def test_self_critical_advantage_on_a_tiny_batch_by_hand():
    targets = ["2026-11-22", "2026-11-22", "1999-01-01", "1950-02-03"]
    sampled = ["2026-11-22", "2026-11-21", "1999-01-01", "1950-02-04"]
    greedy = ["2026-11-21", "2026-11-22", "1999-01-01", "1950-02-05"]
    r_s = torch.tensor([variants.reward(s, t) for s, t in zip(sampled, targets, strict=True)])
    r_g = torch.tensor([variants.reward(g, t) for g, t in zip(greedy, targets, strict=True)])
    # sample right where greedy was wrong: +1; the reverse: -1; both right or both wrong: 0
    assert variants.self_critical_advantage(r_s, r_g).tolist() == [1.0, -1.0, 0.0, 0.0]
    log_probs = torch.tensor([-1.0, -2.0, -0.5, -3.0], requires_grad=True)
    loss = variants.reinforce_loss(log_probs, variants.self_critical_advantage(r_s, r_g))
    assert loss.item() == pytest.approx(-(1 * -1.0 + -1 * -2.0) / 4)
    loss.backward()
    assert log_probs.grad.tolist() == [-0.25, 0.25, 0.0, 0.0]  # descent raises row 0, lowers row 1


def test_sequence_log_probability_stops_at_the_first_end_token(bart):
    model, ids, mask = bart
    eos, pad = 2, 1
    sequences = torch.tensor([[0, 5, 6, eos, pad, pad], [0, 7, 8, 9, 10, 11]])
    got = variants.sequence_log_probs(model, 1, ids, mask, sequences, eos)
    states = plain_states(model, ids, mask)[1]
    with torch.no_grad():
        logits = model(
            encoder_outputs=(states,), attention_mask=mask, decoder_input_ids=sequences[:, :-1]
        ).logits
    lp = logits.log_softmax(-1)
    row0 = lp[0, 0, 5] + lp[0, 1, 6] + lp[0, 2, eos]  # the pads after </s> were never sampled
    row1 = sum(lp[1, t, sequences[1, t + 1]] for t in range(5))
    torch.testing.assert_close(got.detach(), torch.stack([row0, row1]), rtol=1e-5, atol=1e-5)
    assert got.requires_grad
