"""Token attributes for linear-chain CRFs: templates or feature dicts, interned to CSR.

Each token gets a set of (attribute string, value) pairs. Attribute strings are
interned to integer ids in a vocabulary, and a corpus becomes the sparse design
matrix ``X`` (tokens × attributes, CSR) that the C++ core multiplies with the
weight matrix ``W``, plus the token offsets of its sentences.

Two input styles:

* **Templates** (CRF++/Wapiti style) over token columns. A token is a list of
  column strings, e.g. ``["Confidence", "NN"]``; a template line such as
  ``U05:%x[-1,0]/%x[0,0]`` gives the attribute ``U05:<col 0 at t-1>/<col 0 at t>``
  with value 1.0. Positions outside the sentence read as CRF++'s pads ``_B-1``,
  ``_B-2``, ... before the start and ``_B+1``, ``_B+2``, ... after the end.
* **Feature dicts** (sklearn-crfsuite style). A token is a dict such as
  ``{"w[0]": "the", "bias": 1.0, "upper": False}``; see
  :class:`FeatureExtractor` for how each kind of value becomes attributes.

Example
-------
>>> fx = FeatureExtractor(default_templates(2))
>>> train, = fx.fit_transform([[["He", "PRP"], ["reckons", "VBZ"]]])
>>> train.n_tokens, train.n_attributes
(2, 38)
"""

from __future__ import annotations

import math
import numbers
import os
import re
from collections.abc import Mapping
from itertools import chain, repeat
from operator import itemgetter
from typing import NamedTuple

import numpy as np

from . import _core
from .errors import SscrfError

__all__ = [
    "DEFAULT_TEMPLATES",
    "FeatureExtractor",
    "Features",
    "Templates",
    "default_templates",
    "parse_templates",
    "read_templates",
]


# ---------------------------------------------------------------------------
# Templates
# ---------------------------------------------------------------------------

# `%x[row,col]`; the sign of col is accepted here so that a negative column
# gets a clear message instead of "unsupported macro".
_MACRO = re.compile(r"%x\[\s*([+-]?\d+)\s*,\s*([+-]?\d+)\s*\]")


def _bos(k):
    """CRF++'s pad for the k-th position before the sentence start (k ≥ 1)."""
    return f"_B-{k}"


def _eos(k):
    """CRF++'s pad for the k-th position after the sentence end (k ≥ 1)."""
    return f"_B+{k}"


class Templates:
    """Parsed CRF++/Wapiti-style feature templates.

    Build with :func:`parse_templates`, :func:`read_templates` or
    :func:`default_templates`.

    Attributes
    ----------
    lines : tuple of str
        The lines as given, comments and blank lines included (saved in model
        files and parsed again on load).
    unigrams : tuple of tuple
        One compiled template per ``U`` line, in file order: a tuple of pieces,
        each a literal ``str`` or a ``(row, col)`` pair of ints meaning
        "column ``col`` of the token at offset ``row``".
    sources : tuple of str
        The ``U`` line each compiled template came from (for messages).
    max_column : int
        The largest column index any template reads; -1 when none reads one.
    """

    def __init__(self, lines, unigrams, sources):
        self.lines = tuple(lines)
        self.unigrams = tuple(unigrams)
        self.sources = tuple(sources)
        cells = [p for pieces in self.unigrams for p in pieces if type(p) is tuple]
        self.max_column = max((c for _, c in cells), default=-1)
        # CRF++ pads needed on each side of a sentence.
        self._before = max([0] + [-r for r, _ in cells])
        self._after = max([0] + [r for r, _ in cells])
        self._cells = sorted(set(cells))
        self._columns = sorted({c for _, c in cells})

    def __len__(self):
        """Number of unigram (``U``) templates."""
        return len(self.unigrams)

    def __eq__(self, other):
        if not isinstance(other, Templates):
            return NotImplemented
        return self.unigrams == other.unigrams

    def __hash__(self):
        return hash(self.unigrams)

    def __repr__(self):
        return f"<Templates: {len(self.unigrams)} unigram templates, max_column={self.max_column}>"

    @property
    def text(self):
        """The template lines joined into one string (a template file's content)."""
        return "\n".join(self.lines) + "\n"

    def _apply(self, columns, lengths):
        """Each template's attribute at every token of a corpus, factorised.

        Rather than build one string per token and template (millions on a
        corpus of 10^5 tokens, each hashed and looked up), column values are
        interned to small ints, each template's cells are combined into one
        integer key per token with numpy, and a string is built only for each
        distinct key.

        Parameters
        ----------
        columns : dict of int to list of str
            Column ``c`` of all N tokens of the corpus, sentence after
            sentence, for every column the templates read.
        lengths : ndarray of int64, shape (S,)
            Sentence lengths; they sum to N.

        Returns
        -------
        list of (inverse, first, strings), one per unigram template
            ``inverse`` : ndarray of int64, shape (N,), the distinct
            attribute that fires at each token; ``first`` : ndarray of int64,
            shape (U,), the first token where distinct attribute u fires;
            ``strings`` : list of U str, the attribute strings.
        """
        n = int(lengths.sum())
        if n == 0:
            return [(np.zeros(0, np.int64), np.zeros(0, np.int64), []) for _ in self.unigrams]
        # Per column: value ids, with the pads interned first so that
        # _bos(k) has id k - 1 and _eos(k) has id before + k - 1. A real value
        # spelled like a pad shares its id, as it shares its string.
        pads = [_bos(k) for k in range(1, self._before + 1)]
        pads += [_eos(k) for k in range(1, self._after + 1)]
        value_ids, value_strings = {}, {}
        for c in self._columns:
            table, strings = _core.AttributeIndex(pads), list(pads)
            value_ids[c] = table.intern(columns[c], True, strings)
            value_strings[c] = np.array(strings, dtype=object)

        # Position of each token in its sentence, and that sentence's length.
        length_of = np.repeat(lengths, lengths)
        position = np.arange(n) - np.repeat(np.cumsum(lengths) - lengths, lengths)
        cell_ids = {}
        for row, col in self._cells:
            cell_ids[row, col] = self._shift(value_ids[col], position, length_of, row)

        out = []
        every_token = np.arange(n)
        for pieces in self.unigrams:
            # key = Σ value_id · Π K over the template's cells (mixed radix,
            # K = size of the column's value table); compacted first when the
            # next digit could overflow int64.
            key = np.zeros(n, dtype=np.int64)
            bound = 1
            for piece in pieces:
                if type(piece) is str:
                    continue
                radix = len(value_strings[piece[1]])
                if bound * radix >= 1 << 62:
                    key, bound = _factorize(key, bound)
                key = key * radix + cell_ids[piece]
                bound *= radix
            inverse, n_distinct = _factorize(key, bound)
            first = np.full(n_distinct, n, dtype=np.int64)
            np.minimum.at(first, inverse, every_token)
            if all(type(piece) is str for piece in pieces):  # a constant attribute
                strings = ["".join(pieces)] * n_distinct
            else:
                parts = [
                    repeat(piece)
                    if type(piece) is str
                    else value_strings[piece[1]][cell_ids[piece][first]].tolist()
                    for piece in pieces
                ]
                strings = list(map("".join, zip(*parts)))
            out.append((inverse, first, strings))
        return out

    def _shift(self, ids, position, length_of, row):
        """Value ids at offset ``row`` from every token, pads outside the sentence.

        Parameters
        ----------
        ids : ndarray of int64, shape (N,)
            A column's value ids.
        position, length_of : ndarray of int64, shape (N,)
            Each token's position in its sentence and that sentence's length.
        row : int

        Returns
        -------
        ndarray of int64, shape (N,)
        """
        if row == 0:
            return ids
        target = position + row
        inside = (target >= 0) & (target < length_of)
        out = np.empty_like(ids)
        out[inside] = ids[np.flatnonzero(inside) + row]
        outside = ~inside
        if row < 0:
            # target = -k → _bos(k), id k - 1
            out[outside] = -target[outside] - 1
        else:
            # target = length - 1 + k → _eos(k), id before + k - 1
            out[outside] = self._before + (target - length_of)[outside]
        return out


_MAX_TEMPLATE_OFFSET = 1000  # padding strings are built per offset; keep that bounded


def _parse_line(line, where):
    """Compile one ``U`` template line into literal and (row, col) pieces."""
    pieces = []
    pos = 0
    for m in _MACRO.finditer(line):
        literal = line[pos : m.start()]
        if "%" in literal:
            raise SscrfError(
                f"{where}: unsupported macro in template {line!r} (only %x[row,col] is supported)"
            )
        if literal:
            pieces.append(literal)
        if len(m.group(1)) > 12 or len(m.group(2)) > 12:
            raise SscrfError(f"{where}: row or column number in template {line!r} is too large")
        row, col = int(m.group(1)), int(m.group(2))
        if abs(row) > _MAX_TEMPLATE_OFFSET:
            raise SscrfError(f"{where}: row offset {row} in template {line!r} is too large "
                             f"(at most ±{_MAX_TEMPLATE_OFFSET})")
        if col < 0:
            raise SscrfError(f"{where}: negative column {col} in template {line!r}")
        pieces.append((row, col))
        pos = m.end()
    tail = line[pos:]
    if "%" in tail:
        raise SscrfError(
            f"{where}: unsupported or malformed macro in template {line!r} "
            "(only %x[row,col] is supported)"
        )
    if tail:
        pieces.append(tail)
    return tuple(pieces)


def parse_templates(text_or_lines, source="<templates>"):
    """Parse CRF++/Wapiti-style feature templates.

    Blank lines and lines starting with ``#`` are ignored; surrounding
    whitespace of a line is ignored. A line starting with ``U`` is a unigram
    (state) template: its text with each ``%x[row,col]`` replaced by column
    ``col`` of the token at offset ``row`` from the current one is the
    attribute, with value 1.0 (a ``U`` line without macros, e.g. ``U99:bias``,
    fires on every token). A line starting with ``B`` and no macro stands for
    the first-order label transitions, which every model has anyway.

    Parameters
    ----------
    text_or_lines : str or sequence of str or Templates
        Template text, or its lines (a ``Templates`` is returned as is).
    source : str
        Name used in error messages (``read_templates`` passes the path).

    Returns
    -------
    Templates

    Raises
    ------
    SscrfError
        On a ``B`` line with macros (observation-conditioned transitions are
        not supported yet), a line starting with any other letter, a malformed
        or unsupported macro, a negative column, or no ``U`` line at all.
    """
    if isinstance(text_or_lines, Templates):
        return text_or_lines
    if isinstance(text_or_lines, str):
        lines = text_or_lines.splitlines()
    elif isinstance(text_or_lines, (list, tuple)):
        lines = []
        for k, item in enumerate(text_or_lines):
            if not isinstance(item, str):
                raise SscrfError(
                    f"{source}: template line {k + 1} is {type(item).__name__}, not str"
                )
            item = item.rstrip("\r\n")
            if "\n" in item or "\r" in item:
                raise SscrfError(f"{source}: template line {k + 1} contains a line break")
            lines.append(item)
    else:
        raise SscrfError(
            f"templates must be a str, a list of lines or a Templates, "
            f"not {type(text_or_lines).__name__}"
        )

    unigrams, sources = [], []
    for number, raw in enumerate(lines, start=1):
        line = raw.strip()
        where = f"{source}, line {number}"
        if not line or line.startswith("#"):
            continue
        if line[0] == "U":
            unigrams.append(_parse_line(line, where))
            sources.append(line)
        elif line[0] == "B":
            if "%" in line:
                raise SscrfError(
                    f"{where}: {line!r}: observation-conditioned transition templates "
                    "(B with %x macros) are not supported yet; use a bare 'B' line"
                )
        else:
            raise SscrfError(
                f"{where}: {line!r}: a template line must start with 'U' (unigram) or 'B' (bigram)"
            )
    if not unigrams:
        raise SscrfError(f"{source}: no unigram ('U') templates, so no token would get attributes")
    return Templates(lines, unigrams, sources)


def read_templates(path):
    """Read a template file (UTF-8); see :func:`parse_templates`.

    Parameters
    ----------
    path : str or os.PathLike

    Returns
    -------
    Templates
    """
    try:
        with open(path, encoding="utf-8-sig") as f:  # a byte-order mark is no template
            text = f.read()
    except UnicodeDecodeError as e:
        raise SscrfError(f"{os.fspath(path)}: template file is not UTF-8 ({e})") from None
    return parse_templates(text, source=os.fspath(path))


def default_templates(n_columns=2):
    """Default templates for tokens with ``n_columns`` columns.

    Column 0 (the word) gets unigrams at offsets -2..2 and the bigrams
    (-1, 0) and (0, 1). Every further column (POS tags and the like, whose
    vocabulary is small enough for longer n-grams) gets unigrams at -2..2,
    bigrams (-2,-1), (-1,0), (0,1), (1,2) and trigrams (-2,-1,0), (-1,0,1),
    (0,1,2). A bare ``B`` line closes the set.

    For ``(word, POS)`` columns these are the 19 templates of CRF++'s and
    CRFsuite's CoNLL-2000 chunking examples, except that positions outside the
    sentence give CRF++'s ``_B-k``/``_B+k`` pads where CRFsuite's example
    omits the attribute (and adds ``__BOS__``/``__EOS__`` instead).

    Parameters
    ----------
    n_columns : int
        Number of token columns, ≥ 1 (the label is not a token column).

    Returns
    -------
    Templates
        Named ``U00``, ``U01``, ... in order.
    """
    if isinstance(n_columns, bool) or not isinstance(n_columns, numbers.Integral) or n_columns < 1:
        raise SscrfError(f"n_columns must be a positive integer, not {n_columns!r}")
    cell_groups = []
    for c in range(int(n_columns)):
        cell_groups += [[(r, c)] for r in (-2, -1, 0, 1, 2)]
        bigrams = [(-1, 0), (0, 1)] if c == 0 else [(-2, -1), (-1, 0), (0, 1), (1, 2)]
        cell_groups += [[(a, c), (b, c)] for a, b in bigrams]
        if c > 0:
            cell_groups += [[(r, c) for r in rows] for rows in ((-2, -1, 0), (-1, 0, 1), (0, 1, 2))]
    lines = [
        f"U{k:02d}:" + "/".join(f"%x[{r},{c}]" for r, c in cells)
        for k, cells in enumerate(cell_groups)
    ]
    lines.append("B")
    return parse_templates(lines, source="default_templates")


#: The default templates for two-column ``word POS`` tokens (CoNLL-2000 style):
#: the text of ``default_templates(2)``. Use :func:`default_templates` for
#: other column counts.
DEFAULT_TEMPLATES = default_templates(2).text


# ---------------------------------------------------------------------------
# Interned feature matrices
# ---------------------------------------------------------------------------


class Features(NamedTuple):
    """A corpus as a CSR design matrix plus sentence offsets.

    Attributes
    ----------
    indptr : ndarray of int64, shape (n_tokens + 1,)
        Token t's attributes are ``indices[indptr[t]:indptr[t + 1]]``.
    indices : ndarray of int32, shape (nnz,)
        Attribute ids, unique and ascending within each token.
    values : ndarray of float64, shape (nnz,)
        Attribute values (duplicates of one attribute in a token summed).
        When every value is 1.0 (string and boolean features), a read-only
        view of a single 1.0 (``np.broadcast_to``) that takes no memory.
    offsets : ndarray of int64, shape (n_sentences + 1,)
        Sentence s is tokens ``offsets[s]:offsets[s + 1]``; an empty sentence
        repeats an offset.
    n_attributes : int
        Vocabulary size, the number of columns of the matrix.
    """

    indptr: np.ndarray
    indices: np.ndarray
    values: np.ndarray
    offsets: np.ndarray
    n_attributes: int

    @property
    def n_sentences(self):
        """Number of sentences."""
        return len(self.offsets) - 1

    @property
    def n_tokens(self):
        """Number of tokens over all sentences."""
        return len(self.indptr) - 1

    @property
    def nnz(self):
        """Number of stored (token, attribute) entries."""
        return len(self.indices)


_TEMPLATE_SLICE_TOKENS = 1 << 15


def _ones(n):
    """A read-only float64 array of ``n`` ones that stores one value (stride 0)."""
    return np.broadcast_to(np.float64(1.0), (n,))


def _is_ones(values):
    """True for the constant arrays of :func:`_ones`."""
    return values.ndim == 1 and values.strides == (0,) and (len(values) == 0 or values[0] == 1.0)


class _ValueProblem(Exception):
    """A bad feature-dict entry; the caller adds sentence and token to the message."""


_isfinite = math.isfinite


def _flatten_dict(token, prefix, names, values):
    """Append the (attribute, value) pairs of one feature dict.

    ``prefix`` is ``""`` at the top level and ``"outer:"`` inside a nested
    dict. Exact type checks come first because this runs for every feature of
    every token; subclasses and numpy scalars take the slower branch below.
    """
    for name, value in token.items():
        if type(name) is not str and not isinstance(name, str):
            raise _ValueProblem(f"feature name {name!r} is not a string")
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
            _flatten_other(prefix + name, value, names, values)


def _flatten_other(key, value, names, values):
    """The less common value kinds of :func:`_flatten_dict`."""
    if isinstance(value, str):
        names.append(f"{key}={value}")
        values.append(1.0)
    elif isinstance(value, (bool, np.bool_)):
        if value:
            names.append(key)
            values.append(1.0)
    elif isinstance(value, numbers.Real):
        v = float(value)
        if not _isfinite(v):
            raise _ValueProblem(f"feature {key} has non-finite value {value!r}")
        names.append(key)
        values.append(v)
    elif isinstance(value, Mapping):
        _flatten_dict(value, key + ":", names, values)
    elif isinstance(value, (list, tuple, set, frozenset)):
        if not all(isinstance(item, str) for item in value):
            bad = next(item for item in value if not isinstance(item, str))
            raise _ValueProblem(f"feature {key}: list items must be strings, got {bad!r}")
        # Set order varies between runs (string hashing is salted); sort so
        # that the vocabulary's order stays deterministic.
        items = sorted(value) if isinstance(value, (set, frozenset)) else value
        names.extend(f"{key}={item}" for item in items)
        values.extend(repeat(1.0, len(items)))
    else:
        raise _ValueProblem(
            f"feature {key} has a value of type {type(value).__name__}; expected str, "
            "int, float, bool, a list/tuple/set of str, or a nested dict"
        )


_COLUMN_TOKEN_TYPES = {list, tuple}


class FeatureExtractor:
    """Turns sentences into interned attribute matrices.

    Parameters
    ----------
    templates : None, Templates, str or list of str
        With templates (a ``Templates``, template text or its lines), a token
        is a list or tuple of column strings and attributes come from the
        templates. With ``None``, a token is a feature dict:

        - ``"name": "str"`` → attribute ``name=str``, value 1.0;
        - ``"name": 2.5`` (int or float, finite) → attribute ``name``, value 2.5
          (an explicit 0 is stored and counts as firing);
        - ``"name": True`` → ``name`` with 1.0; ``False`` → no attribute;
        - ``"name": ["a", "b"]`` (list, tuple or set of str) → ``name=a`` and
          ``name=b``, 1.0 each (a set in sorted order);
        - ``"name": {"k": v}`` → the same rules under the name ``name:k``
          (sklearn-crfsuite's flattening), recursively.

        An attribute appearing more than once in a token (e.g. two identical
        template lines) is stored once with the values summed.
    min_freq : int
        Attributes firing at fewer than ``min_freq`` tokens over everything
        given to :meth:`fit` are dropped from the vocabulary.

    Attributes
    ----------
    templates : Templates or None
    attributes_ : list of str or None
        Id → attribute string, most frequent first (the number of tokens an
        attribute occurs in, over every corpus given to ``fit``; ties in order
        of first occurrence); None before fit.
    n_columns_ : int or None
        Template mode: the fewest columns any token given to ``fit`` had
        (None in dict mode, before fit, or when ``fit`` saw no token).

    Notes
    -----
    ``fit_transform`` extracts each sentence once; ``fit`` followed by
    ``transform`` on the same data extracts it twice.
    """

    def __init__(self, templates=None, min_freq=1):
        self.templates = None if templates is None else parse_templates(templates)
        if (
            isinstance(min_freq, bool)
            or not isinstance(min_freq, numbers.Integral)
            or min_freq < 1
        ):
            raise SscrfError(f"min_freq must be an integer ≥ 1, not {min_freq!r}")
        self.min_freq = int(min_freq)
        self.attributes_ = None
        self.n_columns_ = None
        self._lookup = None  # attribute -> id (_core.AttributeIndex), built when first needed

    def __getstate__(self):
        state = dict(self.__dict__)
        state["_lookup"] = None  # compiled; rebuilt from attributes_ when needed
        return state

    def __repr__(self):
        mode = "dicts" if self.templates is None else f"{len(self.templates)} templates"
        size = "unfitted" if self.attributes_ is None else f"{len(self.attributes_)} attributes"
        return f"<FeatureExtractor: {mode}, min_freq={self.min_freq}, {size}>"

    # -- public API -----------------------------------------------------------

    def fit(self, *corpora):
        """Build the vocabulary from all sentences of all given corpora.

        Parameters
        ----------
        *corpora : list of sentences
            E.g. labeled, partially labeled and unlabeled inputs together; the
            ``min_freq`` cutoff counts over all of them.

        Returns
        -------
        self
        """
        self._fit(corpora)
        return self

    def fit_transform(self, *corpora):
        """Fit on all corpora and return each one's matrix.

        Returns
        -------
        list of Features
            One per corpus, in the order given.
        """
        return self._fit(corpora)

    def transform(self, X):
        """Interned attribute matrix of a corpus.

        Attributes outside the vocabulary (unseen at fit, or cut by
        ``min_freq``) are ignored.

        Parameters
        ----------
        X : list of sentences
            A sentence is a list or tuple of tokens; it may be empty.

        Returns
        -------
        Features
        """
        if self.attributes_ is None:
            raise SscrfError("this FeatureExtractor is not fitted yet; call fit first")
        if self._lookup is None:
            self._lookup = _core.AttributeIndex(self.attributes_)
        features, _ = self._features(X, self._lookup, "")
        return features

    def attribute_index(self):
        """Attribute string → id (a fresh dict).

        Returns
        -------
        dict of str to int
        """
        if self.attributes_ is None:
            raise SscrfError("this FeatureExtractor is not fitted yet; call fit first")
        return dict(zip(self.attributes_, range(len(self.attributes_))))

    def attribute_strings(self, sentence):
        """Per-token attributes of one sentence before interning (no fit needed).

        The same extraction as :meth:`transform`, for debugging and for
        constraint features ("which attributes fire at this token").

        Parameters
        ----------
        sentence : list or tuple of tokens

        Returns
        -------
        list of list of (str, float)
            Entry t lists token t's attributes in template (or dict) order,
            duplicates kept, without the vocabulary or ``min_freq`` applied.
        """
        tokens, lengths = _flatten_corpus([sentence], "")
        if self.templates is not None:
            columns, _ = self._columns(tokens, lengths, "")
            factors = self.templates._apply(columns, lengths)
            return [
                [(strings[inverse[t]], 1.0) for inverse, _, strings in factors]
                for t in range(len(tokens))
            ]
        names, values, counts = self._dict_pairs(tokens, lengths, "")
        out, start = [], 0
        for count in counts:
            out.append(list(zip(names[start : start + count], values[start : start + count])))
            start += count
        return out

    def to_state(self):
        """JSON-serialisable state for model files.

        Returns
        -------
        dict
            ``templates`` (list of str, or None in dict mode), ``min_freq``
            (int), ``attributes`` (list of str, or None before fit) and
            ``n_columns`` (int or None).
        """
        return {
            "templates": None if self.templates is None else list(self.templates.lines),
            "min_freq": self.min_freq,
            "attributes": None if self.attributes_ is None else list(self.attributes_),
            "n_columns": self.n_columns_,
        }

    @classmethod
    def from_state(cls, state):
        """Rebuild an extractor from :meth:`to_state`'s output, validating it.

        Raises
        ------
        SscrfError
            If the state is malformed (wrong keys or types, repeated attributes).
        """
        if not isinstance(state, Mapping):
            raise SscrfError(f"feature state must be a dict, not {type(state).__name__}")
        expected = {"templates", "min_freq", "attributes", "n_columns"}
        if set(state) != expected:
            raise SscrfError(
                f"feature state has keys {sorted(state)}, expected {sorted(expected)}"
            )
        templates = state["templates"]
        if templates is not None and not (
            isinstance(templates, list) and all(isinstance(x, str) for x in templates)
        ):
            raise SscrfError("feature state: 'templates' must be a list of str or null")
        self = cls(templates, state["min_freq"])
        attributes = state["attributes"]
        n_columns = state["n_columns"]
        if n_columns is not None and (
            isinstance(n_columns, bool) or not isinstance(n_columns, int) or n_columns < 0
        ):
            raise SscrfError(f"feature state: bad 'n_columns' {n_columns!r}")
        if attributes is not None:
            if not isinstance(attributes, list) or not all(isinstance(a, str) for a in attributes):
                raise SscrfError("feature state: 'attributes' must be a list of str or null")
            try:
                self._lookup = _core.AttributeIndex(attributes)
            except ValueError:
                raise SscrfError("feature state: 'attributes' contains repeated strings") from None
            self.attributes_ = list(attributes)
        self.n_columns_ = n_columns
        return self

    # -- extraction -----------------------------------------------------------

    def _fit(self, corpora):
        """Build the vocabulary; return each corpus' Features under it."""
        if not corpora:
            raise SscrfError("fit needs at least one corpus (a list of sentences)")
        # Provisional ids are handed out in first-occurrence order over all
        # corpora (the strings of new attributes go to `strings`); the
        # min_freq cutoff then keeps a subset, in that order.
        index, strings = _core.AttributeIndex(), []
        provisional = []
        n_columns = None
        for k, corpus in enumerate(corpora):
            prefix = f"corpus {k}, " if len(corpora) > 1 else ""
            features, shortest = self._features(corpus, index, prefix, grow=True,
                                                new_strings=strings)
            provisional.append(features)
            if shortest is not None:
                n_columns = shortest if n_columns is None else min(n_columns, shortest)

        n_ids = len(index)
        counts = np.zeros(n_ids, dtype=np.int64)
        for f in provisional:
            counts += np.bincount(f.indices, minlength=n_ids)
        # Final ids: the attributes kept by min_freq, most frequent first
        # (ties in order of first occurrence). Scoring reads an attribute's
        # weights at each of its occurrences; numbered this way, the weights
        # read most often share cache lines. On CoNLL-2000 a loss and
        # gradient took 4-7% less time than with first-occurrence ids
        # (observed pairs, five paired runs; dense: 13%, one run).
        kept = np.flatnonzero(counts >= self.min_freq)
        order = kept[np.argsort(-counts[kept], kind="stable")]
        new_id = np.full(n_ids, -1, dtype=np.int64)
        new_id[order] = np.arange(len(order))
        if len(order) == n_ids and (np.diff(order) > 0).all():
            self.attributes_ = strings  # the provisional ids are the final ones
            self._lookup = index
            self.n_columns_ = n_columns
            return [f._replace(n_attributes=n_ids) for f in provisional]
        attributes = [strings[i] for i in order.tolist()]
        del strings
        if len(order) == n_ids:
            index.renumber(new_id)
        else:
            index = None  # the index of the kept attributes is built when first needed
        self.attributes_ = attributes
        self._lookup = index
        self.n_columns_ = n_columns
        return [_renumber(f, new_id, len(attributes)) for f in provisional]

    def _features(self, X, index, prefix, grow=False, new_strings=None):
        """CSR matrix of a corpus under ``index`` (attribute -> id).

        ``index`` is an ``_core.AttributeIndex``. With ``grow`` (fitting), new
        attributes are added to ``index`` in order of first occurrence: token
        by token, and within a token in template or dict order; their strings
        are appended to ``new_strings``. Without, attributes outside ``index``
        are dropped.

        Returns
        -------
        features : Features
        shortest : int or None
            Template mode: the fewest columns of any token (None without tokens).
        """
        tokens, lengths = _flatten_corpus(X, prefix)
        offsets = np.zeros(len(lengths) + 1, dtype=np.int64)
        np.cumsum(lengths, out=offsets[1:])
        if self.templates is None:
            # One compiled pass: no string per (token, attribute) is built
            # (the key bytes are formed in a buffer), tokens of the common
            # kinds are read in C, any other token through _dict_pairs.
            def slow(i):
                names, values, _ = self._dict_pairs([tokens[i]], lengths, prefix, i)
                return names, values

            indptr, indices, values = index.dict_tokens_to_csr(
                tokens, grow, slow, [] if new_strings is None else new_strings)
            if values is None:
                values = _ones(len(indices))
            elif not (np.abs(values) <= _core.MAX_SCORE).all():
                # refused here, where the sentence and token can be named,
                # rather than by the core
                k = int(np.flatnonzero(~(np.abs(values) <= _core.MAX_SCORE))[0])
                i = int(np.searchsorted(indptr, k, side="right")) - 1
                s = int(np.searchsorted(offsets, i, side="right")) - 1
                why = (f"a feature's value (summed over its repeats in the token) is "
                       f"{float(values[k]):g}, above {_core.MAX_SCORE:g}, where the lattice "
                       "sums would overflow" if np.isfinite(values[k]) else
                       "summing the values of a repeated attribute overflowed to infinity")
                raise SscrfError(f"{prefix}sentence {s}, token {i - int(offsets[s])}: {why}")
            return Features(indptr, indices, values, offsets, len(index)), None

        columns, shortest = self._columns(tokens, lengths, prefix)
        # Slices of whole sentences of about _TEMPLATE_SLICE_TOKENS tokens:
        # the factorisation's per-token temporaries (int64 per cell and per
        # template) then exist for one slice at a time. Interning slice after
        # slice in each slice's reading order is interning in the corpus'
        # reading order, so ids are those of one pass over the whole corpus.
        ends = offsets[1:]
        indptr_parts, index_parts, value_parts = [], [], []
        begin, s0, nnz = 0, 0, 0
        while s0 < len(lengths):
            s1 = max(int(np.searchsorted(ends, begin + _TEMPLATE_SLICE_TOKENS, side="right")),
                     s0 + 1)
            end = int(ends[s1 - 1])
            part = self._template_slice({c: v[begin:end] for c, v in columns.items()},
                                        lengths[s0:s1], index, grow, new_strings)
            indptr_parts.append(part.indptr[1:] + nnz)
            nnz += part.nnz
            index_parts.append(part.indices)
            value_parts.append(part.values)
            begin, s0 = end, s1
        del columns
        indptr = np.concatenate([np.zeros(1, np.int64)] + indptr_parts)
        indices = np.concatenate(index_parts) if index_parts else np.zeros(0, np.int32)
        del index_parts
        if all(map(_is_ones, value_parts)):
            values = _ones(len(indices))
        else:
            values = np.concatenate([np.ones(len(v)) if _is_ones(v) else v for v in value_parts])
        return Features(indptr, indices, values, offsets, len(index)), shortest

    def _template_slice(self, columns, lengths, index, grow, new_strings):
        """CSR of a run of whole sentences (template mode); see :meth:`_features`."""
        factors = self.templates._apply(columns, lengths)
        # One id per distinct (template, attribute) pair.
        strings = list(chain.from_iterable(s for _, _, s in factors))
        if grow:
            # Intern in order of first occurrence (by token, then template)
            # so that new attributes are numbered in reading order.
            first = np.concatenate([f for _, f, _ in factors])
            template = np.repeat(np.arange(len(factors)), [len(f) for _, f, _ in factors])
            order = np.lexsort((template, first))
            ids = np.empty(len(strings), dtype=np.int64)
            ids[order] = index.intern(list(map(strings.__getitem__, order.tolist())), True,
                                      new_strings)
        else:
            ids = index.intern(strings, False, [])
        del strings
        # matrix[t, j]: the id of template j's attribute at token t.
        matrix = np.empty((int(lengths.sum()), len(factors)), dtype=np.int32)
        start = 0
        for j, (inverse, _, template_strings) in enumerate(factors):
            matrix[:, j] = ids[start : start + len(template_strings)][inverse]
            start += len(template_strings)
        del factors
        offsets = np.zeros(len(lengths) + 1, dtype=np.int64)
        np.cumsum(lengths, out=offsets[1:])
        return _csr_from_matrix(matrix, offsets, len(index))

    def _columns(self, tokens, lengths, prefix):
        """The columns the templates read, checked: lists of str, one per token.

        Returns
        -------
        columns : dict of int to list of str
        shortest : int or None
            Fewest columns of any token (None without tokens).
        """
        templates = self.templates
        if not tokens:
            return {c: [] for c in templates._columns}, None
        if not set(map(type, tokens)) <= _COLUMN_TOKEN_TYPES:
            for i, token in enumerate(tokens):
                if not isinstance(token, (list, tuple)):
                    hint = (
                        "; feature dicts need templates=None "
                        "(CRF's default; FeatureExtractor(None))"
                        if isinstance(token, Mapping)
                        else ""
                    )
                    raise SscrfError(
                        f"{_locate(prefix, lengths, i)}: with templates a token must be a list "
                        f"or tuple of column strings, not {type(token).__name__}{hint}"
                    )
        shortest = min(map(len, tokens))
        if shortest <= templates.max_column:
            i = next(i for i, token in enumerate(tokens) if len(token) <= templates.max_column)
            width = len(tokens[i])
            column, user = next(
                (p[1], src)
                for src, pieces in zip(templates.sources, templates.unigrams)
                for p in pieces
                if type(p) is tuple and p[1] >= width
            )
            raise SscrfError(
                f"{_locate(prefix, lengths, i)}: token has {width} column(s) but template "
                f"{user!r} uses column {column}"
            )
        columns = {}
        for c in templates._columns:
            values = list(map(itemgetter(c), tokens))
            if set(map(type, values)) != {str}:
                for i, v in enumerate(values):
                    if not isinstance(v, str):
                        raise SscrfError(
                            f"{_locate(prefix, lengths, i)}: column {c} is "
                            f"{type(v).__name__}, not str"
                        )
            columns[c] = values
        return columns, shortest

    def _dict_pairs(self, tokens, lengths, prefix, first=0):
        """Token-major (attribute, value) pairs of feature-dict tokens.

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
                raise SscrfError(f"{_locate(prefix, lengths, first + i)}: {why}")
            before = len(names)
            try:
                _flatten_dict(token, "", names, values)
            except _ValueProblem as e:
                raise SscrfError(f"{_locate(prefix, lengths, first + i)}: {e}") from None
            counts.append(len(names) - before)
        return names, values, counts


def _flatten_corpus(X, prefix):
    """All tokens of a corpus in one list, and the sentence lengths.

    Returns
    -------
    tokens : list
    lengths : ndarray of int64, shape (n_sentences,)
    """
    if isinstance(X, (str, bytes, Mapping)) or not hasattr(X, "__iter__"):
        raise SscrfError(f"{prefix}X must be a list of sentences, not {type(X).__name__}")
    tokens, lengths = [], []
    for s, sentence in enumerate(X):
        if type(sentence) is not list and not isinstance(sentence, (list, tuple)):
            raise SscrfError(
                f"{prefix}sentence {s}: a sentence must be a list or tuple of tokens, "
                f"not {type(sentence).__name__}"
            )
        tokens += sentence
        lengths.append(len(sentence))
    return tokens, np.array(lengths, dtype=np.int64)


def _locate(prefix, lengths, i):
    """'[corpus k, ]sentence s, token t' for the i-th token of a corpus."""
    ends = np.cumsum(lengths)
    s = int(np.searchsorted(ends, i, side="right"))
    t = i - int(ends[s] - lengths[s])
    return f"{prefix}sentence {s}, token {t}"


def _factorize(keys, bound):
    """Compact codes for integer keys.

    Parameters
    ----------
    keys : ndarray of int64, shape (N,)
        Values in ``[0, bound)``.
    bound : int

    Returns
    -------
    codes : ndarray of int64, shape (N,)
        ``codes[i] < codes[j]`` iff ``keys[i] < keys[j]``; codes are 0..U-1.
    n_distinct : int
        U, the number of distinct keys.
    """
    if bound <= 4 * len(keys) + (1 << 16):
        # Small key range (one column's values, POS n-grams): a presence
        # table, no sort.
        present = np.zeros(bound, dtype=bool)
        present[keys] = True
        code = np.cumsum(present) - 1
        return code[keys], int(code[-1]) + 1
    order = np.argsort(keys)
    ordered = keys[order]
    new = np.ones(len(keys), dtype=bool)
    np.not_equal(ordered[1:], ordered[:-1], out=new[1:])
    codes = np.empty(len(keys), dtype=np.int64)
    codes[order] = np.cumsum(new) - 1
    return codes, int(new.sum())


def _csr_from_matrix(matrix, offsets, n_ids):
    """CSR from one attribute id per (token, template); -1 means absent.

    Parameters
    ----------
    matrix : ndarray of int32, shape (N, J)
        Sorted in place along rows. An id repeated in a row (two templates
        producing the same string) becomes one entry with the count as value.
    offsets : ndarray of int64, shape (n_sentences + 1,)
    n_ids : int

    Returns
    -------
    Features
    """
    n, width = matrix.shape
    matrix.sort(axis=1)
    flat = matrix.ravel()
    # Runs of equal ids within a row; a row always starts a new run.
    new = np.ones(len(flat), dtype=bool)
    np.not_equal(flat[1:], flat[:-1], out=new[1:])
    new[::width] = True
    starts = np.flatnonzero(new)
    run_lengths = np.diff(starts, append=len(flat))
    ids = flat[starts]
    known = ids >= 0
    starts, run_lengths, ids = starts[known], run_lengths[known], ids[known]
    indptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(starts // width, minlength=n), out=indptr[1:])
    # A count above 1 only where two templates give the same string.
    values = _ones(len(ids)) if (run_lengths == 1).all() else run_lengths.astype(np.float64)
    return Features(indptr, ids.astype(np.int32), values, offsets, n_ids)


def _renumber(features, new_id, n_ids):
    """Map provisional ids through ``new_id`` (-1 = dropped) and sort each
    token's ids again (ascending, as every Features has them)."""
    ones = _is_ones(features.values)
    indptr, indices, values = _core.renumber_csr(features.indptr, features.indices,
                                                 None if ones else features.values, new_id)
    return Features(indptr, indices, _ones(len(indices)) if ones else values, features.offsets,
                    n_ids)
