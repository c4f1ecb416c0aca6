"""CRF++/Wapiti-style feature templates: parsing, the default set, and factorised application.

A token is a list of column strings, e.g. ``["Confidence", "NN"]``; a template
line such as ``U05:%x[-1,0]/%x[0,0]`` gives the attribute
``U05:<col 0 at t-1>/<col 0 at t>`` with value 1.0. Positions outside the
sentence read as CRF++'s pads ``_B-1``, ``_B-2``, ... before the start and
``_B+1``, ``_B+2``, ... after the end.

Bounds: a template's work and memory grow with the corpus times its size
(each distinct cell ``(row, col)`` is an int64 array over the tokens, each
distinct attribute a string holding the template's text), so a template set
is held to sizes far above any real one (CRF++'s CoNLL-2000 set: 19
templates, at most 3 cells and 5 characters of text each, 10 distinct
cells): at most :data:`MAX_TEMPLATES` ``U`` templates, :data:`MAX_TEMPLATE_CELLS`
cells and :data:`MAX_TEMPLATE_TEXT` characters of text (besides the cells)
per template, :data:`MAX_DISTINCT_CELLS` distinct cells in all, rows within
±:data:`MAX_TEMPLATE_OFFSET` and columns up to :data:`MAX_TEMPLATE_COLUMN`.
A template file (or a model's templates) past them is refused with
an ``SscrfError`` naming the bound.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Iterator, Sequence
from itertools import repeat
from typing import TYPE_CHECKING, Any, Optional, Union

import numpy as np

from .. import _core
from ..errors import SscrfError, SscrfTypeError
from ..inputs import check_integer, check_threads
from ..resources import read_bounded

if TYPE_CHECKING:
    from numpy.typing import NDArray

    # A compiled template's piece: a literal str or a (row, col) pair of ints
    # (Any: the code tells them apart by type(piece) is str, which mypy does not narrow).
    _Piece = Any
    # One template's result: (inverse, first, strings), see Templates.apply.
    _Factor = tuple[NDArray[np.int64], NDArray[np.int64], list[str]]

__all__ = ["DEFAULT_TEMPLATES", "MAX_DISTINCT_CELLS", "MAX_TEMPLATES", "MAX_TEMPLATE_CELLS",
           "MAX_TEMPLATE_COLUMN", "MAX_TEMPLATE_OFFSET", "MAX_TEMPLATE_TEXT", "Templates",
           "default_templates", "parse_templates", "read_templates"]

#: ``U`` templates in one set.
MAX_TEMPLATES = 1000
#: ``%x[row,col]`` cells in one template.
MAX_TEMPLATE_CELLS = 32
#: Characters of a template besides its cells (its name, separators): the
#: fixed part of every attribute string it makes.
MAX_TEMPLATE_TEXT = 256
#: Distinct ``(row, col)`` cells over all templates (8 bytes per token each).
MAX_DISTINCT_CELLS = 512
#: |row| of a cell: the pad strings are built per offset.
MAX_TEMPLATE_OFFSET = 1000
#: col of a cell.
MAX_TEMPLATE_COLUMN = 1000

# `%x[row,col]`; the sign of col is accepted here so that a negative column
# gets a clear message instead of "unsupported macro".
_MACRO = re.compile(r"%x\[\s*([+-]?\d+)\s*,\s*([+-]?\d+)\s*\]")


def _bos(k: int) -> str:
    """CRF++'s pad for the k-th position before the sentence start (k ≥ 1)."""
    return f"_B-{k}"


def _eos(k: int) -> str:
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
    columns : list of int
        The column indices the templates read, ascending.
    """

    def __init__(self, lines: Iterable[str], unigrams: Iterable[tuple[_Piece, ...]],
                 sources: Iterable[str]) -> None:
        self.lines = tuple(lines)
        self.unigrams = tuple(unigrams)
        self.sources = tuple(sources)
        cells = [p for pieces in self.unigrams for p in pieces if type(p) is tuple]
        self.max_column = max((c for _, c in cells), default=-1)
        # CRF++ pads needed on each side of a sentence.
        self._before = max([0] + [-r for r, _ in cells])
        self._after = max([0] + [r for r, _ in cells])
        self._cells = sorted(set(cells))
        self.columns = sorted({c for _, c in cells})

    def __len__(self) -> int:
        """Number of unigram (``U``) templates."""
        return len(self.unigrams)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Templates):
            return NotImplemented
        return self.unigrams == other.unigrams

    def __hash__(self) -> int:
        return hash(self.unigrams)

    def __repr__(self) -> str:
        return f"<Templates: {len(self.unigrams)} unigram templates, max_column={self.max_column}>"

    @property
    def text(self) -> str:
        """The template lines joined into one string (a template file's content)."""
        return "\n".join(self.lines) + "\n"

    @property
    def _core_pieces(self) -> list[list[_Piece]]:
        """The pieces as the core reads them: a cell names its column's
        position in :attr:`columns`."""
        slot = {c: k for k, c in enumerate(self.columns)}
        return [[p if type(p) is str else (p[0], slot[p[1]]) for p in pieces]
                for pieces in self.unigrams]

    def expand(self, columns: Any, offsets: NDArray[np.int64], index: Any, grow: bool = False,
               new_strings: Optional[list[str]] = None, n_threads: Optional[int] = None
               ) -> Any:
        """Every template's attribute at every token, interned, as a CSR matrix (compiled).

        The same attributes as :meth:`apply`, built in C++ in parallel over
        blocks of tokens; the ids and their order do not depend on the
        thread count.

        Parameters
        ----------
        columns : list of (ndarray of uint8, ndarray of int64)
            One ``(data, value_offsets)`` pair per entry of :attr:`columns`:
            value i of the column is ``data[value_offsets[i]:value_offsets[i + 1]]``,
            UTF-8 (``str.encode("utf-8", "surrogatepass")``), as
            ``sscrf._core.encode_strings`` and ``encode_columns`` give it.
        offsets : ndarray of int64, shape (n_sentences + 1,)
            Sentence s is tokens ``offsets[s]:offsets[s + 1]``.
        index : sscrf._core.AttributeIndex
            Attribute string -> id.
        grow : bool
            Add the attributes missing from ``index``, in order of first
            occurrence (token by token, then template order), appending their
            strings to ``new_strings``; without, they are dropped.
        new_strings : list of str or None
            None: the new strings are not made (``index.strings(ids)`` gives
            them later, in any order).
        n_threads : int or None
            None: every core.

        Returns
        -------
        indptr : ndarray of int64, shape (N + 1,)
        indices : ndarray of int32, shape (nnz,)
            Ascending within a token.
        values : ndarray of float64 or None
            None when every value is 1.0; else the number of templates giving
            each attribute at the token.
        """
        return index.templates_to_csr(self._core_pieces, columns, offsets, grow,
                                      check_threads(n_threads), new_strings)

    def fit_expand(self, columns: Any, offsets: NDArray[np.int64], index: Any, min_freq: int,
                   n_threads: Optional[int] = None) -> Any:
        """:meth:`expand` with ``grow`` into an empty ``index``, ids in the fit's final order
        where the core can give them.

        The final order is :func:`sscrf.features.vocabulary.frequency_order`'s:
        the most tokens first, ties in order of first occurrence, attributes
        in fewer than ``min_freq`` tokens dropped. The core applies it when
        the corpus is expanded in one slice (a few million (token, template)
        entries) and no two templates or tuples make one attribute string;
        the CSR is then built once, in final ids, rather than renumbered.

        Returns
        -------
        indptr, indices, values
            As :meth:`expand`'s, in final ids when ``order`` is not None,
            else in ``index``'s first-occurrence ids.
        order : ndarray of int64 or None
            Entry ``i``: the ``index`` id of final id ``i``.
        attributes : list of str or None
            With ``order``, where the core made them: the string of each
            final id (made while the index was filled, on another thread).
        """
        return index.fit_templates(self._core_pieces, columns, offsets,
                                   check_threads(n_threads), min_freq)

    def apply(self, columns: dict[int, list[str]], lengths: NDArray[np.int64]
              ) -> list[_Factor]:
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
        return list(self.apply_each(columns, lengths))

    def apply_each(self, columns: dict[int, list[str]], lengths: NDArray[np.int64]
                   ) -> Iterator[_Factor]:
        """:meth:`apply`'s list one template at a time (a generator), so that a
        caller that only looks the strings up holds one template's strings, not
        every template's (a string per distinct attribute and template: 11 GB
        for 1,000 templates on 65,536 tokens when all are held)."""
        n = int(lengths.sum())
        if n == 0:
            for _ in self.unigrams:
                yield np.zeros(0, np.int64), np.zeros(0, np.int64), []
            return
        # Per column: value ids, with the pads interned first so that
        # _bos(k) has id k - 1 and _eos(k) has id before + k - 1. A real value
        # spelled like a pad shares its id, as it shares its string.
        pads = [_bos(k) for k in range(1, self._before + 1)]
        pads += [_eos(k) for k in range(1, self._after + 1)]
        value_ids, value_strings = {}, {}
        for c in self.columns:
            table, strings = _core.AttributeIndex(pads), list(pads)
            value_ids[c] = table.intern(columns[c], True, strings)
            value_strings[c] = np.array(strings, dtype=object)

        # Position of each token in its sentence, and that sentence's length.
        length_of = np.repeat(lengths, lengths)
        position = np.arange(n) - np.repeat(np.cumsum(lengths) - lengths, lengths)
        cell_ids = {}
        for row, col in self._cells:
            cell_ids[row, col] = self._shift(value_ids[col], position, length_of, row)

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
            yield inverse, first, strings

    def _shift(self, ids: NDArray[np.int64], position: NDArray[np.int64],
               length_of: NDArray[np.int64], row: int) -> NDArray[np.int64]:
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


def _parse_line(line: str, where: str) -> tuple[_Piece, ...]:
    """Compile one ``U`` template line into literal and (row, col) pieces."""
    pieces: list[_Piece] = []
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
        if abs(row) > MAX_TEMPLATE_OFFSET:
            raise SscrfError(f"{where}: row offset {row} in template {line!r} is too large "
                             f"(at most ±{MAX_TEMPLATE_OFFSET})")
        if col < 0:
            raise SscrfError(f"{where}: negative column {col} in template {line!r}")
        if col > MAX_TEMPLATE_COLUMN:
            raise SscrfError(f"{where}: column {col} in template {_short(line)} is too large "
                             f"(at most {MAX_TEMPLATE_COLUMN})")
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
    cells = sum(type(p) is tuple for p in pieces)
    if cells > MAX_TEMPLATE_CELLS:
        raise SscrfError(f"{where}: template {_short(line)} has {cells} cells, more than the "
                         f"{MAX_TEMPLATE_CELLS} a template may have")
    text = sum(len(p) for p in pieces if type(p) is str)
    if text > MAX_TEMPLATE_TEXT:
        raise SscrfError(f"{where}: template {_short(line)} has {text} characters besides its "
                         f"cells, more than the {MAX_TEMPLATE_TEXT} a template may have")
    return tuple(pieces)


def _short(line: str) -> str:
    """A template line for messages: the first 60 characters of a long one."""
    return repr(line) if len(line) <= 60 else f"{line[:60]!r}... ({len(line):,} characters)"


def parse_templates(text_or_lines: Union[Templates, str, Sequence[str]],
                    source: str = "<templates>") -> Templates:
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
        or unsupported macro, a negative column, no ``U`` line at all, or a
        set past the bounds of the module docstring (1,000 templates; 32
        cells and 256 characters of text per template; 512 distinct cells).
    """
    if isinstance(text_or_lines, Templates):
        return text_or_lines
    if isinstance(text_or_lines, str):
        lines = text_or_lines.splitlines()
    elif isinstance(text_or_lines, (list, tuple)):
        lines = []
        for k, item in enumerate(text_or_lines):
            if not isinstance(item, str):
                raise SscrfTypeError(
                    f"{source}: template line {k + 1} is {type(item).__name__}, not str"
                )
            item = item.rstrip("\r\n")
            if "\n" in item or "\r" in item:
                raise SscrfError(f"{source}: template line {k + 1} contains a line break")
            lines.append(item)
    else:
        raise SscrfTypeError(
            f"templates must be a str, a list of lines or a Templates, "
            f"not {type(text_or_lines).__name__}"
        )

    unigrams: list[tuple[_Piece, ...]] = []
    sources: list[str] = []
    for number, raw in enumerate(lines, start=1):
        line = raw.strip()
        where = f"{source}, line {number}"
        if not line or line.startswith("#"):
            continue
        if line[0] == "U":
            if len(unigrams) == MAX_TEMPLATES:
                raise SscrfError(f"{where}: more than {MAX_TEMPLATES} unigram ('U') templates, "
                                 "the most a template set may have")
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
    cells = {p for pieces in unigrams for p in pieces if type(p) is tuple}
    if len(cells) > MAX_DISTINCT_CELLS:
        raise SscrfError(f"{source}: the templates read {len(cells)} distinct cells "
                         f"(row, column), more than the {MAX_DISTINCT_CELLS} a template set "
                         "may read")
    return Templates(lines, unigrams, sources)


def read_templates(path: Union[str, "os.PathLike[str]"]) -> Templates:
    """Read a template file (UTF-8); see :func:`parse_templates`.

    Parameters
    ----------
    path : str or os.PathLike

    Returns
    -------
    Templates
    """
    name = os.fsdecode(os.fspath(path))
    with open(path, "rb") as f:
        data = read_bounded(f, name)
    try:
        text = data.decode("utf-8-sig")  # a byte-order mark is no template
    except UnicodeDecodeError as e:
        raise SscrfError(f"{os.fspath(path)}: template file is not UTF-8 ({e})") from None
    return parse_templates(text, source=os.fspath(path))


def default_templates(n_columns: int = 2) -> Templates:
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
    n_columns = check_integer(n_columns, "n_columns", minimum=1)
    cell_groups = []
    for c in range(n_columns):
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


def _factorize(keys: NDArray[np.int64], bound: int) -> tuple[NDArray[np.int64], int]:
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
