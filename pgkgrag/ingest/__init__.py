"""Ingestion: input documents read and checked, chunked, extracted, staged and applied in batches."""
