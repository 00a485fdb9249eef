"""Extractors: what entities and relations a document holds (given, a names list, keyphrases, an LLM)."""
