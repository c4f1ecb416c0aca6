"""Former name of :mod:`sscrf.optim` (L-BFGS and OWL-QN), kept so that its imports work."""

from .optim import STOP_CALLBACK, STOP_INTERRUPTED, NonFiniteObjective, OptimizeResult, lbfgs

__all__ = ["STOP_CALLBACK", "STOP_INTERRUPTED", "NonFiniteObjective", "OptimizeResult", "lbfgs"]
