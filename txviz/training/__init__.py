"""Reproducible training of the tiny models: `python -m txviz train NAME` runs NAME.main(argv)."""
