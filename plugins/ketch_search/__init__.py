"""ketch_search: not built yet."""
