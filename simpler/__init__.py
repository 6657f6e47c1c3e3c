"""Compatibility package: the ``simpler`` runtime's worker API (``simpler.worker.Worker``) that the
reference's manual-dispatch code drives, backed by pypto's simulated chip
(:class:`pypto.runtime.worker.ChipWorker`). See :mod:`pypto.driver.chip_surface`."""
