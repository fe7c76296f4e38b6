"""The attribution methods by name, kept free of heavy imports so the command line starts fast."""

METHODS = {"gradient": "gradient × input", "ig": "integrated gradients", "ablation": "feature ablation"}
IG_STEPS = 16  # the page's default: ~18 forwards and backwards; the CLI and bench may ask for more
# Tokens per batched pass of integrated gradients' path points and ablation's perturbed copies: on a
# CPU a batch of 8 x 64 tokens costs far less than 8 passes (SmolLM2: IG with 16 steps at 64 tokens
# is 21x a forward in batches of 8, 17x in one batch of 16), while 2,048 tokens of SmolLM2's
# activations with their graph stay near 1 GB.
BATCH_TOKENS = 2048
