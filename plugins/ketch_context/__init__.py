"""ketch_context: not built yet."""
