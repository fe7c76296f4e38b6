"""Benchmarks: `python -m txviz bench NAME` runs NAME.main(argv)."""
