"""Compatibility package: the ``simpler_setup.tools.*`` command names of the simpler runtime,
delegating to pypto's implementations."""
