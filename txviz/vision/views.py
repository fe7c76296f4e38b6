"""The Vision Transformer page's tabs: a small ViT's attention on an image, and ViT-Base's first step."""

import numpy as np
import streamlit as st
from PIL import Image

from txviz.app import sessions, teaching, ui, widgets
from txviz.core.threads import torch_threads
from txviz.vision import book, curves, detr, figures, sagan
from txviz.vision import book_figures as book_figs
from txviz.vision import gan_detr_figures as gd_figures
from txviz.vision.ablation import ablate_head
from txviz.vision.ablation_figure import ablation_figure
from txviz.vision.images import load_image
from txviz.vision.notes import outside_note
from txviz.vision.runs import trace_image
from txviz.vision.samples import sample_image, sample_names
from txviz.vision.stats import VIEWS, attention_entropy, mean_attention_distance, overlay_values


@ui.shared_resource(spinner="Reading the learning curves...")
def learning_curves():
    return curves.load()


@ui.shared_resource(spinner="Cutting the photograph into patches...")
def book_embedding(photo: str):
    return book.embed(book.square_photo(photo))


@ui.cached(max_entries=16, spinner="Running the model with the head ablated...")
@ui.heavy
def cached_ablation(loaded, pixels, layer: int, head: int):
    # the image as an array: hashed by its pixels, the same image whichever way it came
    return ablate_head(loaded, Image.fromarray(pixels), layer, head)


def model_attention() -> None:
    """The chosen vision model on a sample or uploaded image: patches, attention, heads, ablation, data."""
    model_name = ui.model_picker(kinds=("vision",), default="digits-vit", key="vision_model")
    loaded = ui.load_model(model_name, kinds=("vision",))
    if loaded.meta.get("heldout_accuracy") is not None:
        st.caption(
            f"{loaded.description} Held-out accuracy {loaded.meta['heldout_accuracy']:.1%}; "
            "it learned light digits on a dark background."
        )
    chosen = choose_image()
    if chosen is None:
        return  # nothing to show until an image is uploaded
    image, known_digit = chosen
    with ui.user_errors():
        result = trace_image(loaded, image)
    patches(loaded, result, image, known_digit)
    attention_on_the_image(result)
    head_statistics(result)
    head_ablation(loaded, result, image)
    data_hunger(loaded)


def choose_image() -> tuple[Image.Image, bool] | None:
    """A sample or an uploaded image, and whether it is a digit whose class is known; None before an upload."""
    sources = ["Sample", "Upload"]
    source = st.radio(
        "Image", sources, index=ui.link_index("image_source", sources), horizontal=True, key="image_source"
    )
    if source == "Sample":
        samples = sample_names()
        sample = st.selectbox("Sample image", samples, index=ui.link_index("sample", samples), key="sample")
        return sample_image(sample), sample.startswith("digit ")
    upload = st.file_uploader(
        "A PNG, JPEG, WebP or GIF image", type=["png", "jpg", "jpeg", "webp", "gif"], key="upload"
    )
    if upload is None:
        st.info("Choose an image file to upload.")
        return None
    with ui.user_errors():
        loaded_image = load_image(ui.checked_upload(upload), sessions.config().max_image_pixels)
    for note in loaded_image.notes:
        st.info(note)
    return loaded_image.image, False


def patches(loaded, result, image, known_digit: bool) -> None:
    """The image cut into patches beside the prediction, and the patches as a sequence."""
    grid = result.grid
    left, right = ui.figure_columns(2)
    with left:
        ui.show_figure(figures.patch_grid_figure(result.image, grid), key="grid")
    with right:
        if result.probabilities is not None:
            ui.show_figure(figures.probability_bars_figure(result.labels, result.probabilities))
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


def attention_on_the_image(result) -> None:
    """One layer's and head's attention (or the rollout) laid over the image."""
    grid, trace = result.grid, result.trace
    st.subheader("Attention on the image")
    controls, picture = st.columns([1, 2])
    with controls:
        view = st.radio("Show", VIEWS, index=ui.link_index("view", VIEWS), key="view")
        layer = widgets.index_picker("Layer", trace.n_layers, "layer", trace.n_layers - 1)
        head_options = ["mean over heads"] + list(range(trace.n_heads))
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


def head_statistics(result) -> None:
    """Each head's attention entropy and mean distance: which heads look locally, which globally."""
    st.subheader("Which heads look locally, which globally")
    entropy = attention_entropy(result.trace.weights)
    distance = mean_attention_distance(result.trace.weights, result.grid)
    ui.show_figure(figures.head_statistics_figure(entropy, distance), key="heads")
    st.caption(
        "Distance is in pixels of the model's input image, between patch centres, weighted by "
        "attention (Dosovitskiy et al. 2021). Rollout (Abnar & Zuidema 2020) averages heads, adds "
        "the skip connection and multiplies layers. Attention shows where information flows, not "
        "why the model decided."
    )


def head_ablation(loaded, result, image) -> None:
    """The class probability before and after one head is zeroed."""
    st.subheader("Ablate a head: the class probability before and after")
    if result.probabilities is None:
        st.info(
            f"{loaded.name} has no classification head: there is no class probability for an ablation to change."
        )
        return
    where_layer, where_head = st.columns(2)
    ablated_layer = widgets.index_picker(
        "Layer of the ablated head", result.trace.n_layers, "ablate_layer", where=where_layer
    )
    ablated_head = widgets.index_picker("Ablated head", result.trace.n_heads, "ablate_head", where=where_head)
    with ui.user_errors():
        ablated = cached_ablation(loaded, np.asarray(image.convert("RGB")), ablated_layer, ablated_head)
    ui.show_figure(ablation_figure(ablated), key="ablation")
    label = ablated.labels[ablated.predicted]
    after = ablated.labels[ablated.predicted_after]
    st.text(  # class names come from the model's config: shown as text, never as markup
        f"Head {ablated_head} of layer {ablated_layer} set to zero: class {label!r} goes from "
        f"{ablated.before[ablated.predicted]:.1%} to {ablated.after[ablated.predicted]:.1%} "
        f"({100 * ablated.change:+.1f} points); "
        + ("the prediction stays." if after == label else f"the model now predicts {after!r}.")
    )
    st.caption(
        "The head's output is zeroed at every token before the output projection, in one forward "
        "beside the intact one. A head whose ablation barely moves the prediction is not needed for this "
        "image, even where its attention map looks meaningful: attention shows where information flows, "
        "ablation what the output needs."
    )


def data_hunger(loaded) -> None:
    """txviz's measured learning curves of a small CNN and this ViT, beside the ViT paper's transfer table."""
    st.subheader("Data hunger: a small CNN against this ViT (probml 15.5.6)")
    shipped_curves = learning_curves()
    curve_col, table_col = st.columns([3, 2])
    with curve_col:
        ui.show_figure(figures.learning_curves_figure(shipped_curves), key="curves")
    with table_col:
        st.markdown(f"**{book.TITLE}**")
        st.dataframe(
            [
                {"pre-trained on": d.name, "classes": d.classes, "images": d.images, "then": d.outcome}
                for d in book.TRANSFER
            ],
            hide_index=True,
            width="stretch",
        )
        st.caption(f"Source: {book.SOURCE}")
        st.caption(book.BOOK_READING)
        st.caption(book.CONVNEXT)
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
        "`python -m txviz train curves`; nothing is trained here. What runs a model on this tab: the prediction, "
        f"the attention views and the head statistics ({loaded.name}, live). The curves are txviz's own measured "
        "runs; the table beside them is the ViT paper's figures."
    )


def book_patches() -> None:
    """ViT-Base's first step on a photograph: cut, flatten, project, prepend [CLASS], add positions."""
    st.markdown(
        "ViT-Base (Dosovitskiy et al. 2021, probml 15.5.6) reads a 224 x 224 px image as 196 words: "
        "cut it into 16 x 16 px patches (a 14 x 14 grid), flatten each patch to 16 · 16 · 3 = 768 "
        "numbers, project them linearly to D, put a learned [CLASS] token in front and add position "
        "embeddings. The encoder reads z0; the classifier reads [CLASS]'s last state."
    )
    st.latex(
        r"z_0 = [\,x_{\text{class}};\; x_p^1 E;\; x_p^2 E;\; \dots;\; x_p^{196} E\,] + E_{pos},"
        r"\quad E \in \mathbb{R}^{768 \times D},\; E_{pos} \in \mathbb{R}^{197 \times D}"
    )
    st.caption(
        "No model runs in this tab. The photograph, the cut into patches and the flattening are exact. "
        "txviz ships no trained ViT-Base, so E and x_class are random (seed 0, at ViT's initial scale: "
        "E ~ N(0, 1/768), x_class ~ N(0, 0.02²)) and E_pos is the sinusoid of the Positional Encoding page "
        "(ViT-Base learns its own): the shapes and steps are the book's, the projected numbers are not "
        "ViT-Base's. The other tab runs a real (small) ViT."
    )
    left, right = st.columns([3, 2])
    with left:
        photo = st.radio(
            "Photograph (scikit-learn's samples)",
            book.PHOTOS,
            index=ui.link_index("book_photo", book.PHOTOS),
            horizontal=True,
            key="book_photo",
        )
    embedded = book_embedding(photo)
    n_patches = embedded.grid.n_patches
    with right:
        chosen = st.slider(
            "Patch to follow (raster order)",
            0,
            n_patches - 1,
            ui.link_value("book_patch", 90, range(n_patches)),
            key="book_patch",
        )
    left, right = st.columns([3, 2])
    with left:
        ui.show_figure(book_figs.cut_figure(embedded, chosen), key="book_cut")
    with right:
        ui.show_figure(book_figs.patch_figure(embedded, chosen), key="book_patch_figure")
    teaching.notice(
        "one patch becomes one token: its 768 pixel values are a vector, and a single matrix E, the same "
        "for every patch, turns it into the model's width D."
    )
    ui.show_figure(book_figs.flatten_figure(embedded, chosen), key="book_flatten")
    ui.show_figure(book_figs.sequence_figure(embedded), key="book_sequence")
    d = embedded.projected.shape[1]
    st.dataframe(
        [
            {"step": "photograph, resized", "shape": "224 x 224 x 3"},
            {"step": "cut into patches", "shape": f"{n_patches} x (16 x 16 x 3)"},
            {"step": "each patch flattened: x_p", "shape": f"{n_patches} x {embedded.pixels.shape[1]}"},
            {"step": "projected: x_p E", "shape": f"{n_patches} x {d}"},
            {"step": "[CLASS] in front", "shape": f"{embedded.grid.n_tokens} x {d}"},
            {"step": "+ E_pos: z0", "shape": " x ".join(map(str, embedded.z0.shape))},
        ],
        hide_index=True,
    )


@ui.shared_resource(spinner="Computing SAGAN's attention over the photograph...")
def sagan_query(photo: str, row: int, col: int):
    with torch_threads(1):
        return sagan.query_view(photo, row, col)


@ui.shared_resource(spinner="Matching the object queries...")
def detr_scene(seed: int, n_digits: int):
    return detr.scene(seed, n_digits)


def sagan_and_detr() -> None:
    """SAGAN's self-attention over a photograph's feature map, and DETR's Hungarian matching of object queries."""
    st.markdown(
        "**SAGAN** (Zhang et al. 2019) puts one self-attention layer among a GAN's convolutions. Three 1x1 "
        "convolutions give f(x) = W_f x, g(x) = W_g x and h(x) = W_h x at every position of the C x H x W "
        "feature map; each position j weighs all N = H · W positions i, not only a 3 x 3 window:"
    )
    st.latex(
        r"\beta_{j,i} = \frac{\exp(s_{ij})}{\sum_{i=1}^{N} \exp(s_{ij})},\; s_{ij} = f(x_i)^\top g(x_j),"
        r"\qquad o_j = W_v \sum_{i=1}^{N} \beta_{j,i}\, h(x_i),\qquad y_j = \gamma\, o_j + x_j"
    )
    left, middle, right = st.columns([2, 2, 2])
    with left:
        photo = widgets.linked_radio("Photograph (scikit-learn's samples)", book.PHOTOS, "sagan_photo")
    with middle:
        row = widgets.linked_slider("Query row", "sagan_row", 10, 1, 0, sagan.SIDE - 1)
    with right:
        col = widgets.linked_slider("Query column", "sagan_col", 20, 1, 0, sagan.SIDE - 1)
    view = sagan_query(photo, row, col)
    ui.show_figure(gd_figures.sagan_figure(view), key="sagan_figure")
    st.caption(
        f"Computed here on the photograph downsampled to {sagan.SIDE} x {sagan.SIDE}: the feature map x is its "
        f"RGB pixels scaled to [-1, 1] (C = 3). No SAGAN is trained in txviz: W_f, W_g, W_h (3 x 3 each, "
        f"SAGAN's C/8 would leave nothing of C = 3) and W_v are random, seed {sagan.SEED}, so the score is a "
        "fixed bilinear form of two colours and the map shows which colours this query favours, wherever they "
        f"are. The query at (row {row}, column {col}) puts {1 - view.outside_window:.1%} of its weight inside "
        f"its 3 x 3 window and {view.outside_window:.1%} beyond, where a 3 x 3 convolution cannot see. "
        "SAGAN starts γ at 0, so the layer begins as the identity (y = x) and learns how much of o to let in."
    )
    st.markdown(
        "**DETR** (Carion et al. 2020) predicts a set: N object queries each give one (class, box), the class "
        'possibly "no object" (∅). Training matches them one to one to the ground-truth objects by the '
        "Hungarian algorithm at the least total cost; the queries left over are told ∅. The matching cost of "
        "query q and object t, with DETR's weights 1, 5 and 2 and boxes (cx, cy, w, h) as fractions of the image:"
    )
    st.latex(
        r"C_{q,t} = -1 \cdot \hat p_q(c_t) + 5\, \lVert b_q - b_t \rVert_1 - 2\, \mathrm{GIoU}(b_q, b_t),"
        r"\qquad \mathrm{GIoU} = \mathrm{IoU} - \frac{|C \setminus (A \cup B)|}{|C|}"
    )
    left, right = st.columns(2)
    with left:
        seed = int(st.number_input("Canvas and noise seed", 0, 999, ui.link_value("detr_seed", 0, range(1000)),
                                   key="detr_seed"))  # fmt: skip
    with right:
        n_digits = st.selectbox("Digits on the canvas", [2, 3, 4], index=ui.link_index("detr_digits", [2, 3, 4], 1),
                                key="detr_digits")  # fmt: skip
    found = detr_scene(seed, n_digits)
    ui.show_figure(gd_figures.detr_figure(found), key="detr_figure")
    st.dataframe(matching_rows(found), hide_index=True)
    st.caption(
        f"Computed here: the canvas is {n_digits} scikit-learn digits placed by the captioning page's canvas "
        f"maker (seed {seed}); the ground truth is each digit's 8 x 8 px box. No DETR is trained in txviz: the "
        f"{detr.QUERIES} predictions are made up from the truth, {n_digits} of them its boxes plus Gaussian noise "
        f"(σ = {detr.BOX_NOISE} of the image) with the right class favoured, the other {detr.QUERIES - n_digits} "
        "distractors with random boxes that favour ∅, in shuffled order and with noisy class probabilities. "
        "scipy's linear_sum_assignment finds the matching, the least total cost over all one-to-one choices "
        f"({found.total_cost():.2f} here); no query predicts two objects, so DETR needs no non-maximum suppression."
    )


def matching_rows(found) -> list[dict]:
    """One row per query: what it predicts, the object it is matched to (or none) and the cost's three terms."""
    costs = found.costs
    terms = {
        "-p(class)": costs.class_term,
        "5 L1": costs.l1_term,
        "-2 GIoU": costs.giou_term,
        "cost": costs.total,
    }
    rows = []
    for query, target in enumerate(found.assigned.tolist()):
        predicted = found.predicted(query)
        row = {
            "query": f"q{query}",
            "predicts": detr.CLASSES[predicted],
            "p": round(float(found.probs[query, predicted]), 2),
            "matched to": gd_figures.object_label(found, target) if target >= 0 else "∅: no object",
        }
        row.update(
            {name: round(float(m[query, target]), 2) if target >= 0 else None for name, m in terms.items()}
        )
        rows.append(row)
    return rows
