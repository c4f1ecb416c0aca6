"""Reading and writing CoNLL column files and CoNLL-U.

CoNLL column files (CoNLL-2000, CoNLL-2003, BC2GM, ...) hold one token per
line as whitespace-separated columns, the label last, with a blank line
between sentences. ``#`` is an ordinary token there, not a comment: CoNLL-2000
and BC2GM contain the token ``#``. CoNLL-U files hold ten tab-separated
columns and ``#`` comment lines.

Every format error raises :class:`~sscrf.errors.SscrfError` with a message of
the form ``"FILE:LINE: problem"``.
"""

from __future__ import annotations

import contextlib
import gc
import io as stdio
import os
import re
import time
from collections.abc import Iterable, Iterator, Sequence
from typing import IO, TYPE_CHECKING, Any, List, NamedTuple, Optional, Union

from .errors import SscrfError, SscrfTypeError
from .progress import Progress
from .resources import MAX_LINE_BYTES, line_too_long
from .serialization import replace_file

if TYPE_CHECKING:
    #: A path, or a file already open (text, or binary decoded as a path's bytes).
    Source = Union[str, "os.PathLike[str]", IO[Any]]
    #: What a reader yields per sentence: (first line number, tokens, labels).
    SentenceRecord = tuple[int, list[list[str]], list[Any]]

__all__ = [
    "ConllCorpus",
    "read_conll",
    "write_conll",
    "read_conllu",
    "text_sentences",
    "label_inventory",
    "CONLLU_COLUMNS",
]

#: Column names of CoNLL-U, in file order.
CONLLU_COLUMNS = ("id", "form", "lemma", "upos", "xpos", "feats", "head", "deprel", "deps", "misc")

# ASCII whitespace only: str.split() would also split on U+00A0, U+2009 and
# other Unicode spaces, which occur inside tokens of real corpora.
_SEP = re.compile(r"[ \t\r\f\v]+")
_SEP_CHARS = " \t\r\f\v"
_CELL_FORBIDDEN = re.compile(r"[ \t\r\n\f\v]")
# What str.split() also splits on (besides _SEP_CHARS and "\n"); where none
# of these occurs, line.split() gives _SEP's columns.
_OTHER_SPACE = re.compile("[\x1c-\x1f\x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]")

_CONLLU_WORD_ID = re.compile(r"[0-9]+")
_CONLLU_RANGE_ID = re.compile(r"[0-9]+-[0-9]+")
_CONLLU_EMPTY_ID = re.compile(r"[0-9]+\.[0-9]+")


class ConllCorpus(NamedTuple):
    """Sentences read from a CoNLL or CoNLL-U file.

    Attributes
    ----------
    tokens : list of list of list of str
        ``tokens[i][j]`` is the list of column strings of token ``j`` of
        sentence ``i`` (the label column excluded).
    labels : list of list or None
        ``labels[i][j]`` is the label of token ``j`` of sentence ``i``: a
        ``str``, or with ``label_sets=True`` also a ``frozenset`` of str
        (ambiguous annotation) or ``None`` (not annotated). ``None`` as a
        whole when the file was read without labels.
    lines : list of int
        1-based line number of each sentence's first token, for messages
        that point back into the file.
    """

    tokens: List[List[List[str]]]
    labels: Optional[List[list]]
    lines: List[int]


def source_name(path: Any) -> str:
    """A path or an open file as messages name it: a file opened from a descriptor has an
    int name, and 0 is standard input."""
    if hasattr(path, "read"):
        name = getattr(path, "name", None)
        return name if isinstance(name, str) else "<stdin>" if name == 0 else "<stream>"
    return os.fsdecode(os.fspath(path))


class _Source:
    """A text source given as a path or an open file (text, or binary and then
    decoded as a path's bytes are); yields (lineno, line)."""

    def __init__(self, path: Any, encoding: str) -> None:
        self.binary = False
        self.wrapper: Optional[stdio.TextIOWrapper] = None
        self.file: Any
        self.name = source_name(path)
        if hasattr(path, "read"):
            self.file = path
            self.owned = False
            if isinstance(path, (stdio.RawIOBase, stdio.BufferedIOBase)):
                # sys.stdin.buffer, gzip.open(...): read like a path's bytes
                self.binary = _ascii_compatible(encoding)
                if not self.binary:
                    self.file = self.wrapper = stdio.TextIOWrapper(
                        path, encoding=encoding)  # type: ignore[arg-type]
        else:
            # An ASCII-compatible encoding is decoded line by line from bytes,
            # so an undecodable byte is reported at its exact line.
            self.binary = _ascii_compatible(encoding)
            self.file = open(self.name, "rb") if self.binary else open(self.name, encoding=encoding)
            self.owned = True
        self.encoding = encoding

    def __enter__(self) -> _Source:
        return self

    def __exit__(self, *exc: object) -> None:
        if self.owned:
            self.file.close()
        elif self.wrapper is not None:
            self.wrapper.detach()  # the caller's stream stays open

    def lines(self) -> Iterator[tuple[int, str]]:
        lineno = 0  # lines as a text editor counts them: "\n", "\r\n" or a lone "\r" ends one
        try:
            for physical, line in enumerate(self._bounded_lines(), 1):
                if line is None:
                    raise line_too_long(self.name, lineno + 1)
                if self.binary:
                    try:
                        line = line.decode(self.encoding)
                    except UnicodeDecodeError as exc:
                        raise SscrfError(f"{self.name}:{lineno + 1}: cannot decode as "
                                         f"{self.encoding}: {exc.reason}"
                                         f"{_encoding_hint(line) if physical == 1 else ''}"
                                         ) from None
                if not isinstance(line, str):
                    raise SscrfError(f"{self.name}: open the file in text mode, not binary")
                if physical == 1 and line.startswith("\ufeff"):
                    line = line[1:]  # a byte-order mark (Windows editors write one) is no text
                # Streams opened with newline="" keep "\r\n"; old Mac files end
                # lines with "\r" alone, which would otherwise read as one line.
                line = line.rstrip("\r\n")
                if "\r" in line:
                    for piece in line.split("\r"):
                        lineno += 1
                        yield lineno, piece
                else:
                    lineno += 1
                    yield lineno, line
        except UnicodeDecodeError as exc:
            # The decoder works on blocks, so the line count is only a lower bound.
            raise SscrfError(
                f"{self.name}: cannot decode as {self.encoding} at or after line "
                f"{lineno + 1}: {exc.reason}"
            ) from None

    def _bounded_lines(self) -> Iterator[Any]:
        """The file's lines as read, None for one longer than MAX_LINE_BYTES: readline's
        limit ends a line that has no end (a stream of NUL bytes) where the file has it."""
        readline = getattr(self.file, "readline", None)
        if readline is None:  # a file-like object that only iterates
            for line in self.file:
                yield None if len(line) > MAX_LINE_BYTES else line
            return
        limit = MAX_LINE_BYTES + 1
        while True:
            line = readline(limit)
            if not line:
                return
            yield None if len(line) == limit and line[-1:] not in ("\n", b"\n") else line

    def error(self, lineno: int, message: str) -> SscrfError:
        return SscrfError(f"{self.name}:{lineno}: {message}")


def text_sentences(path: Source, encoding: str = "utf-8") -> Iterator[list[str]]:
    """The words of raw text, one sentence a line, split on whitespace; blank lines are
    skipped. Read as a stream, with the CoNLL readers' checks (the line of an
    undecodable byte, a byte-order mark, line lengths)."""
    with _Source(path, encoding) as src:
        for _, line in src.lines():
            words = line.split()
            if words:
                yield words


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector while a reader builds its lists.

    A corpus is millions of small lists and strings that hold no reference
    cycles, but each allocation counts towards the collector's thresholds,
    and its collections walk every list made so far (reading a corpus of
    10^6 tokens took about 2.5 times as long with them)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _encoding_hint(first_line: bytes) -> str:
    """What the first bytes of an undecodable file suggest it is."""
    if first_line.startswith(b"\x1f\x8b"):
        return " (the file looks gzip-compressed: decompress it first)"
    if first_line.startswith((b"\xff\xfe", b"\xfe\xff")):
        return " (the file starts with a UTF-16 byte-order mark: re-encode it as UTF-8)"
    return ""


def _ascii_compatible(encoding: str) -> bool:
    try:
        return "\na 1".encode(encoding) == b"\na 1"
    except (LookupError, UnicodeError):
        return False


def _label_list(labels: Iterable[str], what: str = "labels") -> list[str]:
    """Validate an explicit label list: unique strings, order kept."""
    if isinstance(labels, (str, bytes)):
        raise SscrfTypeError(f"{what} must be an iterable of label strings, not a single string")
    out = list(labels)
    seen = set()
    for label in out:
        if not isinstance(label, str):
            raise SscrfTypeError(f"{what} must contain strings, found {label!r}")
        if label in seen:
            raise SscrfError(f"{what} contains {label!r} twice")
        seen.add(label)
    return out


def read_conll(path: Source, *, has_labels: bool = True, label_sets: bool = False,
               labels: Optional[Iterable[str]] = None, encoding: str = "utf-8",
               verbose: bool = False) -> ConllCorpus:
    """Read a CoNLL column file.

    Columns are separated by runs of spaces or tabs; sentences by blank (or
    whitespace-only) lines. Lines whose first column is ``-DOCSTART-`` are
    skipped and end the current sentence. ``#`` is not a comment.

    Parameters
    ----------
    path : str, os.PathLike or file object
        The file. An open file's ``.name`` (or ``"<stream>"``) is used in
        messages. A binary file (``sys.stdin.buffer``, ``gzip.open(p)``)
        is decoded with ``encoding`` as a path's bytes are.
    has_labels : bool, default True
        Whether the last column is the label.
    label_sets : bool, default False
        Read partial and ambiguous annotations: a label cell ``A|B|C`` becomes
        ``frozenset({"A", "B", "C"})`` (``A|A`` becomes ``"A"``) and ``*``
        becomes ``None`` (not annotated). Without the flag, ``|`` and ``*`` are
        ordinary characters of a label.
    labels : iterable of str, optional
        The allowed labels; any other label, alone or inside a set, is an
        error.
    encoding : str, default "utf-8"
        Used when ``path`` is a path.
    verbose : bool, default False
        Report the tokens read and the rate every million tokens
        (:class:`sscrf.progress.Progress`).

    Returns
    -------
    ConllCorpus
        ``labels`` is ``None`` when ``has_labels`` is false. An empty file
        gives an empty corpus.

    Raises
    ------
    SscrfError
        ``"FILE:LINE: ..."`` for a token line whose number of columns differs
        from the file's first token line, a label line with no token column,
        an empty member in a label set, or a label outside ``labels``.
    """
    return _collect(conll_sentences(path, has_labels, label_sets, labels, encoding),
                    has_labels, _Reading(path, verbose))


class _Reading:
    """The progress of reading one file: a report every :attr:`EVERY` tokens."""

    EVERY = 1 << 20

    def __init__(self, path: Source, verbose: bool) -> None:
        self.name = source_name(path)
        self.report = Progress(verbose)
        self.started = time.perf_counter()
        self.tokens = self.reported = 0

    def add(self, n_tokens: int) -> None:
        self.tokens += n_tokens
        if self.tokens >= (self.reported + 1) * self.EVERY:
            self.reported = self.tokens // self.EVERY
            self._show(self.report.step, self.reported)

    def done(self) -> None:
        if self.reported:  # a file read in under a million tokens is not worth a line
            self._show(lambda _, text: self.report.note(text), 0)

    def _show(self, show: Any, k: int) -> None:
        elapsed = time.perf_counter() - self.started
        show(k, f"reading {self.name}: {self.tokens:,} tokens, "
                f"{self.tokens / max(elapsed, 1e-9):,.0f} tokens/s, {elapsed:.1f} s")


def _collect(sentences: Iterable[SentenceRecord], has_labels: bool, reading: _Reading
             ) -> ConllCorpus:
    """A ConllCorpus of the ``(first line, tokens, labels)`` a reader yields."""
    tokens, all_labels, lines = [], [], []
    with gc_paused():
        for lineno, sent_tokens, sent_labels in sentences:
            tokens.append(sent_tokens)
            all_labels.append(sent_labels)
            lines.append(lineno)
            reading.add(len(sent_tokens))
    reading.done()
    return ConllCorpus(tokens, all_labels if has_labels else None, lines)


def conll_sentences(path: Source, has_labels: bool, label_sets: bool,
                    labels: Optional[Iterable[str]], encoding: str) -> Iterator[SentenceRecord]:
    """Yield ``(first line number, tokens, labels)`` for each sentence of a
    CoNLL column file as it is read, by :func:`read_conll`'s rules (``labels``
    is ``[]`` without ``has_labels``)."""
    allowed = None if labels is None else set(_label_list(labels))
    plain_labels = not label_sets and allowed is None  # a label cell is the label
    sent_tokens: list[list[str]] = []
    sent_labels: list[Any] = []
    sent_line: Any = None
    ncols = None
    with _Source(path, encoding) as src:
        for lineno, line in src.lines():
            if _OTHER_SPACE.search(line) is None:
                cols = line.split()  # the same columns, 2x faster
            else:
                stripped = line.strip(_SEP_CHARS)
                cols = _SEP.split(stripped) if stripped else []
            if not cols or cols[0] == "-DOCSTART-":  # either ends the sentence
                if sent_tokens:
                    yield sent_line, sent_tokens, sent_labels
                    sent_tokens, sent_labels = [], []
                continue
            if ncols is None:
                ncols, ncols_line, ncols_hash = len(cols), lineno, cols[0].startswith("#")
                if has_labels and ncols < 2:
                    raise src.error(
                        lineno, "expected token columns before the label column, found 1 column"
                    )
            elif len(cols) != ncols:
                hint = ""
                if ncols_hash or cols[0].startswith("#"):  # "# text = ...", "# id ..." headers
                    hint = ("; '#' lines are tokens in CoNLL files: remove comment or header "
                            "lines, or read a CoNLL-U file with --conllu (read_conllu)")
                raise src.error(lineno, f"expected {ncols} columns, found {len(cols)} "
                                        f"(line {ncols_line} has {ncols}){hint}")
            if not sent_tokens:
                sent_line = lineno
            if has_labels:
                sent_tokens.append(cols[:-1])
                sent_labels.append(cols[-1] if plain_labels else
                                   _parse_label(cols[-1], label_sets, allowed, src, lineno))
            else:
                # a copy: str.split()'s lists keep room for 12 entries (96 more
                # bytes per token of one column)
                sent_tokens.append(cols[:])
        if sent_tokens:
            yield sent_line, sent_tokens, sent_labels


def _parse_label(cell: str, label_sets: bool, allowed: Optional[set[str]], src: _Source,
                 lineno: int) -> Union[str, frozenset[str], None]:
    if label_sets:
        if cell == "*":
            return None
        if "|" in cell:
            members: Any = cell.split("|")
            for m in members:
                if not m:
                    raise src.error(lineno, f"empty label in label set {cell!r}")
                if m == "*":
                    raise src.error(lineno, f"'*' inside label set {cell!r}")
            if allowed is not None:
                for m in members:
                    if m not in allowed:
                        raise src.error(lineno, f"unknown label {m!r} in label set {cell!r}")
            members = frozenset(members)
            if len(members) == 1:
                (single,) = members
                return single
            return members
    if allowed is not None and cell not in allowed:
        raise src.error(lineno, f"unknown label {cell!r}")
    return cell


def label_inventory(label_sequences: Iterable[Sequence[Any]],
                    labels: Optional[Iterable[str]] = None) -> list[str]:
    """The label set of a corpus.

    Parameters
    ----------
    label_sequences : iterable of sequences
        Label sequences; an element is a ``str``, a ``set``/``frozenset``/
        ``tuple`` of str (ambiguous annotation), or ``None`` (not annotated).
    labels : iterable of str, optional
        The label set to use, in this order. Every label in
        ``label_sequences`` must belong to it.

    Returns
    -------
    list of str
        ``list(labels)`` when given, else every label seen alone or inside a
        set, sorted.

    Raises
    ------
    SscrfError
        For duplicate or non-string entries in ``labels``, a label element of
        another type, or (with ``labels``) a label outside ``labels``, naming
        the sentence and token index.
    """
    allowed = None if labels is None else _label_list(labels)
    allowed_set = None if allowed is None else set(allowed)
    seen = set()
    for i, seq in enumerate(label_sequences):
        if isinstance(seq, str):
            # A bare string would be read as one label per character.
            raise SscrfTypeError(f"sentence {i}: labels must be a sequence of labels, not a string")
        for j, label in enumerate(seq):
            if label is None:
                continue
            members: Any
            if isinstance(label, str):
                members = (label,)
            elif isinstance(label, (set, frozenset, tuple)):
                members = label
            else:
                raise SscrfError(
                    f"sentence {i}, token {j}: a label must be a str, a set of str or None, "
                    f"found {type(label).__name__}"
                )
            for m in members:
                if not isinstance(m, str):
                    raise SscrfError(
                        f"sentence {i}, token {j}: label set members must be str, found {m!r}"
                    )
                if allowed_set is not None and m not in allowed_set:
                    raise SscrfError(f"sentence {i}, token {j}: unknown label {m!r}")
                seen.add(m)
    if allowed is not None:
        return allowed
    return sorted(seen)


def _format_cell(value: Any, i: int, what: str) -> str:
    if not isinstance(value, str):
        raise SscrfTypeError(f"sentence {i}: {what} must be str, found {type(value).__name__}")
    # A cell that is empty or holds whitespace would not read back as one column.
    if not value or _CELL_FORBIDDEN.search(value):
        raise SscrfError(f"sentence {i}: {what} {value!r} is empty or contains whitespace")
    return value


def _format_label(label: Any, i: int, what: str) -> str:
    if label is None:
        return "*"
    if isinstance(label, (set, frozenset, tuple)):
        if not label:
            raise SscrfError(f"sentence {i}: empty label set in {what}")
        members = sorted(set(label))
        for m in members:
            _format_cell(m, i, f"{what} set member")
            if "|" in m or m == "*":
                raise SscrfError(
                    f"sentence {i}: {what} set member {m!r} cannot be written as part of a set"
                )
        return "|".join(members)
    return _format_cell(label, i, what)


def _plain_rows(sent: Sequence[Any], gold: Optional[Sequence[Any]],
                pred: Optional[Sequence[Any]]) -> Optional[list[list[str]]]:
    """A sentence's rows of cells when every cell is a non-empty ``str``
    without whitespace (checked a sentence at a time, 3x faster than a cell
    at a time), else None."""
    rows = []
    for j, token in enumerate(sent):
        if isinstance(token, str):
            row = [token]
        elif isinstance(token, (list, tuple)):
            row = list(token)
        else:
            return None
        if gold is not None:
            row.append(gold[j])
        if pred is not None:
            row.append(pred[j])
        rows.append(row)
    cells = [cell for row in rows for cell in row]
    if (all(type(cell) is str and cell for cell in cells)
            and not _CELL_FORBIDDEN.search("".join(cells))
            and all(len(row) > (gold is not None) + (pred is not None) for row in rows)):
        return rows
    return None


def _formatted_row(token: Any, i: int, j: int, gold: Optional[Sequence[Any]],
                   pred: Optional[Sequence[Any]]) -> list[str]:
    """Token ``j`` of sentence ``i`` as cells, label sets joined by ``|``."""
    try:
        cols = [token] if isinstance(token, str) else list(token)
    except TypeError:
        raise SscrfTypeError(f"sentence {i}: token {j} must be a str or a list of column "
                             f"strings, found {type(token).__name__}") from None
    if not cols:
        raise SscrfError(f"sentence {i}: token {j} has no columns")
    row = [_format_cell(c, i, "token column") for c in cols]
    if gold is not None:
        row.append(_format_label(gold[j], i, "label"))
    if pred is not None:
        row.append(_format_label(pred[j], i, "predicted label"))
    return row


def _check_lengths(tokens: Sequence[Sequence[Any]], seqs: Iterable[Sequence[Any]],
                   what: str) -> list[Sequence[Any]]:
    if isinstance(seqs, str):
        raise SscrfTypeError(f"{what} must be a list of label sequences, not a string")
    seqs = list(seqs)
    if len(seqs) != len(tokens):
        raise SscrfError(f"{len(tokens)} sentences of tokens but {len(seqs)} of {what}")
    for i, (sent, seq) in enumerate(zip(tokens, seqs)):
        if isinstance(seq, str):
            raise SscrfTypeError(f"sentence {i}: {what} must be a sequence of labels, not a string")
        if len(seq) != len(sent):
            raise SscrfError(f"sentence {i}: {len(sent)} tokens but {len(seq)} {what}")
    return seqs


def write_conll(path_or_file: Source, tokens: Sequence[Sequence[Any]],
                labels: Optional[Sequence[Sequence[Any]]] = None,
                predicted: Optional[Sequence[Sequence[Any]]] = None, *, sep: str = " ",
                encoding: str = "utf-8") -> None:
    """Write sentences as a CoNLL column file.

    Each line holds a token's columns, then its label (if ``labels`` is
    given), then its predicted label (if ``predicted`` is given); a blank line
    follows each sentence. A label that is a set (``set``, ``frozenset`` or
    ``tuple``) is written as its sorted members joined by ``|``, and ``None``
    as ``*``, so that ``read_conll(..., label_sets=True)`` reads them back.

    Parameters
    ----------
    path_or_file : str, os.PathLike or text file object
        A path is written atomically: to a temporary file in the same
        directory, then renamed over the target (a symbolic link's target;
        a device or named pipe is written in place).
    tokens : list of list
        ``tokens[i][j]`` is a list of column strings, or a single ``str`` for
        a one-column token.
    labels, predicted : list of list, optional
        One label per token. Shapes must match ``tokens``.
    sep : str, default " "
        Column separator: spaces and/or tabs.
    encoding : str, default "utf-8"
        Used when writing to a path.

    Raises
    ------
    SscrfError
        For mismatched lengths (naming the sentence index), a cell that is
        empty or contains whitespace (it would not read back), or a bad
        ``sep``.
    """
    if not sep or sep.strip(" \t"):
        raise SscrfError(f"sep must be spaces or tabs, got {sep!r}")
    if isinstance(tokens, str):
        raise SscrfTypeError("tokens must be a list of sentences, not a string")
    tokens = list(tokens)
    for i, sent in enumerate(tokens):
        if isinstance(sent, str):
            # Iterating it would write one character per token.
            raise SscrfTypeError(f"sentence {i}: a sentence must be a list of tokens, not a string")
    if labels is not None:
        labels = _check_lengths(tokens, labels, "labels")
    if predicted is not None:
        predicted = _check_lengths(tokens, predicted, "predicted labels")

    def write_to(f: IO[str], at_start: bool = True) -> None:
        for i, sent in enumerate(tokens):
            gold = None if labels is None else labels[i]
            pred = None if predicted is None else predicted[i]
            rows: Optional[list[Any]] = _plain_rows(sent, gold, pred)
            if rows is None:  # label sets, None, or a bad cell (raises here)
                rows = [_formatted_row(token, i, j, gold, pred) for j, token in enumerate(sent)]
            rows.append("")
            text = "\n".join(map(sep.join, rows)) + "\n"
            if at_start and text.startswith("\ufeff"):
                # The readers drop a byte-order mark at the start of a file;
                # one written before a cell that starts with U+FEFF keeps it.
                text = "\ufeff" + text
            at_start = False
            f.write(text)

    if hasattr(path_or_file, "write"):
        stream: Any = path_or_file
        try:
            at_start = stream.tell() == 0
        except (AttributeError, OSError, ValueError):
            at_start = False
        write_to(stream, at_start)
        return
    replace_file(path_or_file, write_to, "w", encoding)


def read_conllu(path: Source, *, label_column: Optional[str] = "upos",
                token_columns: Union[str, Sequence[str]] = ("form",),
                encoding: str = "utf-8", verbose: bool = False) -> ConllCorpus:
    """Read a CoNLL-U file.

    Lines starting with ``#`` are comments, blank lines end sentences, and
    tokens are the lines whose ID is an integer: multiword-token ranges
    (``3-4``) and empty nodes (``5.1``) are skipped.

    Parameters
    ----------
    path : str, os.PathLike or file object
        The file, as in :func:`read_conll`.
    label_column : str or None, default "upos"
        Column holding the label, one of :data:`CONLLU_COLUMNS`; ``None``
        reads no labels.
    token_columns : sequence of str, default ("form",)
        Columns that make up each token, in this order.
    encoding : str, default "utf-8"
        Used when ``path`` is a path.
    verbose : bool, default False
        Report progress, as :func:`read_conll` does.

    Returns
    -------
    ConllCorpus
        ``tokens[i][j]`` is the list of the requested columns; ``labels`` is
        ``None`` when ``label_column`` is ``None``.

    Raises
    ------
    SscrfError
        ``"FILE:LINE: ..."`` for a word line without exactly 10 tab-separated
        columns or with an ID that is neither an integer, a range nor a
        decimal; also for unknown column names.
    """
    tok_idx, lab_idx = conllu_indices(label_column, token_columns)
    return _collect(conllu_sentences(path, tok_idx, lab_idx, encoding), lab_idx is not None,
                    _Reading(path, verbose))


def conllu_indices(label_column: Optional[str],
                   token_columns: Union[str, Sequence[str]]) -> tuple[list[int], Optional[int]]:
    """The indices of ``token_columns`` (a list) and of ``label_column`` (or None)."""
    if isinstance(token_columns, str):
        token_columns = (token_columns,)
    token_columns = tuple(token_columns)
    if not token_columns:
        raise SscrfError("token_columns must name at least one column")
    for name in token_columns + (() if label_column is None else (label_column,)):
        if name not in CONLLU_COLUMNS:
            raise SscrfError(
                f"unknown CoNLL-U column {name!r}; columns are {', '.join(CONLLU_COLUMNS)}"
            )
    tok_idx = [CONLLU_COLUMNS.index(c) for c in token_columns]
    return tok_idx, None if label_column is None else CONLLU_COLUMNS.index(label_column)


def conllu_sentences(path: Source, tok_idx: Sequence[int], lab_idx: Optional[int],
                     encoding: str) -> Iterator[SentenceRecord]:
    """Yield ``(first line number, tokens, labels)`` for each sentence of a
    CoNLL-U file as it is read, by :func:`read_conllu`'s rules; ``tok_idx``
    and ``lab_idx`` are column indices (``labels`` is ``[]`` when ``lab_idx``
    is None)."""
    sent_tokens: list[list[str]] = []
    sent_labels: list[Any] = []
    sent_line: Any = None
    with _Source(path, encoding) as src:
        for lineno, line in src.lines():
            if not line.strip(_SEP_CHARS):
                if sent_tokens:
                    yield sent_line, sent_tokens, sent_labels
                    sent_tokens, sent_labels = [], []
                continue
            if line.startswith("#"):
                continue
            # Tabs only: FORM and LEMMA may contain spaces in UD v2.
            cols = line.split("\t")
            if len(cols) != 10:
                raise src.error(lineno, f"expected 10 tab-separated columns, found {len(cols)}")
            word_id = cols[0]
            if _CONLLU_RANGE_ID.fullmatch(word_id) or _CONLLU_EMPTY_ID.fullmatch(word_id):
                continue
            if not _CONLLU_WORD_ID.fullmatch(word_id):
                raise src.error(lineno, f"bad ID {word_id!r}")
            if word_id == "1" and sent_tokens:
                # IDs start again at 1: a new sentence, its blank line missing
                yield sent_line, sent_tokens, sent_labels
                sent_tokens, sent_labels = [], []
            if not sent_tokens:
                sent_line = lineno
            sent_tokens.append([cols[k] for k in tok_idx])
            if lab_idx is not None:
                sent_labels.append(cols[lab_idx])
        if sent_tokens:
            yield sent_line, sent_tokens, sent_labels
