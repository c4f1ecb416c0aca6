"""sscrf: linear-chain conditional random fields from cheap supervision.

The compiled core (``sscrf._core``) is private; this package re-exports what
users need.
"""

from ._core import build_info as _build_info
from .errors import SscrfError

__version__ = "0.1.0"


def build_info():
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


def __getattr__(name):
    # Heavy submodules load on first use so that `import sscrf` stays cheap.
    if name == "CRF":
        from .model import CRF

        return CRF
    if name == "self_train":
        from .self_training import self_train

        return self_train
    if name in {"lattice", "io", "metrics", "features", "objectives", "active", "constraints",
                "partial", "optimize"}:
        import importlib

        return importlib.import_module(f".{name}", __name__)
    raise AttributeError(f"module 'sscrf' has no attribute {name!r}")


__all__ = [
    "CRF", "SscrfError", "build_info", "self_train",
    "lattice", "io", "metrics", "features", "objectives", "active", "constraints", "partial",
    "optimize",
]
