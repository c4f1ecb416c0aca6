"""The package's exceptions: a leaf module that imports nothing from sscrf.

One discipline everywhere: a bad value or an unusable file raises
:class:`SscrfError` (a ``ValueError``); a value of the wrong type raises
:class:`SscrfTypeError`, which is both an ``SscrfError`` and a ``TypeError``,
so code catching ``ValueError`` catches it too.
A training that ended without reaching a minimum warns with
:class:`ConvergenceWarning`, feature values far from unit scale with
:class:`FeatureScaleWarning`.
"""

__all__ = ["ConvergenceWarning", "FeatureScaleWarning", "SscrfError", "SscrfTypeError"]


class SscrfError(ValueError):
    """Bad input or an unusable file. A ``ValueError``, so ``except ValueError`` catches it.

    Messages name the problem and, where there is one, the file and line.
    """


class SscrfTypeError(SscrfError, TypeError):
    """A value of the wrong type (a float where an integer is needed, a string for a list).

    Both an :class:`SscrfError` (so a ``ValueError``) and a ``TypeError``.
    """


class ConvergenceWarning(UserWarning):
    """Training stopped short of a minimum without meeting a stopping rule: the
    optimiser could not lower the loss although its gradient said it could.
    """


class FeatureScaleWarning(UserWarning):
    """Feature values far from unit scale: training copes, but the L2 prior hardly
    constrains their weights, and the model differs from the one on rescaled values.
    """
