"""Command-line tools: ``python -m pypto.tools.ir_trace`` (per-pass IR diff page), the generators of
committed files (``op_reference``, ``stubgen``, ``cast_table``; their shared command line:
:mod:`pypto.tools.generated_file`), ..."""
