"""Tooling that drives the app from outside, for tests and benchmarks: a class of headless followers, the
websocket trace's decoder, page timing. The product never imports it (tests/unit/test_layering.py)."""
