"""``python -m simpler_setup.tools.dump_viewer DIR ...`` — the same tool as
``python -m pypto.tools.dump_viewer`` (:mod:`pypto.tools.dump_viewer`)."""
import sys

from pypto.tools.dump_viewer import main

if __name__ == "__main__":
    sys.exit(main())
