"""sscrf's benchmarks: ``suite/`` (one entry point, ``python -m bench.suite``),
``papers/`` (the seed papers' experiments), ``probes/`` (kernel and memory
probes) and ``lib/`` (what they share). Measurements are in ``HISTORY.md``."""
