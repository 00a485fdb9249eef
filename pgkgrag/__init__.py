"""pgkgrag: GraphRAG inside PostgreSQL, with a thin Python driver."""
