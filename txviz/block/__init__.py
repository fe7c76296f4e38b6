"""The whole transformer block on real models: data flow, block as code, residual stream, norms, lens."""
