"""Feature-dict tokens (sklearn-crfsuite style) flattened to (attribute, value) pairs.

A token is a dict such as ``{"w[0]": "the", "bias": 1.0, "upper": False}``;
:class:`sscrf.features.FeatureExtractor` documents how each kind of value
becomes attributes.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Mapping
from itertools import repeat

import numpy as np

from ..errors import SscrfError, SscrfTypeError
from .sentences import locate

__all__ = ["MAX_DICT_DEPTH", "dict_pairs", "flatten_dict"]


def dict_pairs(tokens, lengths, prefix, first=0):
    """Token-major (attribute, value) pairs of feature-dict tokens.

    Parameters
    ----------
    tokens : list of dict
        Tokens of whole sentences, or one token (then ``first`` is its index).
    lengths : ndarray of int64
        Sentence lengths of the corpus the tokens come from (for messages).
    prefix : str
        ``"corpus k, "`` or ``""`` (for messages).
    first : int
        Index in the corpus of ``tokens[0]``.

    Returns
    -------
    names : list of str
    values : list of float
    counts : list of int
        Number of pairs of each token.
    """
    names, values, counts = [], [], []
    for i, token in enumerate(tokens):
        if type(token) is not dict and not isinstance(token, Mapping):
            if isinstance(token, (list, tuple)):
                why = (
                    "a token given as a list of columns needs templates "
                    "(CRF(templates='default') or FeatureExtractor(templates=...))"
                )
            else:
                why = f"a token must be a feature dict, not {type(token).__name__}"
            raise SscrfTypeError(f"{locate(prefix, lengths, first + i)}: {why}")
        before = len(names)
        try:
            flatten_dict(token, "", names, values)
        except _ValueProblem as e:
            error = SscrfTypeError if isinstance(e, _TypeProblem) else SscrfError
            raise error(f"{locate(prefix, lengths, first + i)}: {e}") from None
        counts.append(len(names) - before)
    return names, values, counts


class _ValueProblem(Exception):
    """A bad feature-dict entry; the caller adds sentence and token to the message."""


class _TypeProblem(_ValueProblem):
    """A feature-dict entry of the wrong type."""


_isfinite = math.isfinite


#: How deep feature dicts may nest: each level takes two of Python's 1,000
#: stack frames, and a dict that contains itself nests without end.
MAX_DICT_DEPTH = 100


def flatten_dict(token, prefix, names, values, depth=0):
    """Append the (attribute, value) pairs of one feature dict.

    ``prefix`` is ``""`` at the top level and ``"outer:"`` inside a nested
    dict, ``depth`` its nesting level (at most MAX_DICT_DEPTH). Exact type
    checks come first because this runs for every feature of every token;
    subclasses and numpy scalars take the slower branch below.
    """
    if depth > MAX_DICT_DEPTH:
        raise _ValueProblem(f"feature {prefix[:60]}...: dicts nest more than {MAX_DICT_DEPTH} "
                            "levels deep (a dict that contains itself?)")
    for name, value in token.items():
        if type(name) is not str and not isinstance(name, str):
            raise _TypeProblem(f"feature name {name!r} is not a string")
        kind = type(value)
        if kind is str:
            names.append(f"{prefix}{name}={value}")
            values.append(1.0)
        elif kind is float or kind is int:
            try:
                v = float(value)
            except OverflowError:
                raise _ValueProblem(f"feature {prefix}{name}: integer value too large") from None
            if not _isfinite(v):
                raise _ValueProblem(f"feature {prefix}{name} has non-finite value {value!r}")
            names.append(prefix + name)
            values.append(v)
        elif kind is bool:
            # False means "absent", not a stored zero: it should neither count
            # towards min_freq nor "fire" for constraint features.
            if value:
                names.append(prefix + name)
                values.append(1.0)
        else:
            _flatten_other(prefix + name, value, names, values, depth)


def _flatten_other(key, value, names, values, depth):
    """The less common value kinds of :func:`flatten_dict`."""
    if isinstance(value, str):
        names.append(f"{key}={value}")
        values.append(1.0)
    elif isinstance(value, (bool, np.bool_)):
        if value:
            names.append(key)
            values.append(1.0)
    elif isinstance(value, numbers.Real):
        try:
            v = float(value)
        except OverflowError:  # Fraction(10**400, 3)
            raise _ValueProblem(f"feature {key}: value too large for a float") from None
        if not _isfinite(v):
            raise _ValueProblem(f"feature {key} has non-finite value {value!r}")
        names.append(key)
        values.append(v)
    elif isinstance(value, Mapping):
        flatten_dict(value, key + ":", names, values, depth + 1)
    elif isinstance(value, (list, tuple, set, frozenset)):
        if not all(isinstance(item, str) for item in value):
            bad = next(item for item in value if not isinstance(item, str))
            raise _TypeProblem(f"feature {key}: list items must be strings, got {bad!r}")
        # Set order varies between runs (string hashing is salted); sort so
        # that the vocabulary's order stays deterministic.
        items = sorted(value) if isinstance(value, (set, frozenset)) else value
        names.extend(f"{key}={item}" for item in items)
        values.extend(repeat(1.0, len(items)))
    else:
        raise _TypeProblem(
            f"feature {key} has a value of type {type(value).__name__}; expected str, "
            "int, float, bool, a list/tuple/set of str, or a nested dict"
        )
