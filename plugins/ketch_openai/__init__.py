"""ketch_openai: not built yet."""
