"""``sscrf demo``: train and score a CRF on a corpus sampled from a built-in HMM."""

from __future__ import annotations

import argparse
import sys

from ..demo import run_demo

__all__ = ["run"]


def run(args: argparse.Namespace) -> int:
    """``sscrf demo``: the exit status."""
    run_demo(n_train=args.n_train, n_test=args.n_test, seed=args.seed, n_threads=args.threads,
             verbose=not args.quiet, out=sys.stdout)
    return 0
