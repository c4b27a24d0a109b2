"""ketch_fs: not built yet."""
