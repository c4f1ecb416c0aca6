"""The suite's targets, as data: the limits each measured figure is checked against.

Ratios are sscrf against CRFsuite (python-crfsuite) measured back to back on
CoNLL-2000 chunking; :func:`bench.suite.report.check_targets` applies them.
"""

#: Loss-and-gradient time per evaluation, ratio to CRFsuite's, observed pairs, by threads.
OBSERVED_EVAL = {1: 0.25, 2: 0.15}
#: The same for the dense feature set (every attribute-label pair), by threads.
DENSE_EVAL = {1: 0.35, 2: 0.20}
#: Total training time ratio to CRFsuite, observed, 2 threads.
TOTAL_OBSERVED_2T = 0.35
#: Parallel efficiency (speed-up / threads) at these thread counts.
EFFICIENCY = {2: 0.90, 16: 0.75}
#: Cost per token of the fast entropy term against the likelihood: limit and aim.
ENTROPY_COST, ENTROPY_AIM = 1.5, 1.3
#: Cost per token of the GE term against the likelihood.
GE_COST = 2.0
#: Tagging throughput against CRFsuite (Viterbi and marginals, 1 thread).
TAGGING_SPEEDUP = 2.0
#: Peak RSS of training, ratio to CRFsuite (observed).
MEMORY_OBSERVED = 1.5
#: Peak RSS of dense training, ratio to Wapiti's (all pairs).
MEMORY_DENSE_WAPITI = 1.5
#: Wapiti 1.5's peak RSS training all pairs on CoNLL-2000, recorded once (Wapiti is
#: not installed where the suite runs).
WAPITI_PEAK_MB = 922.0
#: sscrf's CoNLL-2000 F1 before the speed work (commit f468bf4), and the tolerance
#: around it and around CRFsuite's F1.
F1_BEFORE = 93.62
F1_TOLERANCE = 0.3
