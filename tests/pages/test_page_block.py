"""The Transformer Block page under AppTest: every widget moved, bad input, no exception."""

import pytest
from conftest import ROOT, assert_clean
from streamlit.testing.v1 import AppTest

PAGE = str(ROOT / "pages/11_Transformer_Block.py")


@pytest.fixture
def app():
    return AppTest.from_file(PAGE, default_timeout=180).run()


def test_every_widget_moves_on_minilm(app):
    assert_clean(app)
    assert len(app.get("plotly_chart")) == 2  # the diagram and the chosen stage: nothing else is run
    for stage in ("ids", "embedding", "positions", "stream", "blocks", "output"):
        app.selectbox(key="block_stage").set_value(stage).run()
        assert_clean(app)
    app.slider(key="block_layer").set_value(5).run()
    app.session_state["block_view"] = "One block"
    app.run()
    assert_clean(app)
    assert "E = LayerNorm(FeedForward(Z) + Z)" in app.code[0].value
    for step in ("Q", "A", "mean of S", "W_o", "H", "E"):
        app.selectbox(key="block_step").set_value(step).run()
        assert_clean(app)
    app.selectbox(key="block_step").set_value("A").run()
    app.slider(key="block_head").set_value(11).run()
    assert_clean(app)
    app.session_state["block_view"] = "Residual stream"
    app.run()
    for what in ("what attention added", "what the FFN added"):
        app.radio(key="block_residual").set_value(what).run()
        assert_clean(app)
    app.session_state["block_view"] = "LayerNorm vs BatchNorm"
    app.run()
    assert_clean(app)
    assert any("**BatchNorm** normalises each feature" in m.value for m in app.markdown)
    assert len(app.get("plotly_chart")) == 2  # statistics and the dependence bars
    app.selectbox(key="block_other").set_value(3).run()
    app.text_input(key="block_swap").set_value("Something else entirely.").run()
    app.slider(key="block_padding").set_value(0).run()
    app.toggle(key="block_mask").set_value(True).run()
    assert_clean(app)
    app.text_area(key="block_sentences").set_value("only one").run()
    assert not app.exception and "at least two sentences" in app.error[0].value


def test_an_encoder_asked_for_a_lens_gets_a_note_and_a_way_on(app):
    app.session_state["block_view"] = "Logit lens"
    app.run()
    assert_clean(app)  # the default model is an encoder: a note, not a red error
    assert any("encoder" in i.value and "smollm2" in i.value for i in app.info)
    app.button(key="block_lens_switch").click().run()
    assert_clean(app)
    assert app.selectbox(key="model").value == "smollm2"
    assert app.selectbox(key="block_lens_position").value is not None  # the lens is drawn


def test_smollm2_lens_and_pre_norm_block(app):
    app.selectbox(key="model").set_value("smollm2").run()
    assert_clean(app)
    for stage in ("positions", "blocks", "final_norm", "output"):  # rotary angles, final norm, logits
        app.selectbox(key="block_stage").set_value(stage).run()
        assert_clean(app)
    app.session_state["block_view"] = "Logit lens"
    app.run()
    assert_clean(app)
    app.selectbox(key="block_lens_position").set_value(0).run()
    assert_clean(app)
    app.session_state["block_view"] = "One block"
    app.run()
    assert_clean(app)
    assert "Z = X + MultiHeadAttn(Norm(X))" in app.code[0].value
    assert any("pre-norm" in c.value for c in app.caption)
    app.slider(key="block_head").set_value(8).run()
    for step in ("K", "V", "A", "rms of Z"):  # GQA: query head 8 reads KV head 2
        app.selectbox(key="block_step").set_value(step).run()
        assert_clean(app)


def test_date_bart_decoder_stack(app):
    app.selectbox(key="model").set_value("date-bart").run()
    app.text_area(key="text").set_value("the fifth of may nineteen ninety").run()
    assert_clean(app)
    app.selectbox(key="block_stack").set_value("decoder").run()
    for stage in ("embedding", "positions", "output"):
        app.selectbox(key="block_stage").set_value(stage).run()
        assert_clean(app)
    app.session_state["block_view"] = "One block"
    app.run()
    assert_clean(app)
    app.selectbox(key="block_step").set_value("A (cross)").run()
    assert_clean(app)
    app.session_state["block_view"] = "Residual stream"
    app.run()
    app.radio(key="block_residual").set_value("what cross-attention added").run()
    assert_clean(app)
    app.session_state["block_view"] = "LayerNorm vs BatchNorm"
    app.run()
    assert not app.exception and "encoder or a decoder" in app.error[0].value


@pytest.mark.parametrize("text, expected", [("   ", "empty"), ("word " * 10_000, "only the first 256")])
def test_bad_text_gives_a_message(app, text, expected):
    app.text_area(key="text").set_value(text).run()
    assert not app.exception
    messages = [m.value for m in (*app.warning, *app.error)]
    assert any(expected in m for m in messages), messages


def test_script_text_is_shown_as_text(app):
    app.text_area(key="text").set_value("<b>bold</b> <script>alert(1)</script>").run()
    assert_clean(app)


def test_unknown_block_layout_gets_a_message(app, tmp_path, minilm):
    import transformers as tf

    config = tf.DistilBertConfig(
        dim=32, n_layers=1, n_heads=2, hidden_dim=64, vocab_size=minilm.tokenizer.vocab_size
    )
    tf.DistilBertModel(config).save_pretrained(tmp_path)
    minilm.tokenizer.save_pretrained(tmp_path)
    app.selectbox(key="model").set_value("Other: a Hugging Face id or local folder...").run()
    app.text_input(key="model_custom").set_value(str(tmp_path)).run()
    assert not app.exception
    assert "cannot write out the block of a 'distilbert' model" in app.error[0].value


def test_mixture_of_experts_tab(app):
    app.session_state["block_view"] = "Mixture of experts"
    app.run()
    assert_clean(app)
    table = app.dataframe[0].value
    assert list(table["model"])[1] == "mixture of experts (top-1)"
    mse = list(table["held-out MSE"])
    assert mse[1] < mse[0] and mse[1] < mse[3]  # below the same-compute dense FFN and the mean
    assert len(app.get("plotly_chart")) == 2


def test_conformer_tab_shows_the_convolution_window():
    app = AppTest.from_file(PAGE, default_timeout=180)
    app.session_state["block_view"] = "Conformer"
    app.run()
    assert_clean(app)
    assert app.metric[0].value == "35 to 65" and app.metric[1].value == "0 to 99"
    app.select_slider(key="conformer_k").set_value(7).run()
    app.slider(key="conformer_t").set_value(2).run()
    assert_clean(app)
    assert app.metric[0].value == "0 to 5"
    assert "class ConformerBlock" in app.main.code[-1].value


def test_conformer_tab_counts_truncated_attention_against_full():
    app = AppTest.from_file(PAGE, default_timeout=180)
    app.session_state["block_view"] = "Conformer"
    app.run()
    assert_clean(app)
    minute = {m.label: m.value for m in app.metric}
    assert minute["One minute, full: pairs"] == "36,000,000"
    assert minute["One minute, truncated: pairs"] == f"{6000 * 73 - 64 * 65 // 2 - 8 * 9 // 2:,}"
    app.slider(key="truncated_left").set_value(0).run()
    app.slider(key="truncated_right").set_value(0).run()
    assert_clean(app)
    minute = {m.label: m.value for m in app.metric}
    assert minute["One minute, truncated: pairs"] == "6,000" and minute["Fewer by"] == "6,000×"


def test_the_original_transformer_tab_sets_the_three_models_side_by_side():
    app = AppTest.from_file(PAGE, default_timeout=180)
    app.session_state["block_view"] = "Transformer base (2017)"
    app.run()
    assert_clean(app)
    table = app.dataframe[0].value.set_index("")
    assert list(table.columns) == ["Transformer base (2017)", "MiniLM (all-MiniLM-L6-v2)", "SmolLM2-135M"]
    assert table.loc["heads"].tolist() == ["8 of 64", "12 of 32", "9 of 64 (3 key/value heads)"]
    formula, counted = table.loc["parameters (formula)"], table.loc["parameters (counted)"]
    assert formula.tolist() == counted.tolist() == ["63,082,496", "22,713,216", "134,515,008"]
    assert any("torch.nn.Transformer's encoder layer holds 3,152,384" in c.value for c in app.caption)


@pytest.mark.parametrize(
    ("family", "line", "note"),
    [
        ("Gemma 2", "Z = X + PostNorm(MultiHeadAttn(Norm(X)))", "soft-capped"),
        ("GPT-NeoX", "E = X + MultiHeadAttn(Norm₁(X)) + FeedForward(Norm₂(X))", "side by side"),
        ("OPT", "Z = X + MultiHeadAttn(Norm(X))", None),
        ("Gemma 3 (text)", "E = Z + PostNorm(FeedForward(Norm(Z)))", "own before the dot product"),
        ("Mixtral", "E = Z + FeedForward(Norm(Z))", "mixture of 4 experts"),
    ],
)
def test_modern_decoders_data_flow_and_block_as_code(app, tmp_path, family, line, note):
    """A user's folder of each variant: the data flow places its positions, the block is written out
    with its variant's norms and options, and equals the model's own output."""
    from txviz.families import zoo

    folder = zoo.save(zoo.BY_NAME[family], tmp_path / "model")
    app.selectbox(key="model").set_value("Other: a Hugging Face id or local folder...").run()
    app.text_input(key="model_custom").set_value(str(folder)).run()
    app.text_area(key="text").set_value("the cat sat on the mat and the dog ran to the house").run()
    assert_clean(app)
    for stage in ("embedding", "positions", "blocks", "final_norm", "output"):
        app.selectbox(key="block_stage").set_value(stage).run()
        assert_clean(app)
    app.session_state["block_view"] = "One block"
    app.run()
    assert_clean(app)
    assert line in app.main.code[0].value
    if note:
        assert any(note in c.value for c in app.caption)
    difference = next(m for m in app.metric if m.label.startswith("max |E"))
    assert float(difference.value) <= 1e-5
    ffn = ("router", "expert weights") if family == "Mixtral" else ("H",)
    for step in ("Q", "A", *ffn, "E"):
        app.selectbox(key="block_step").set_value(step).run()
        assert_clean(app)
