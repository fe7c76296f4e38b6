"""Text made safe for plotly, which reads a few HTML-like tags (<b>, <a href>, <br>) in labels."""

import html


def plain(text: str) -> str:
    """User or token text shown literally in a plotly label, never as markup.

    Only &, < and > are escaped (quote=False): plotly's label markup needs a tag or an entity to act,
    and quotes stay readable as they are. Newlines pass through unchanged: plotly breaks a line only
    at <br>, which this turns into text."""
    return html.escape(str(text), quote=False)


def plain_all(texts) -> list[str]:
    return [plain(t) for t in texts]


def in_template(text: str) -> str:
    """User text written into a hovertemplate: escaped, and its % unable to start a %{variable}."""
    return plain(text).replace("%", "&#37;")
