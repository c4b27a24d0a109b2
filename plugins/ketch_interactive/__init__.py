"""ketch_interactive: not built yet."""
