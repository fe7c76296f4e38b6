"""Features of your own model: a sparse autoencoder trained here at a place of the model, a page per feature."""

from txviz.app import ui
from txviz.features import views

ui.setup_page(
    "Features",
    "A head or a layer writes many things at once into a few hundred dimensions. A sparse autoencoder, "
    "trained here on this model's own activations at one place, splits them into thousands of features, "
    "each firing on few tokens; every feature has its own page: where it fires most, what it does to the "
    "next token, and how often it fires.",
)

name = ui.model_picker(kinds=("decoder",))
loaded = ui.load_model(name, kinds=("decoder",), dtype="float32")
# The place, the dictionary (stored, or trained once here) and the feature, above the tabs.
shown = views.open_dictionary(loaded, name)

ui.page_tabs(
    {"Feature": views.feature_view, "Feature map": views.map_view}, loaded, shown, key="features_view"
)
