"""Hypothesis strategies shared by the test modules: tiny chains for the lattice kernels."""

import numpy as np
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

SCALES = [1.0, 10.0, 100.0, 1000.0]


@st.composite
def chains(draw, max_n=6, max_S=4, scales=SCALES, masks=True, integer=False, integer_bound=3):
    """``(args, scale)``: a dict of lattice arguments (``emissions`` (n, S),
    ``transitions`` (S, S), ``start``, ``end`` (S,) or None, ``mask`` (n, S) and
    ``edge_mask`` (n-1, S, S) or None) and the score scale; masks may allow no labeling.

    With ``integer``, scores are small integers in ±integer_bound: sums are exact in
    any order, so ties are exact.
    """
    n = draw(st.integers(1, max_n))
    S = draw(st.integers(1, max_S))
    scale = draw(st.sampled_from(scales))
    if integer:
        elements = st.integers(-integer_bound, integer_bound).map(float)
    else:
        elements = st.floats(-scale, scale, allow_nan=False, allow_infinity=False)
    args = dict(
        emissions=draw(hnp.arrays(np.float64, (n, S), elements=elements)),
        transitions=draw(hnp.arrays(np.float64, (S, S), elements=elements)),
        start=None,
        end=None,
        mask=None,
        edge_mask=None,
    )
    if draw(st.booleans()):
        args["start"] = draw(hnp.arrays(np.float64, (S,), elements=elements))
        args["end"] = draw(hnp.arrays(np.float64, (S,), elements=elements))
    if masks:
        # Mostly True, so that most draws still allow some labeling.
        allowed = st.sampled_from([True, True, True, False])
        if draw(st.booleans()):
            args["mask"] = draw(hnp.arrays(np.bool_, (n, S), elements=allowed))
        if draw(st.booleans()):
            args["edge_mask"] = draw(hnp.arrays(np.bool_, (n - 1, S, S), elements=allowed))
    return args, scale
