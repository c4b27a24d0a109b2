"""ketch_sandbox: not built yet."""
