"""The Transformer Block page's tabs, one module per group of tabs; common.py holds its controls."""
