"""Checks shared by the lattice and n-best tests on drawn chains: the chain's
brute-force reference (or the refusal of a chain no labeling fits), and that a
call leaves its argument arrays as they were."""

import numpy as np
import pytest

from reference import brute_force


def reference_of(args):
    """Brute force of the chain given as lattice arguments (emissions, transitions, ...)."""
    return brute_force(args["emissions"], args["transitions"], args["start"], args["end"],
                       args["mask"], args["edge_mask"])


def reference_or_refused(args, calls):
    """The brute-force reference of the chain ``args``; where its masks allow no
    labeling, checks instead that every call in ``calls`` (each given ``**args``)
    refuses it with a ValueError naming the mask, and returns None."""
    bf = reference_of(args)
    if bf.n_allowed > 0:
        return bf
    for call in calls:
        with pytest.raises(ValueError, match="mask"):
            call(**args)
    return None


def call_unchanged(fn, args, **kwargs):
    """``fn(**args, **kwargs)``, checking that it modified none of the arrays in ``args``."""
    before = {k: (None if v is None else v.copy()) for k, v in args.items()}
    out = fn(**args, **kwargs)
    for k, v in args.items():
        if v is not None:
            np.testing.assert_array_equal(v, before[k], err_msg=f"{k} was modified")
    return out
