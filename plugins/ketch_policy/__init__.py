"""ketch_policy: not built yet."""
