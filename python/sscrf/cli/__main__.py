"""``python -m sscrf.cli``: the ``sscrf`` command line, as ``python -m sscrf`` runs it."""

import sys

from . import main

if __name__ == "__main__":
    sys.exit(main())
