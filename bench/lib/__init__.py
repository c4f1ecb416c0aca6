"""Code the benchmark scripts share: the machine (:mod:`host`), timing and
memory (:mod:`timing`), tables (:mod:`tables`), corpora (:mod:`corpora`),
feature functions per corpus (``features_*``), the suite's term workloads
(:mod:`workloads`), per-evaluation timing against CRFsuite
(:mod:`eval_time`) and the one door to sscrf's internals
(:mod:`sscrf_internals`).

Scripts import these modules, never each other.
"""
