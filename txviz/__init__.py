"""txviz: see inside transformers."""
