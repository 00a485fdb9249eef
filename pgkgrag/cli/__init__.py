"""pgkgrag's command line: `main` (the group), one module per command group (db, ingest, search, graph,
serve, demo), `common` (what they share) and `render` (what they print)."""
