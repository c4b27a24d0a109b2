"""ketch_ollama: not built yet."""
