"""ketch_anthropic: not built yet."""
