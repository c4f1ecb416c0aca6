#!/usr/bin/env python
"""Weighted CRFs on HMM data: Sokolovska (2011) §6.1 / Fig. 1.

Data come from a first-order HMM with 5 observation symbols, 6 hidden labels
and sequences of length 5 (its parameters are drawn once from ``--hmm-seed``:
each transition row mixes a random Dirichlet(1) row with a point mass on one
successor, each emission row a Dirichlet(1) row with a point mass on symbol
``label mod 5``, so labels 0 and 5 share a favourite symbol and only context
separates them). The true q(x) of every one of the 5^5 input sequences comes
from the forward algorithm (eq. 18).

For each training size n and each replication, one training sample of n
sequences is drawn and two CRFs are fitted on it: the standard one and the
weighted one, whose per-sentence weights are Sokolovska's q(x)/N_x (eq. 17,
N_x = occurrences of x in the sample) normalised to mean 1
(:func:`sscrf.active.sokolovska_weights`). Both use one attribute per token
(the symbol), the dense feature set (every symbol-label weight, plus label
transitions: the HMM's conditional p(y|x) is inside this family), the same c2
and L-BFGS limits. Both are scored by token error on one test sample of
10,000 sequences (the same for every run; each distinct x is decoded once),
and by the exact expected token error under the HMM (Σ_x q(x)·E[errors | x]).

Reported per n: mean error of each, the difference standard − weighted
(positive: the weighted CRF is better, as in the paper's Fig. 1), its spread
(standard deviation and quartiles over replications), the share of
replications where the weighted CRF wins, and a paired t statistic; and, for
reference, the Bayes error of the true HMM (Viterbi decoding with the true
parameters, on the test sample and exactly; and the exact error of
per-token maximum-marginal decoding, the true minimum).

Usage::

    python bench/papers/weighted_synthetic.py [--repeats 150] [--sizes 10,20,50,100,200]
        [--c2 0.1] [--max-iterations 100] [--out bench/results]
"""

import argparse
import itertools
import os
import sys
import time

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("MKL_NUM_THREADS", "1")

import numpy as np  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))))  # the repository root, for bench.lib
from bench.lib import host, tables  # noqa: E402

from sscrf import CRF  # noqa: E402
from sscrf.active import sokolovska_weights  # noqa: E402

S, V, T = 6, 5, 5  # labels, symbols, length


def make_hmm(seed, a_peak=0.8, b_peak=0.9):
    """(pi (S,), A (S, S) [previous, next], B (S, V)) of the data-generating HMM."""
    rng = np.random.default_rng(seed)
    pi = rng.dirichlet(np.ones(S))
    A = (1 - a_peak) * rng.dirichlet(np.ones(S), size=S) + a_peak * np.eye(S)[rng.permutation(S)]
    B = (1 - b_peak) * rng.dirichlet(np.ones(V), size=S) + b_peak * np.eye(V)[np.arange(S) % V]
    return pi, A, B


def all_inputs():
    """Every input sequence, (V**T, T) int, in lexicographic order (row id = base-V number)."""
    return np.array(list(itertools.product(range(V), repeat=T)), dtype=np.int64)


def code(xs):
    """Row id in :func:`all_inputs` of each sequence in ``xs`` (N, T)."""
    return xs @ (V ** np.arange(T - 1, -1, -1))


def forward_backward(pi, A, B, xs):
    """q(x) (N,) by the forward algorithm (eq. 18) and posteriors p(y_t | x) (N, T, S)."""
    N = len(xs)
    alpha = np.zeros((N, T, S))
    beta = np.ones((N, T, S))
    alpha[:, 0] = pi * B[:, xs[:, 0]].T
    for t in range(1, T):  # α_t(b) = Σ_a α_{t-1}(a) A[a, b] · B[b, x_t]
        alpha[:, t] = (alpha[:, t - 1] @ A) * B[:, xs[:, t]].T
    for t in range(T - 2, -1, -1):  # β_t(a) = Σ_b A[a, b] B[b, x_{t+1}] β_{t+1}(b)
        beta[:, t] = (beta[:, t + 1] * B[:, xs[:, t + 1]].T) @ A.T
    q = alpha[:, -1].sum(axis=1)
    return q, alpha * beta / q[:, None, None]


def viterbi(pi, A, B, xs):
    """Most probable label path (N, T) of each input under the HMM."""
    N = len(xs)
    logA = np.log(A)
    delta = np.log(pi) + np.log(B[:, xs[:, 0]].T)
    back = np.zeros((N, T, S), dtype=np.int64)
    for t in range(1, T):
        cand = delta[:, :, None] + logA[None]
        back[:, t] = cand.argmax(axis=1)
        delta = cand.max(axis=1) + np.log(B[:, xs[:, t]].T)
    path = np.zeros((N, T), dtype=np.int64)
    path[:, -1] = delta.argmax(axis=1)
    for t in range(T - 1, 0, -1):
        path[:, t - 1] = back[np.arange(N), t, path[:, t]]
    return path


def sample(pi, A, B, n, rng):
    """n (x, y) pairs from the HMM: (n, T) int arrays."""
    y = np.zeros((n, T), dtype=np.int64)
    x = np.zeros((n, T), dtype=np.int64)
    cumA, cumB = np.cumsum(A, axis=1), np.cumsum(B, axis=1)
    y[:, 0] = np.searchsorted(np.cumsum(pi), rng.random(n) * np.cumsum(pi)[-1])
    for t in range(T):
        if t:
            u = rng.random(n) * cumA[y[:, t - 1], -1]
            y[:, t] = (cumA[y[:, t - 1]] < u[:, None]).sum(axis=1)
        u = rng.random(n) * cumB[y[:, t], -1]
        x[:, t] = (cumB[y[:, t]] < u[:, None]).sum(axis=1)
    return np.minimum(x, V - 1), np.minimum(y, S - 1)


def sentences(xs):
    return [[{"x": str(int(s))} for s in row] for row in xs]


def label_lists(ys):
    return [[str(int(l)) for l in row] for row in ys]


class Evaluator:
    """Token error of a model on the test sample and in expectation under the HMM."""

    def __init__(self, xs_all, post_all, q_all, x_test, y_test):
        self.X_all = sentences(xs_all)
        self.post_all, self.q_all = post_all, q_all
        self.test_codes, self.y_test = code(x_test), y_test

    def __call__(self, model):
        predicted = np.array([[int(l) for l in row] for row in model.predict(self.X_all)])
        test_err = float((predicted[self.test_codes] != self.y_test).mean())
        p_right = np.take_along_axis(self.post_all, predicted[:, :, None], axis=2)[:, :, 0]
        exact_err = float((self.q_all * (1 - p_right).mean(axis=1)).sum())
        return test_err, exact_err


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeats", type=int, default=150)
    ap.add_argument("--sizes", default="10,20,30,50,100,200")
    ap.add_argument("--n-test", type=int, default=10_000)
    ap.add_argument("--c2", type=float, default=0.1)
    ap.add_argument("--max-iterations", type=int, default=100)
    ap.add_argument("--hmm-seed", type=int, default=0)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--out", default=os.path.join(host.REPO_ROOT, "bench", "results"))
    args = ap.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    started = time.perf_counter()

    pi, A, B = make_hmm(args.hmm_seed)
    xs_all = all_inputs()
    q_all, post_all = forward_backward(pi, A, B, xs_all)
    assert abs(q_all.sum() - 1) < 1e-12
    log_q_all = np.log(q_all)
    rng = np.random.default_rng(args.seed)
    x_test, y_test = sample(pi, A, B, args.n_test, rng)
    evaluate = Evaluator(xs_all, post_all, q_all, x_test, y_test)
    vit = viterbi(pi, A, B, xs_all)
    bayes_test = float((vit[code(x_test)] != y_test).mean())
    bayes_vit = float((q_all * (1 - np.take_along_axis(post_all, vit[:, :, None], 2)[:, :, 0])
                       .mean(axis=1)).sum())
    bayes_mpm = float((q_all * (1 - post_all.max(axis=2)).mean(axis=1)).sum())

    def crf():
        return CRF(c2=args.c2, max_iterations=args.max_iterations, feature_set="dense",
                   n_threads=1, verbose=False)

    runs = {}
    for n in sizes:
        rows = []
        for r in range(args.repeats):
            rr = np.random.default_rng([args.seed, n, r])
            x, y = sample(pi, A, B, n, rr)
            X, Y = sentences(x), label_lists(y)
            standard = crf().fit(X, Y)
            weighted = crf().fit(X, Y, sample_weight=sokolovska_weights(X, log_q_all[code(x)]))
            rows.append(evaluate(standard) + evaluate(weighted))
        runs[n] = np.array(rows)  # columns: std test, std exact, weighted test, weighted exact
        print(f"n={n}: {time.perf_counter() - started:.0f} s", file=sys.stderr, flush=True)

    headers = ["n", "standard error %", "weighted error %", "diff (std − wtd) mean, pp",
               "diff sd", "diff q1 / median / q3", "weighted better", "paired t",
               "diff, exact error, mean ± sd"]
    table = []
    for n in sizes:
        a = runs[n]
        d = (a[:, 0] - a[:, 2]) * 100
        de = (a[:, 1] - a[:, 3]) * 100
        q1, med, q3 = np.percentile(d, [25, 50, 75])
        t = d.mean() / (d.std(ddof=1) / np.sqrt(len(d))) if d.std(ddof=1) > 0 else float("nan")
        table.append([n, f"{a[:, 0].mean() * 100:.2f}", f"{a[:, 2].mean() * 100:.2f}",
                      f"{d.mean():+.2f}", f"{d.std(ddof=1):.2f}",
                      f"{q1:+.2f} / {med:+.2f} / {q3:+.2f}",
                      f"{(d > 0).mean() * 100:.0f}% (ties {(d == 0).mean() * 100:.0f}%)",
                      f"{t:+.2f}", f"{de.mean():+.2f} ± {de.std(ddof=1):.2f}"])
    lines = [
        "# Weighted vs standard CRF on HMM data (Sokolovska 2011 §6.1, Fig. 1)",
        "",
        host.machine_line(),
        "",
        f"HMM: {S} labels, {V} symbols, length {T} (hmm seed {args.hmm_seed}); test sample "
        f"{args.n_test:,} sequences; {args.repeats} replications per n; c2 = {args.c2}, "
        f"max_iterations = {args.max_iterations}, dense feature set, symbol attribute only.",
        "",
        f"Bayes error of the true HMM, Viterbi decoding: {bayes_test * 100:.2f}% on the test "
        f"sample, {bayes_vit * 100:.2f}% exactly; per-token maximum-marginal decoding "
        f"(the minimum): {bayes_mpm * 100:.2f}% exactly.",
        "",
        "Token error in % (test sample); diff = standard − weighted in percentage points, "
        "positive when the weighted CRF is better; 'exact error' = expectation under the HMM.",
        "",
        tables.markdown_table(headers, table),
        "",
        f"Wall time {time.perf_counter() - started:.0f} s.",
    ]
    report = "\n".join(lines)
    tables.write_report(args.out, "weighted_synthetic", report,
                        {"sizes": sizes, "columns": ["standard_test", "standard_exact",
                                                     "weighted_test", "weighted_exact"],
                         "runs": {str(n): runs[n].tolist() for n in sizes},
                         "bayes": {"viterbi_test": bayes_test, "viterbi_exact": bayes_vit,
                                   "mpm_exact": bayes_mpm}})
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        fig, ax = plt.subplots(figsize=(6, 3.5))
        ax.boxplot([(runs[n][:, 0] - runs[n][:, 2]) * 100 for n in sizes])
        ax.set_xticks(range(1, len(sizes) + 1), [str(n) for n in sizes])
        ax.axhline(0, color="grey", lw=0.8)
        ax.set_xlabel("training sequences n")
        ax.set_ylabel("error standard − weighted (pp)")
        ax.set_title("HMM data: standard vs weighted CRF")
        fig.tight_layout()
        fig.savefig(os.path.join(args.out, "weighted_synthetic.png"), dpi=120)
    except ImportError:
        print("matplotlib not installed: no plot", file=sys.stderr)


if __name__ == "__main__":
    main()
