"""The Head Atlas: every head of a model scored over a corpus, with its top contexts, built once and stored."""
