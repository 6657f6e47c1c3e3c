"""``python -m simpler_setup.tools.dump_viewer`` (see :mod:`pypto.tools.dump_viewer`)."""
