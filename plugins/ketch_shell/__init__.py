"""ketch_shell: not built yet."""
