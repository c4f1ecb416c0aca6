"""Signal safety: Python code run by a signal handler (or by a user object's
method) in the middle of a core call must not leave the core reading freed
objects, and a long kernel must answer Ctrl-C.

Each probe runs in a child process, since the defect it guards against kills
the interpreter."""

import os

import pytest

from test_bad_input import run_python


HANDLER_CLEARS_TOKENS = """
    import dis
    import linecache
    import signal
    from sscrf import SscrfError
    from sscrf.features import FeatureExtractor

    # 600,000 tokens; the compiled pass checks for signals every 65,536. The
    # tokens in flight at each check carry a unique 1 MiB value, which the
    # allocator returns to the system once the handler frees it.
    def value(g):
        return "v%d" % g + "x" * (1 << 20) if g % 65536 >= 65528 else "w%d" % (g % 5000)

    X = [[{"w": value(s * 600 + i), "p": "p%d" % (i % 300), "n": 1.0 + (i % 3)}
          for i in range(600)] for s in range(1000)]

    def clear(signum, frame):
        # only while the compiled pass runs (the handler runs at its signal check)
        if "dict_tokens_to_csr" not in linecache.getline(frame.f_code.co_filename, frame.f_lineno):
            return
        if frame.f_code.co_code[frame.f_lasti] != dis.opmap.get("CALL", dis.opmap.get("CALL_METHOD")):
            return
        for sentence in X:
            for token in sentence:
                token.clear()

    signal.signal(signal.SIGALRM, clear)
    signal.setitimer(signal.ITIMER_REAL, 0.02, 0.02)
    try:
        for _ in range(3):
            FeatureExtractor().fit_transform(X)
    except (SscrfError, TypeError, ValueError):
        pass
    signal.setitimer(signal.ITIMER_REAL, 0)
    print("alive")
"""


@pytest.mark.parametrize("attempt", range(3))
def test_signal_handler_that_frees_the_tokens_does_not_crash_the_compiler(attempt):
    # a fixed mmap threshold: freed 1 MiB values are unmapped, so a read of
    # one faults instead of finding stale bytes
    env = dict(os.environ, MALLOC_MMAP_THRESHOLD_="131072")
    rc, out, err = run_python(HANDLER_CLEARS_TOKENS, timeout=300, env=env)
    assert rc == 0, err[-2000:]
    assert "alive" in out


JIAO_ON_A_LONG_CHAIN = """
    import os, signal, sys, threading, time
    import numpy as np
    from sscrf import lattice

    rng = np.random.default_rng(0)
    E, T = rng.normal(size=(16000, 6)), rng.normal(size=(6, 6))
    threading.Timer(1.0, os.kill, (os.getpid(), signal.SIGINT)).start()
    start = time.perf_counter()
    try:
        lattice.entropy_gradient(E, T, method="jiao")
        print("finished", time.perf_counter() - start)
    except KeyboardInterrupt:
        print("interrupted", time.perf_counter() - start)
"""


def test_ctrl_c_stops_the_jiao_entropy_gradient_on_a_long_chain():
    # O(n² S³): tens of seconds on this chain without a poll in its outer loop
    rc, out, err = run_python(JIAO_ON_A_LONG_CHAIN, timeout=120)
    assert rc == 0, err[-2000:]
    assert out.startswith("interrupted"), out
    assert float(out.split()[1]) < 5.0, out
