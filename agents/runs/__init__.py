"""The run files: their record types, the JSONL reader and writer, results, the report and the run log.

Standard library only, so the TUI and the exporters can read runs without torch or vLLM.
"""
