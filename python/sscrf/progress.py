"""The package's one rule for reporting long work.

Every long step (reading, training, counting, compiling, extraction, learning
representations) reports through a :class:`Progress`:

- with ``enabled`` (``verbose=True`` in Python; the command line's default),
  a report goes to stderr, redrawn in place on a terminal and one line per
  report elsewhere (notebooks, pipes, log files);
- every report also goes to the ``logging`` logger ``"sscrf"`` at INFO,
  whether or not ``enabled``: the logger has only a ``NullHandler``, so a
  program sees the reports only once it configures logging.

Quiet by default in Python, as scikit-learn is.
"""

from __future__ import annotations

import logging
import sys
from typing import Optional, TextIO

logger = logging.getLogger("sscrf")
logger.addHandler(logging.NullHandler())

__all__ = ["Progress", "logger"]


class Progress:
    """Reports of one long step.

    Parameters
    ----------
    enabled : bool
        Show the reports on ``stream``.
    stream : file-like or None
        Where they are shown; None means ``sys.stderr`` at the time of each
        report (so that a redirected stderr is followed).
    every : int
        Off a terminal, :meth:`step` shows step 1 and every ``every``-th
        step, so that a log file gets a line per ten iterations rather than
        hundreds; on a terminal every step is drawn over the last.
    """

    WIDTH = 70

    def __init__(self, enabled: bool, stream: Optional[TextIO] = None, *, every: int = 10) -> None:
        self.enabled = bool(enabled)
        self._stream = stream
        self.every = max(1, int(every))
        self._drawn = False  # a line is on the terminal without its newline

    @property
    def stream(self) -> TextIO:
        return sys.stderr if self._stream is None else self._stream

    def _tty(self) -> bool:
        isatty = getattr(self.stream, "isatty", None)
        try:
            return bool(isatty and isatty())
        except ValueError:  # a closed stream
            return False

    def step(self, k: int, text: str) -> None:
        """Report step ``k`` (1-based) of a loop: drawn in place on a terminal;
        elsewhere, only step 1 and every ``every``-th step are reported."""
        tty = self.enabled and self._tty()
        if not tty and k != 1 and k % self.every:
            return
        logger.info(text)
        if self.enabled:
            self._show(text, in_place=tty)

    def note(self, text: str) -> None:
        """Report one event (a stage begins, a summary): always its own line."""
        logger.info(text)
        if self.enabled:
            self._show(text, in_place=False)

    def _show(self, text: str, in_place: bool) -> None:
        stream = self.stream
        if in_place:
            stream.write("\r" + text.ljust(self.WIDTH))
        elif self._drawn:  # replace the line drawn in place, then end it
            stream.write("\r" + text.ljust(self.WIDTH) + "\n")
        else:
            stream.write(text + "\n")
        self._drawn = in_place
        stream.flush()
