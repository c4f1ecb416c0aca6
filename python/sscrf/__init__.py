"""sscrf: linear-chain conditional random fields from cheap supervision.

The compiled core (``sscrf._core``) is private; this package re-exports what
users need.
"""

import os as _os

# How long an idle OpenMP thread spins before it sleeps. With libgomp's
# default (GOMP_SPINCOUNT 300000 pauses) a thread spinning at a barrier holds
# the core its partner needs, so jobs that share cores crawl (two 2-thread
# trainings on 2 cores took 6.5x the time each); 3000 keeps the waits inside
# an evaluation short on an idle machine, where sleeping outright
# (OMP_WAIT_POLICY=passive) costs time. The runtime reads this once, as it
# loads with _core; a user's own OMP_WAIT_POLICY or GOMP_SPINCOUNT is left
# alone, and the environment is restored after the import, so child
# processes see theirs.
_SPIN_SETTING = "GOMP_SPINCOUNT"
_spin_set_here = not any(k in _os.environ for k in ("OMP_WAIT_POLICY", _SPIN_SETTING))
if _spin_set_here:
    _os.environ[_SPIN_SETTING] = "3000"
try:
    from ._core import build_info as _build_info
finally:
    if _spin_set_here:
        del _os.environ[_SPIN_SETTING]
from .errors import SscrfError, SscrfTypeError  # noqa: E402
from .progress import logger as _logger  # noqa: E402,F401  (the "sscrf" logger and its NullHandler)

_SUBMODULES = ("lattice", "io", "metrics", "features", "objectives", "active", "constraints",
               "partial", "optimize", "annotations", "inputs", "layout", "corpus", "training",
               "decoding", "model_file", "optim", "progress", "representations", "corpus_file",
               "minimizer", "inspection")

__version__ = "0.1.0"


def build_info() -> dict[str, object]:
    """How the compiled core was built.

    Returns
    -------
    dict
        ``openmp`` (bool): whether OpenMP is enabled; ``max_threads`` (int):
        the most threads OpenMP would use by default (1 without OpenMP);
        ``compiler`` (str); ``kernels`` (str): which compilation of the hot
        loops runs on this CPU, ``"x86-64-v3"`` (AVX2 and FMA),
        ``"baseline"`` (a CPU without them, or a compiler that builds no
        second compilation, such as clang) or ``"native"`` (built with
        ``-DSSCRF_NATIVE=ON``).
    """
    return dict(_build_info())


def __getattr__(name: str) -> object:
    # Heavy submodules load on first use so that `import sscrf` stays cheap.
    if name == "CRF":
        from .model import CRF

        return CRF
    if name == "WordRepresentations":
        from .representations import WordRepresentations

        return WordRepresentations
    if name in ("CompiledCorpus", "compile_corpus_file"):
        from . import corpus_file

        return getattr(corpus_file, name)
    if name == "self_train":
        from .self_training import self_train

        return self_train
    if name == "select_hyperparameters":
        from .selection import select_hyperparameters

        return select_hyperparameters
    if name in _SUBMODULES:
        import importlib

        return importlib.import_module(f".{name}", __name__)
    raise AttributeError(f"module 'sscrf' has no attribute {name!r}")


__all__ = ["CRF", "CompiledCorpus", "SscrfError", "SscrfTypeError", "WordRepresentations",
           "build_info", "compile_corpus_file", "select_hyperparameters", "self_train",
           *_SUBMODULES]
