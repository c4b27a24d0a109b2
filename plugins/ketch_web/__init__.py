"""ketch_web: not built yet."""
