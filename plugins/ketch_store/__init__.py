"""ketch_store: not built yet."""
