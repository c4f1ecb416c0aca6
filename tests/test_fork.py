"""A process forked after its parent ran sscrf on several threads (a
multiprocessing worker started by fork) must not hang: GNU OpenMP cannot
start threads there, so sscrf runs on one thread and says so."""

import os
import time
import warnings

import numpy as np

import sscrf
from sscrf import _core
from test_objectives import big_corpus, dense_layout

CHILD_SECONDS = 30


def run_in_child(fn):
    """fn() in a forked child; its exit status, or None when it ran past CHILD_SECONDS."""
    with warnings.catch_warnings():
        # Python 3.12 warns that forking a process with threads (OpenMP's) may deadlock.
        warnings.simplefilter("ignore", DeprecationWarning)
        pid = os.fork()
    if pid == 0:  # the child: never return into pytest
        status = 1
        try:
            status = fn()
        finally:
            os._exit(status)
    started = time.monotonic()
    while time.monotonic() - started < CHILD_SECONDS:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return os.waitstatus_to_exitcode(status)
        time.sleep(0.02)
    os.kill(pid, 9)
    os.waitpid(pid, 0)
    return None


def test_child_forked_after_threads_runs_serially_with_the_same_bits():
    A, S = 3000, 7
    big = big_corpus(seed=13, n_tokens=50_000, A=A, S=S)
    corpus = _core.Corpus(big["indptr"], big["indices"], big["values"], big["offsets"], A,
                          big["labels"], big["weights"], None)
    layout = _core.Layout(*dense_layout(A, S), S)
    theta = np.random.default_rng(14).normal(0.0, 0.5, size=layout.n_parameters)
    loss, grad = _core.likelihood(corpus, layout, theta, 2)  # the parent starts threads

    def child():
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            child_loss, child_grad = _core.likelihood(corpus, layout, theta, 2)
        if child_loss != loss or not np.array_equal(child_grad, grad):
            return 3
        if not any("forked" in str(w.message) for w in caught):
            return 4
        return 0

    assert run_in_child(child) == 0  # None: the child hung


def test_model_trained_on_threads_predicts_in_a_forked_child():
    rng = np.random.default_rng(15)
    X = [[{f"w={rng.integers(30)}": 1.0} for _ in range(8)] for _ in range(200)]
    y = [[f"L{rng.integers(3)}" for _ in range(8)] for _ in range(200)]
    model = sscrf.CRF(max_iterations=5, verbose=False, n_threads=2).fit(X, y)
    expected = model.predict(X)

    def child():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            return 0 if model.predict(X) == expected else 3

    assert run_in_child(child) == 0
