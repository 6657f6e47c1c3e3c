"""Python source -> IR (see :mod:`pypto.frontend.parser`)."""
