"""Serving many sessions from one server: a bounded, first-come queue for heavy model passes."""
