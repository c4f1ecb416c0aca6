"""The ``sscrf`` command line: train, tag, eval, dump, demo, select, represent.

Run ``sscrf --help`` or ``sscrf COMMAND --help``; ``python -m sscrf`` is the
same program. :func:`main` returns the exit status instead of exiting, so
tests and other programs can call it in-process: 0 on success, 2 on a usage
error or bad input, 1 when memory runs out (``sscrf: error: <message>`` on
stderr, no traceback).

Modules: :mod:`~sscrf.cli.parsers` (the argument parser, one function per
command) and :mod:`~sscrf.cli.options` (what commands share) import only the
standard library; each command runs from a module of its own (``train``,
``tag``, ``evaluate``, ``dump``, ``demo``, ``selection``, ``represent``), on top of
:mod:`~sscrf.cli.reading` (files and models). :func:`main` loads the
command's module after the arguments are parsed, so that ``--help`` and
usage errors stay quick and numpy is first imported after the BLAS thread
settings below.
"""

from __future__ import annotations

import importlib
import os
import sys
from typing import Optional, Sequence

from .options import SELECT_STRATEGIES, error
from .parsers import build_parser

__all__ = ["main", "build_parser", "SELECT_STRATEGIES"]

#: command name → the module of this package that runs it (``run(args)``).
COMMAND_MODULES = {
    "train": "train",
    "tag": "tag",
    "eval": "evaluate",
    "dump": "dump",
    "demo": "demo",
    "select": "selection",
    "plot": "plot",
    "represent": "represent",
    "compile": "compile",
}


def _os_error_message(e: OSError) -> str:
    if e.filename is not None and e.strerror:
        return f"{os.fsdecode(e.filename)}: {e.strerror}"
    return str(e)


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Run the ``sscrf`` program.

    Parameters
    ----------
    argv : list of str or None
        The arguments after the program name; None reads ``sys.argv[1:]``.

    Returns
    -------
    int
        The exit status: 0 on success (also for ``--help`` and
        ``--version``), 2 for a usage error or bad input (malformed or
        missing file, invalid model, bad option value), 1 when memory runs
        out, 130 when interrupted.
    """
    # BLAS is only used for L-BFGS's vector operations, where its threads
    # contend with the core's OpenMP threads (on a busy 2-core machine the
    # demo trained ten times slower with them). Only effective before numpy
    # is first imported; a user's setting wins.
    if "numpy" not in sys.modules:
        for variable in ("OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
            os.environ.setdefault(variable, "1")
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as e:  # --help, --version, usage errors
        return e.code if isinstance(e.code, int) else (0 if e.code is None else 2)
    try:
        command = importlib.import_module(f"{__name__}.{COMMAND_MODULES[args.command]}")
        return command.run(args)
    except ValueError as e:  # SscrfError, and the core's ValueErrors on bad input
        error(e)
        return 2
    except BrokenPipeError:
        # The reader went away (e.g. `sscrf tag ... | head`): stop quietly.
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
        except (OSError, ValueError, AttributeError):
            pass
        return 141
    except OSError as e:
        error(_os_error_message(e))
        return 2
    except MemoryError:
        error("out of memory")
        return 1
    except KeyboardInterrupt:
        error("interrupted")
        return 130

