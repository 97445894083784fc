"""The store: the database engine and schema, content-addressed blobs and their packs, compaction,
and deleting what nobody uses (retention).

It owns every table and how texts are kept; nothing else writes blob bytes. It may import
`parsers/` and the pure rooms (`app.layouts`, `app.highlight`, `app.diff`), never `app.render`,
`app.insight`, `app.ingest`, `app.web` or `app.cli`.
"""
