"""Tiny random models of many Hugging Face families, and what each txviz feature does with them."""
