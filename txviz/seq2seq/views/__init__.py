"""The Encoder Decoder page's views: its settings (settings) and its tabs, one module per group."""
