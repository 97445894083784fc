"""Insight: what irlens works out from stored runs. The op index and op search, op history, per-pass
charts, comparisons of compilations (pass alignment, variants), source maps and their line indexes,
the data behind each page (page_data), and the background work that precomputes these.

Reads the store and renders through `app.render`; may import `parsers/`, the pure rooms,
`app.store`, `app.render` and `app.urls`, never `app.ingest`, `app.web` or `app.cli`.
"""
