"""Code the benchmark scripts share: the machine (:mod:`host`), timing and
memory (:mod:`timing`), tables (:mod:`tables`), corpora (:mod:`corpora`),
feature functions per corpus (``features_*``), the suite's term workloads
(:mod:`workloads`), per-evaluation timing against CRFsuite
(:mod:`eval_time`). sscrf itself is reached through its public names
only.

Scripts import these modules, never each other.
"""
