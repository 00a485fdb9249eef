"""Embedding: the embedders (text to vector) and the vectors a tenant's rows are still missing."""
