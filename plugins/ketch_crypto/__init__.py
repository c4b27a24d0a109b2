"""ketch_crypto: not built yet."""
