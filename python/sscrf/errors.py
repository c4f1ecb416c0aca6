"""The package's exceptions: a leaf module that imports nothing from sscrf.

One discipline everywhere: a bad value or an unusable file raises
:class:`SscrfError` (a ``ValueError``); a value of the wrong type raises
:class:`SscrfTypeError`, which is both an ``SscrfError`` and a ``TypeError``,
so code catching ``ValueError`` catches it too.
"""

__all__ = ["SscrfError", "SscrfTypeError"]


class SscrfError(ValueError):
    """Bad input or an unusable file. A ``ValueError``, so ``except ValueError`` catches it.

    Messages name the problem and, where there is one, the file and line.
    """


class SscrfTypeError(SscrfError, TypeError):
    """A value of the wrong type (a float where an integer is needed, a string for a list).

    Both an :class:`SscrfError` (so a ``ValueError``) and a ``TypeError``.
    """
