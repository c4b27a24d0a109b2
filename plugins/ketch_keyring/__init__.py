"""ketch_keyring: not built yet."""
