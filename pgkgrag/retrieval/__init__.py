"""Retrieval from Python: kgrag_search and kgrag.context called with the tenant's embedder, the optional
HTTP reranker, and the evaluation of a golden set."""
