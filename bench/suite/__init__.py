"""The sscrf benchmark suite: ``python -m bench.suite`` (see :mod:`bench.suite.run`).

One module per item (``supervised``, ``scaling``, ``throughput`` for tagging
and extraction, ``corpora``), each both the item's child script and the
function that runs it; ``targets`` holds the limits, ``report`` the checks
and the Markdown, ``children`` the child-process plumbing.
"""
