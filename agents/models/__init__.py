"""Model resolution (short names, the GGUF conversion, shipped adapters) and the adapters themselves."""
