"""Features of a model's own activations: sparse autoencoders trained at a place, stored, measured."""
