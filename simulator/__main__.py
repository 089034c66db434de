"""Entry point of ``python -m simulator``: runs the ``snapsim`` command line (see :mod:`.cli`)."""

import sys

from simulator.cli import main

if __name__ == "__main__":
    sys.exit(main())
