"""ketch_compact: not built yet."""
