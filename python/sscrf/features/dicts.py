"""Feature-dict tokens (sklearn-crfsuite style) flattened to (attribute, value) pairs.

A token is a dict such as ``{"w[0]": "the", "bias": 1.0, "upper": False}``
or, as python-crfsuite also takes it, a list of attribute strings such as
``["w[0]=the", "bias"]`` (each with value 1.0);
:class:`sscrf.features.FeatureExtractor` documents how each kind of value
becomes attributes.

A string value joins its key as ``key:value`` (python-crfsuite's naming,
``SEPARATOR``); models trained before that naming joined them as
``key=value`` (``OLD_SEPARATOR``) and keep it. :func:`spellings` gives the
names an attribute written in the old spelling may have now.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Mapping
from itertools import repeat
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import SscrfError, SscrfTypeError
from .sentences import locate

if TYPE_CHECKING:
    from collections.abc import Sequence

    from numpy.typing import NDArray

__all__ = ["MAX_DICT_DEPTH", "OLD_SEPARATOR", "SEPARATOR", "dict_pairs", "flatten_dict",
           "spellings"]

#: How a string value joins its key: python-crfsuite's ``ItemSequence``
#: names ``{"w": "a"}`` and ``{"w": ["a"]}`` ``w:a``, so ``state_features_``
#: keys are the same in both libraries.
SEPARATOR = ":"

#: The naming of models written before :data:`SEPARATOR`; a model file
#: without a naming field has it.
OLD_SEPARATOR = "="


def spellings(attribute: str, separator: str = SEPARATOR) -> list[str]:
    """The names ``attribute``, written with ``=`` joining a key and its string value
    (the old spelling), may have under ``separator``.

    The string itself first, then the string with one ``=`` replaced by
    ``separator``, leftmost first (the key of ``{"w": "a=b"}`` ends at the
    first ``=``; that of ``{"x=y": "z"}`` at a later one).

    Parameters
    ----------
    attribute : str
    separator : str

    Returns
    -------
    list of str
    """
    out = [attribute]
    if separator == OLD_SEPARATOR:
        return out
    i = attribute.find(OLD_SEPARATOR)
    while i >= 0:
        out.append(attribute[:i] + separator + attribute[i + 1:])
        i = attribute.find(OLD_SEPARATOR, i + 1)
    return out


def dict_pairs(tokens: Sequence[Any], lengths: NDArray[np.int64], prefix: str, first: int = 0,
               separator: str = SEPARATOR) -> tuple[list[str], list[float], list[int]]:
    """Token-major (attribute, value) pairs of feature-dict tokens.

    Parameters
    ----------
    tokens : list of dict or of list of str
        Tokens of whole sentences, or one token (then ``first`` is its index).
    lengths : ndarray of int64
        Sentence lengths of the corpus the tokens come from (for messages).
    prefix : str
        ``"corpus k, "`` or ``""`` (for messages).
    first : int
        Index in the corpus of ``tokens[0]``.
    separator : str
        What joins a key and its string value.

    Returns
    -------
    names : list of str
    values : list of float
    counts : list of int
        Number of pairs of each token.
    """
    names: list[str] = []
    values: list[float] = []
    counts: list[int] = []
    for i, token in enumerate(tokens):
        if type(token) is not dict and not isinstance(token, Mapping):
            if isinstance(token, (list, tuple)):
                if all(isinstance(item, str) for item in token):
                    names.extend(token)
                    values.extend(repeat(1.0, len(token)))
                    counts.append(len(token))
                    continue
                bad = next(item for item in token if not isinstance(item, str))
                why = (f"a token given as a list holds attribute strings (python-crfsuite's "
                       f"form, e.g. ['w=the', 'bias']), not {type(bad).__name__} "
                       f"({_short(bad)}); for columns read through templates, give "
                       "templates (CRF(templates='default'))")
            else:
                why = (f"a token must be a feature dict or a list of attribute strings "
                       f"(e.g. {{'w': 'the'}} or ['w=the']), not {type(token).__name__}"
                       f" ({_short(token)})")
                if isinstance(token, str):
                    why += ("; a sentence is a list of tokens, so a sentence of words is "
                            "[['w=the'], ['w=cat']] or [{'w': 'the'}, {'w': 'cat'}]")
            raise SscrfTypeError(f"{locate(prefix, lengths, first + i)}: {why}")
        before = len(names)
        try:
            flatten_dict(token, "", names, values, separator=separator)
        except _ValueProblem as e:
            error = SscrfTypeError if isinstance(e, _TypeProblem) else SscrfError
            raise error(f"{locate(prefix, lengths, first + i)}: {e}") from None
        counts.append(len(names) - before)
    return names, values, counts


def _short(value: object) -> str:
    """``repr(value)``, cut to 40 characters for messages."""
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


class _ValueProblem(Exception):
    """A bad feature-dict entry; the caller adds sentence and token to the message."""


class _TypeProblem(_ValueProblem):
    """A feature-dict entry of the wrong type."""


_isfinite = math.isfinite


#: How deep feature dicts may nest: each level takes two of Python's 1,000
#: stack frames, and a dict that contains itself nests without end.
MAX_DICT_DEPTH = 100


def flatten_dict(token: Mapping[Any, Any], prefix: str, names: list[str], values: list[float],
                 depth: int = 0, separator: str = SEPARATOR) -> None:
    """Append the (attribute, value) pairs of one feature dict.

    ``prefix`` is ``""`` at the top level and ``"outer:"`` inside a nested
    dict, ``depth`` its nesting level (at most MAX_DICT_DEPTH), ``separator``
    what joins a key and a string value (python-crfsuite's ``:``). Exact type
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
            names.append(f"{prefix}{name}{separator}{value}")
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
            _flatten_other(prefix + name, value, names, values, depth, separator)


def _flatten_other(key: str, value: Any, names: list[str], values: list[float], depth: int,
                   separator: str) -> None:
    """The less common value kinds of :func:`flatten_dict`."""
    if isinstance(value, str):
        names.append(f"{key}{separator}{value}")
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
    elif isinstance(value, np.ndarray):
        # a vector: one attribute per position, named by the key and the
        # position ("emb" → "emb0", "emb1", ...), zeros included
        if value.ndim != 1 or value.dtype.kind not in "fiu":
            raise _TypeProblem(f"feature {key}: an array value must be one-dimensional, of "
                               f"real numbers, got shape {value.shape} of {value.dtype}")
        vector = value.astype(np.float64)
        if not np.isfinite(vector).all():
            j = int(np.flatnonzero(~np.isfinite(vector))[0])
            raise _ValueProblem(f"feature {key}: array value {j} is {float(vector[j])!r}, "
                                "not finite")
        names.extend(f"{key}{j}" for j in range(len(vector)))
        values.extend(vector.tolist())
    elif isinstance(value, Mapping):
        flatten_dict(value, key + ":", names, values, depth + 1, separator)
    elif isinstance(value, (list, tuple, set, frozenset)):
        if not all(isinstance(item, str) for item in value):
            bad = next(item for item in value if not isinstance(item, str))
            raise _TypeProblem(f"feature {key}: list items must be strings, got {bad!r}")
        # Set order varies between runs (string hashing is salted); sort so
        # that the vocabulary's order stays deterministic.
        items = sorted(value) if isinstance(value, (set, frozenset)) else value
        names.extend(f"{key}{separator}{item}" for item in items)
        values.extend(repeat(1.0, len(items)))
    else:
        raise _TypeProblem(
            f"feature {key} has a value of type {type(value).__name__}; expected str, "
            "int, float, bool, a list/tuple/set of str, a 1-D numpy array of numbers, or a "
            "nested dict"
        )
