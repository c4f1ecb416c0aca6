"""The usual token features of named-entity tagging, for words-only files.

Lower-cased word and its neighbours, word shape (``Xxxxx``) and short shape
(``Xx``), prefixes and suffixes of 1 to 4 letters, and digit and capital
classes: what CoNLL and BioCreative taggers start from. Two faces of one
definition:

* :func:`word_features` gives feature dicts for the Python API
  (``CRF().fit([word_features(s) for s in sentences], y)``);
* :func:`add_word_columns` and :func:`word_templates` give the same
  attributes as derived columns and CRF++ templates over them, which is how
  the command line's ``--features words`` trains a model that it can tag
  with again (the templates carry :data:`PRESET_MARKER`, saved with them).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Optional, Union

from ..errors import SscrfTypeError
from .templates import parse_templates

if TYPE_CHECKING:
    from .templates import Templates

__all__ = ["PRESET_MARKER", "WORD_COLUMNS", "add_word_columns", "preset_columns",
           "word_columns", "word_features", "word_templates"]

#: The derived columns of a word, in order.
WORD_COLUMNS = ("lower", "shape", "short_shape", "p1", "p2", "p3", "p4",
                "s1", "s2", "s3", "s4", "digits", "caps")

#: First template line of the ``words`` preset; the number after it is the
#: number of token columns of the file the model was trained on.
PRESET_MARKER = "# sscrf preset: words"


def _shape(word: str) -> str:
    return "".join("X" if c.isupper() else "x" if c.isalpha() else "d" if c.isdigit() else c
                   for c in word)


def _short(shape: str) -> str:
    out: list[str] = []
    for c in shape:
        if not out or out[-1] != c:
            out.append(c)
    return "".join(out)


def _digits(word: str) -> str:
    if word.isdigit():
        return "all"
    if any(c.isdigit() for c in word):
        return "some"
    return "none"


def _caps(word: str) -> str:
    letters = [c for c in word if c.isalpha()]
    if not letters:
        return "none"
    if all(c.isupper() for c in letters):
        return "all"
    if word[0].isupper():
        return "initial"
    if any(c.isupper() for c in letters):
        return "mixed"
    return "lower"


def word_columns(word: str) -> list[str]:
    """The values of :data:`WORD_COLUMNS` for one word, as strings."""
    if not isinstance(word, str):
        raise SscrfTypeError(f"a word must be a str, not {type(word).__name__}")
    lower = word.lower()
    shape = _shape(word)
    # A missing affix ('_' for a 4-letter prefix of 'an') keeps every column filled.
    affixes = [lower[:k] if len(lower) >= k else "_" for k in range(1, 5)]
    affixes += [lower[-k:] if len(lower) >= k else "_" for k in range(1, 5)]
    return [lower, shape, _short(shape), *affixes, _digits(word), _caps(word)]


def _word(token: Union[str, Sequence[str]], column: int) -> str:
    return token if isinstance(token, str) else token[column]


def word_features(sentence: Sequence[Union[str, Sequence[str]]], column: int = 0,
                  window: int = 1) -> list[dict[str, str]]:
    """Feature dicts of one sentence.

    Parameters
    ----------
    sentence : list of str, or list of token column lists
        The words (or tokens whose ``column`` is the word).
    column : int, default 0
    window : int, default 1
        The lower-cased words and short shapes of this many neighbours on
        each side are features too (``w[-1]``, ``w[+1]``, ...); outside the
        sentence they read ``<s>`` and ``</s>``.

    Returns
    -------
    list of dict
        Per token: ``w`` (lower-cased), ``shape``, ``short_shape``, ``p1``..
        ``p4``, ``s1``..``s4``, ``digits``, ``caps`` and the neighbours'.
    """
    columns = [word_columns(_word(token, column)) for token in sentence]
    n = len(columns)
    out = []
    for i, values in enumerate(columns):
        f = dict(zip(("w",) + WORD_COLUMNS[1:], values))
        for d in range(1, window + 1):
            f[f"w[-{d}]"] = columns[i - d][0] if i - d >= 0 else "<s>"
            f[f"w[+{d}]"] = columns[i + d][0] if i + d < n else "</s>"
            f[f"short_shape[-{d}]"] = columns[i - d][2] if i - d >= 0 else "<s>"
            f[f"short_shape[+{d}]"] = columns[i + d][2] if i + d < n else "</s>"
        out.append(f)
    return out


def add_word_columns(sentence: Sequence[Sequence[str]], column: int = 0) -> list[list[str]]:
    """A sentence of token column lists with :data:`WORD_COLUMNS` after each
    token's columns (what :func:`word_templates` read)."""
    return [list(token) + word_columns(token[column]) for token in sentence]


def word_templates(n_columns: int = 1) -> Templates:
    """CRF++ templates of the ``words`` preset for tokens of ``n_columns``
    columns (column 0 the word) extended by :func:`add_word_columns`."""
    col = {name: n_columns + k for k, name in enumerate(WORD_COLUMNS)}
    lines = [f"{PRESET_MARKER} {n_columns}"]
    lines += [f"Uw{d:+d}:%x[{d},{col['lower']}]" for d in range(-2, 3)]
    lines += [f"Uww-1:%x[-1,{col['lower']}]/%x[0,{col['lower']}]",
              f"Uww+1:%x[0,{col['lower']}]/%x[1,{col['lower']}]"]
    lines += [f"Ush:%x[0,{col['shape']}]"]
    lines += [f"Uss{d:+d}:%x[{d},{col['short_shape']}]" for d in (-1, 0, 1)]
    lines += [f"U{name}:%x[0,{col[name]}]" for name in WORD_COLUMNS[3:]]
    lines += [f"Ucaps-1:%x[-1,{col['caps']}]/%x[0,{col['caps']}]"]
    lines += [f"Uc{c}:%x[0,{c}]" for c in range(1, n_columns)]  # POS and other given columns
    lines.append("B")
    return parse_templates(lines, source="the words preset")


def preset_columns(templates: Any) -> Optional[int]:
    """The number of token columns a ``words`` preset model reads from a file,
    or None when ``templates`` are not the preset's."""
    lines = getattr(templates, "lines", ())
    if lines and lines[0].startswith(PRESET_MARKER + " "):
        return int(lines[0][len(PRESET_MARKER) + 1:])
    return None
