"""OpenAI-compatible LLMs: the HTTP client, answers with verified citations, and report summaries."""
