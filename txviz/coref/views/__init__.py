"""The Coreference page's views: the pair chosen (pair) and what the heads make of it (heads)."""
