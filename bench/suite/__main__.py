"""``python -m bench.suite``: the benchmark suite (options: ``--help``)."""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))))  # the repository root, for ``python bench/suite``

from bench.suite.run import main  # noqa: E402

sys.exit(main())
