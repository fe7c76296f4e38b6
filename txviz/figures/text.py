"""Text made safe for plotly, which reads a few HTML-like tags (<b>, <a href>, <br>) in labels."""

_ESCAPES = str.maketrans({"&": "&amp;", "<": "&lt;", ">": "&gt;"})


def plain(text: str) -> str:
    """User or token text shown literally in a plotly label, never as markup."""
    return str(text).translate(_ESCAPES)


def plain_all(texts) -> list[str]:
    return [plain(t) for t in texts]


def in_template(text: str) -> str:
    """User text written into a hovertemplate: escaped, and its % unable to start a %{variable}."""
    return plain(text).replace("%", "&#37;")
