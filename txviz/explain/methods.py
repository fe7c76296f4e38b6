"""The attribution methods by name, kept free of heavy imports so the command line starts fast."""

METHODS = {"gradient": "gradient × input", "ig": "integrated gradients", "ablation": "feature ablation"}
IG_STEPS = 16  # the page's default: ~18 forwards and backwards; the CLI and bench may ask for more
ABLATION_BATCH = 16  # perturbed copies per forward
