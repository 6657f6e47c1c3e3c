"""Command-line tools: ``python -m pypto.tools.ir_trace`` (per-pass IR diff page)."""
