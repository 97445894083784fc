"""HTML escaping: nothing from the IR reaches the page unescaped."""

from __future__ import annotations


def escape(text: str) -> str:
    """Escape text for an element's content (quotes are harmless there)."""
    if "&" in text:
        text = text.replace("&", "&amp;")
    if "<" in text:
        text = text.replace("<", "&lt;")
    if ">" in text:
        text = text.replace(">", "&gt;")
    return text


def escape_attr(text: str) -> str:
    """Escape text for a double-quoted attribute value."""
    return escape(text).replace('"', "&quot;")
