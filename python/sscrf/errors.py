"""The package's one exception class."""


class SscrfError(ValueError):
    """Bad input or an unusable file. A ``ValueError``, so ``except ValueError`` catches it.

    Messages name the problem and, where there is one, the file and line.
    """
