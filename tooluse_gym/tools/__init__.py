"""Call parsing (never eval), argument validation and the per-episode tool runtime."""
