"""``python -m pypto`` runs the ``pypto`` command (see :mod:`pypto.cli`)."""
import sys

from pypto.cli import main

sys.exit(main())
