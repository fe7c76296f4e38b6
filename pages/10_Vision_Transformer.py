"""Vision transformer: an image cut into patches, and where each head of the model looks."""

import numpy as np
import streamlit as st
from PIL import Image

from txviz.app import serving, teaching, ui, widgets
from txviz.vision import curves, figures
from txviz.vision.ablation import ablate_head
from txviz.vision.ablation_figure import ablation_figure
from txviz.vision.images import load_image
from txviz.vision.notes import outside_note
from txviz.vision.runs import trace_image
from txviz.vision.samples import sample_image, sample_names
from txviz.vision.stats import VIEWS, attention_entropy, mean_attention_distance, overlay_values

ui.setup_page(
    "Vision Transformer",
    "A vision transformer cuts the image into square patches, reads them as a sequence with a "
    "[CLS] token in front, and classifies from what [CLS] gathers. Pick a sample or upload a "
    "picture, then see where each head of each layer looks.",
    share=(
        "vision_model",
        "image_source",
        "sample",
        "view",
        "layer",
        "head",
        "patch",
        "opacity",
        "threshold",
        "ablate_layer",
        "ablate_head",
    ),
)

model_name = ui.model_picker(kinds=("vision",), default="digits-vit", key="vision_model")
loaded = ui.load_model(model_name, kinds=("vision",))
if loaded.meta.get("heldout_accuracy") is not None:
    st.caption(
        f"{loaded.description} Held-out accuracy {loaded.meta['heldout_accuracy']:.1%}; "
        "it learned light digits on a dark background."
    )

sources = ["Sample", "Upload"]
source = st.radio(
    "Image", sources, index=ui.link_index("image_source", sources), horizontal=True, key="image_source"
)
if source == "Sample":
    samples = sample_names()
    sample = st.selectbox("Sample image", samples, index=ui.link_index("sample", samples), key="sample")
    image = sample_image(sample)
else:
    upload = st.file_uploader(
        "A PNG, JPEG, WebP or GIF image", type=["png", "jpg", "jpeg", "webp", "gif"], key="upload"
    )
    if upload is None:
        st.info("Choose an image file to upload.")
        st.stop()
    with ui.user_errors():
        loaded_image = load_image(ui.checked_upload(upload), serving.config().max_image_pixels)
    for note in loaded_image.notes:
        st.info(note)
    image = loaded_image.image

with ui.user_errors():
    result = trace_image(loaded, image)
grid = result.grid

left, right = st.columns(2)
with left:
    ui.show_figure(figures.patch_grid_figure(result.image, grid), key="grid")
with right:
    if result.probabilities is not None:
        ui.show_figure(figures.probability_bars_figure(result.labels, result.probabilities))
        known_digit = source == "Sample" and sample.startswith("digit ")
        if note := outside_note(loaded.name, loaded.meta, image, known_digit):
            st.info(note)
    else:
        st.info(f"{loaded.name} has no classification head: there is no class to predict.")
ui.show_figure(figures.patch_sequence_figure(result.image, grid), key="sequence")
teaching.notice(
    "the transformer reads the image as this sequence of patch tokens, row by row, like words: which patches "
    "are neighbours it knows only from the position embeddings."
)
st.caption(
    "ViT-Base (Dosovitskiy et al. 2021) cuts a 224 px image into 16 x 16 px patches: a 14 x 14 grid, 196 "
    f"patches. The model here uses its own patch size: its {grid.image_height} x {grid.image_width} px input "
    f"in {grid.patch_height} x {grid.patch_width} px patches, {grid.rows} x {grid.cols} = {grid.n_patches}."
)

st.subheader("Attention on the image")
controls, picture = st.columns([1, 2])
with controls:
    view = st.radio("Show", VIEWS, index=ui.link_index("view", VIEWS), key="view")
    layer = widgets.index_picker("Layer", result.trace.n_layers, "layer", result.trace.n_layers - 1)
    head_options = ["mean over heads"] + list(range(result.trace.n_heads))
    head_choice = st.selectbox(
        "Head",
        head_options,
        index=ui.link_index("head", head_options),
        key="head",
        disabled=view == VIEWS[2],
    )
    patch = st.slider(
        "Patch (raster order)",
        0,
        grid.n_patches - 1,
        ui.link_value("patch", grid.n_patches // 2, range(grid.n_patches)),
        key="patch",
        disabled=view != VIEWS[1],
    )
    opacity = st.slider(
        "Opacity", 0.0, 1.0, ui.link_value("opacity", 0.6, lambda v: 0 <= v <= 1), 0.05, key="opacity"
    )
    threshold = st.slider(
        "Hide patches below this share of the maximum",
        0.0,
        1.0,
        ui.link_value("threshold", 0.0, lambda v: 0 <= v <= 1),
        0.05,
        key="threshold",
    )

head = None if head_choice == "mean over heads" else int(head_choice)
values, title = overlay_values(result, view, layer, head, patch)
marked = patch if view == VIEWS[1] else None
with picture:
    ui.show_figure(
        figures.attention_overlay_figure(
            result.image, values, grid, opacity, threshold, title, marked, ui.presenting()
        ),
        key="overlay",
    )

st.subheader("Which heads look locally, which globally")
entropy = attention_entropy(result.trace.weights)
distance = mean_attention_distance(result.trace.weights, grid)
ui.show_figure(figures.head_statistics_figure(entropy, distance), key="heads")
st.caption(
    "Distance is in pixels of the model's input image, between patch centres, weighted by "
    "attention (Dosovitskiy et al. 2021). Rollout (Abnar & Zuidema 2020) averages heads, adds "
    "the skip connection and multiplies layers. Attention shows where information flows, not "
    "why the model decided."
)


@ui.cached(max_entries=16, spinner="Running the model with the head ablated...")
def cached_ablation(loaded, pixels, layer: int, head: int):
    # the image as an array: hashed by its pixels, the same image whichever way it came
    return ablate_head(loaded, Image.fromarray(pixels), layer, head)


st.subheader("Ablate a head: the class probability before and after")
if result.probabilities is None:
    st.info(
        f"{loaded.name} has no classification head: there is no class probability for an ablation to change."
    )
else:
    where_layer, where_head = st.columns(2)
    ablated_layer = widgets.index_picker("Layer of the ablated head", result.trace.n_layers, "ablate_layer",
                                         where=where_layer)  # fmt: skip
    ablated_head = widgets.index_picker("Ablated head", result.trace.n_heads, "ablate_head", where=where_head)
    with ui.user_errors():
        ablation = cached_ablation(loaded, np.asarray(image.convert("RGB")), ablated_layer, ablated_head)
    ui.show_figure(ablation_figure(ablation), key="ablation")
    label = ablation.labels[ablation.predicted]
    after = ablation.labels[ablation.predicted_after]
    st.text(  # class names come from the model's config: shown as text, never as markup
        f"Head {ablated_head} of layer {ablated_layer} set to zero: class {label!r} goes from "
        f"{ablation.before[ablation.predicted]:.1%} to {ablation.after[ablation.predicted]:.1%} "
        f"({100 * ablation.change:+.1f} points); "
        + ("the prediction stays." if after == label else f"the model now predicts {after!r}.")
    )
    st.caption(
        "The head's output is zeroed at every token before the output projection, in one forward "
        "beside the intact one. A head whose ablation barely moves the prediction is not needed for this "
        "image, even where its attention map looks meaningful: attention shows where information flows, "
        "ablation what the output needs."
    )


@ui.shared_resource(spinner="Reading the learning curves...")
def learning_curves():
    return curves.load()


st.subheader("Data hunger: a small CNN against this ViT (probml 15.5.6)")
shipped_curves = learning_curves()
ui.show_figure(figures.learning_curves_figure(shipped_curves), key="curves")
st.markdown(curves.reading(shipped_curves))
st.caption(
    f"Both models read the same 24 px images and are trained with the same recipe on the first N training "
    f"digits (about N/10 of each), 30 passes over the subset and at least 400 steps "
    f"({', '.join(map(str, shipped_curves.steps[curves.MODELS[1]]))} steps), then scored on the same "
    f"{shipped_curves.heldout_images} held-out digits. The CNN has {shipped_curves.weights[curves.MODELS[0]]:,} "
    f"weights, the ViT {shipped_curves.weights[curves.MODELS[1]]:,}. A convolution looks at neighbouring "
    "pixels with the same weights everywhere: locality and translation equivariance come built in. The ViT "
    "must learn from the data that neighbouring patches matter, so it is behind with few images and closes "
    "the gap as they grow; the book's crossing happens at millions of images (ImageNet-21k, JFT-300M), far "
    "beyond 1,437 digits. Honest limits: one seed per point (a few points of noise), and these 8x8 digits "
    "are easy enough that a logistic regression on the raw pixels matches both networks. Measured by "
    "`python -m txviz train curves`; nothing is trained here."
)
