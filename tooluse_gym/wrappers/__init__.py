"""Protocol wrappers (template, reasoning history, system prompt, tool format)."""
