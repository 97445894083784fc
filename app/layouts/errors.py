"""The one error the layout package raises: Triton would refuse this layout or shape."""


class LayoutError(ValueError):
    """The encoding or shape cannot be laid out; the message says why (shown to the user as a 400)."""
