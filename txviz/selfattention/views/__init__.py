"""The self-attention page's tabs: the toy's (by hand, several heads, shuffled), a real model's, and the
cheaper scorings (additive, linear, efficient); ``common`` holds the sidebar they all read."""
