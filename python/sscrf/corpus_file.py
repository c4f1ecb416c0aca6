"""Compiled corpora on disk: one streaming compile, then memory-mapped reads.

A corpus is compiled once (:func:`compile_corpus_file`, or ``sscrf compile
FILE -o FILE.corpus`` on the command line) and then opened with
:meth:`CompiledCorpus.open`, which maps the file's arrays into memory
(``np.memmap``) instead of reading them: a :class:`CompiledCorpus` is
accepted as ``X_unlabeled`` by :meth:`sscrf.CRF.fit` (and, compiled with its
labels, as ``X`` and ``X_dev``), as ``X`` by ``predict``,
``predict_marginals``, ``predict_nbest``, the entropies,
``sequence_log_probability`` and ``score``, and as the pool of
:func:`sscrf.active.select`; no Python object is made per token.

Compiling reads the source twice, each time ``buffer_tokens`` tokens at a
time: the first pass counts attributes (:meth:`FeatureExtractor.count
<sscrf.features.FeatureExtractor.count>`), which are then cut by
``min_freq`` and ``max_features`` and frozen (ids most frequent first, as
:class:`~sscrf.features.AttributeCounts` gives them); the second interns the
sentences under that vocabulary and appends them to spill files, assembled
into the output at the end. With ``vocabulary=`` (a fitted CRF, a fitted
extractor or a model file) or ``hash_features=`` (attributes hashed into
buckets, :mod:`sscrf.features.hashing`) there is no first pass.

The file format is :mod:`sscrf.corpus_format`'s.

Binary features thus take 4 bytes per entry and 4 per token (8 past 2^32
entries, and 8 per sentence). The kernels read 8-byte token pointers:
opening widens 4-byte ones into a file beside the corpus, mapped and
unlinked at once (disk, not memory, while the corpus is open). Opening
checks, before anything is allocated from a declared size, the magic, the
version, the header's checksum and that the sizes add up to the file's
length; then the meta's vocabulary against its checksum, and every array
(monotone offsets, ids in range, finite values) a slice at a time. A
corpus is one file; shards are several files, compiled under one
vocabulary (``vocabulary=`` the first shard's, or a model) and given one at
a time.
"""

import glob
import os
import re
import tempfile
import time
import warnings
from typing import Any, Iterator, Optional, Sequence, Union, cast

import numpy as np
from numpy.typing import NDArray

from . import _core
from .corpus_format import (FLAG_LABELS, FLAG_ONES, FLAG_POINTERS32, HEADER_SIZE, MAGIC,
                            MAX_META_BYTES, VERSION, assemble, read_header, read_meta, sections,
                            vocabulary_checksum)
from .errors import SscrfError, SscrfTypeError
from .features import FeatureExtractor, Features, default_templates
from .features.csr import is_ones, ones
from .features.hashing import BucketNames, check_hash_features
from .features.vocabulary import AttributeCounts, Vocabulary
from .inputs import check_integer, check_unlabeled, starts_with
from .io import conll_sentences
from .progress import Progress

__all__ = ["CompiledCorpus", "MAGIC", "MAX_META_BYTES", "VERSION", "compile_corpus_file",
           "check_labeled_corpus", "is_compiled_corpus", "labeled_input", "n_tokens_of",
           "refuse_vocabulary_cuts", "unlabeled_input", "hashed_with", "vocabulary_checksum",
           "vocabulary_with"]

#: How a message about a corpus compiled under another vocabulary ends.
REMEDY = "compile it again with --vocabulary set to the model"

#: Entries per slice when validating or copying: bounds the temporaries.
_SLICE = 1 << 22
PathLike = Union[str, "os.PathLike[str]"]


def _mapping(n_buckets: Optional[int]) -> str:
    """How a corpus or a model maps attributes to ids, for a message."""
    return ("a vocabulary of attribute strings" if n_buckets is None
            else f"feature hashing into {n_buckets:,} buckets")


def is_compiled_corpus(path: PathLike) -> bool:
    """Whether ``path`` is a regular file that starts with a compiled corpus's
    magic (a pipe is never one, and is not read: :func:`sscrf.inputs.starts_with`)."""
    return starts_with(path, MAGIC)


class CompiledCorpus:
    """A compiled corpus file, memory-mapped (:meth:`open`; written by :func:`compile_corpus_file`).

    Attributes
    ----------
    path : str
    n_tokens, n_sentences, nnz, n_attributes : int
    checksum : bytes
        The vocabulary's :func:`vocabulary_checksum` (a hashed corpus's:
        :func:`~sscrf.corpus_format.hashed_checksum`).
    hash_features : int or None
        The number of hash buckets of a corpus compiled with feature hashing
        (``n_attributes``); None for one compiled under a vocabulary.
    paths : list of str
        The file, or the shards opened as this corpus.
    label_names : list of str or None
        With stored labels, the strings of :attr:`labels`' ids.
    labels : ndarray of int32 or None
    nbytes : int
        The file's size.
    """

    def __init__(self, path: str, header: tuple[Any, ...], meta: dict[str, Any],
                 arrays: dict[str, NDArray[Any]]) -> None:
        self.path = path
        (self.n_tokens, self.n_sentences, self.nnz, self.n_attributes, self.checksum,
         self.nbytes) = header
        self._meta = meta
        self._arrays = arrays
        self.labels = arrays.get("labels")
        self.label_names = meta.get("labels")
        self.hash_features: Optional[int] = meta["features"].get("hash_features")
        self.hash_collisions: Optional[str] = None if self.hash_features is None else (
            meta["features"].get("hash_collisions", "sum"))
        self.paths = [path]

    def __len__(self) -> int:
        """Number of sentences."""
        return self.n_sentences

    def __iter__(self) -> Iterator[Any]:
        raise SscrfTypeError(f"{self.path}: a CompiledCorpus is not a list of sentences; it "
                             "is taken whole as fit's X (compiled with its labels), "
                             "X_unlabeled and X_dev (with its labels), by predict, "
                             "predict_marginals and predict_nbest (without allowed=), the "
                             "entropies, sequence_log_probability and score (with its "
                             "labels), and as the pool of sscrf.active.select")

    def __repr__(self) -> str:
        return (f"<CompiledCorpus {self.path!r}: {self.n_sentences:,} sentences, "
                f"{self.n_tokens:,} tokens, {self.n_attributes:,} attributes>")

    @property
    def attributes(self) -> list[str]:
        """Id → attribute string: the vocabulary the corpus was compiled under (empty for a
        hashed corpus)."""
        return self._meta["features"]["attributes"]

    @property
    def templates(self) -> Optional[list[str]]:
        """The template lines (None: compiled from feature dicts)."""
        return self._meta["features"]["templates"]

    def extractor(self) -> FeatureExtractor:
        """A :class:`~sscrf.features.FeatureExtractor` frozen to this corpus's vocabulary."""
        return FeatureExtractor.from_state(self._meta["features"])

    def features(self, n_attributes: Optional[int] = None) -> Features:
        """The corpus as :class:`~sscrf.features.Features` of memory-mapped arrays.

        Parameters
        ----------
        n_attributes : int or None
            The column count, when the corpus's vocabulary is the first part
            of a larger one (a model that adds attributes of its labeled data).
        """
        values = self._arrays.get("values")
        return Features(self._arrays["indptr"], self._arrays["indices"],
                        ones(self.nnz) if values is None else values, self._arrays["offsets"],
                        self.n_attributes if n_attributes is None else n_attributes)

    def check_vocabulary(self, attributes: Sequence[str], templates: Optional[Sequence[str]],
                         what: str = "the model", remedy: str = REMEDY) -> None:
        """Refuse a vocabulary (and templates) this corpus was not compiled under.

        The corpus's vocabulary must be the first ``n_attributes`` strings of
        ``attributes`` (a model trained on it may add its labeled data's
        attributes after them), and its templates the same; a hashed corpus
        takes the same number of buckets (``attributes`` a
        :class:`~sscrf.features.hashing.BucketNames`). ``what`` names the
        vocabulary's owner and ``remedy`` ends each message.

        Raises
        ------
        SscrfError
        """
        if (self.templates is None) != (templates is None) or (
                templates is not None and list(templates) != list(self.templates or ())):
            raise SscrfError(f"{self.path}: compiled with other templates than {what}'s; "
                             f"{remedy}")
        hashing = len(attributes) if isinstance(attributes, BucketNames) else None
        if hashing != self.hash_features:
            raise SscrfError(f"{self.path}: compiled with {_mapping(self.hash_features)}, "
                             f"{what} has {_mapping(hashing)}: {remedy}")
        if hashing is None and (len(attributes) < self.n_attributes or vocabulary_checksum(
                attributes[:self.n_attributes]) != self.checksum):
            raise SscrfError(f"{self.path}: compiled under another vocabulary than {what}'s "
                             f"({self.n_attributes:,} attributes against {len(attributes):,}); "
                             f"{remedy}")

    def features_for(self, extractor: FeatureExtractor, what: str = "the model",
                     remedy: str = REMEDY) -> Features:
        """:meth:`features` after :meth:`check_vocabulary` (``what``, ``remedy``) against a
        fitted extractor."""
        templates = None if extractor.templates is None else extractor.templates.lines
        attributes = extractor.attributes_ or []
        self.check_vocabulary(attributes, templates, what, remedy)
        if self.hash_features is not None and extractor.hash_collisions != self.hash_collisions:
            raise SscrfError(f"{self.path}: hashed by an earlier sscrf, whose colliding "
                             "attributes added up; the model counts binary ones once: compile "
                             "it again" if self.hash_collisions == "sum" else
                             f"{self.path}: hashed with binary collisions counted once, the "
                             "model (saved by an earlier sscrf) adds them up: compile it "
                             "again with --vocabulary set to the model")
        return self.features(len(attributes))

    @classmethod
    def open(cls, path: Union[PathLike, Sequence[PathLike]], validate: bool = True
             ) -> "CompiledCorpus":
        """Map a compiled corpus file, or several shards as one corpus, after checking them.

        Parameters
        ----------
        path : str, os.PathLike, or a list of them
            A file; a list of shard files, or a glob pattern (``"part-*.corpus"``,
            taken in sorted order) matching them: shards compiled under one
            vocabulary (``vocabulary=`` the first's) and templates, all with
            labels or none. Shards are checked, then their arrays are written
            one after another to a file beside the first shard, which is
            mapped and unlinked at once: the merged corpus takes disk while
            it is open, not memory.
        validate : bool
            Check every array (a pass over the file); the header, the sizes
            and the vocabulary are always checked.

        Returns
        -------
        CompiledCorpus

        Raises
        ------
        SscrfError
            A foreign, truncated or corrupt file, naming it and the reason;
            shards of different vocabularies.
        """
        if isinstance(path, (list, tuple)) or (
                isinstance(path, str) and glob.has_magic(path) and not os.path.exists(path)):
            return _open_shards(_shard_paths(path), validate)
        path = os.fsdecode(os.fspath(path))  # type: ignore[arg-type]
        try:
            size = os.path.getsize(path)
            with open(path, "rb") as f:
                head = f.read(HEADER_SIZE)
                header, flags, meta_bytes = read_header(path, head, size)
                meta = read_meta(path, f.read(meta_bytes), header, flags)
        except OSError as e:
            raise SscrfError(f"{path}: cannot read the compiled corpus ({e.strerror})") from None
        n_tokens, n_sentences, nnz = header[:3]
        arrays = {}
        for name, dtype, count, offset in sections(n_tokens, n_sentences, nnz, meta_bytes,
                                                    flags)[0]:
            arrays[name] = (np.zeros(count, dtype=dtype) if count == 0 else
                            np.memmap(path, dtype=dtype, mode="r", offset=offset,
                                      shape=(count,)))
        corpus = cls(path, header + (size,), meta, arrays)
        if validate:
            _validate(corpus)
        if flags & FLAG_POINTERS32:
            arrays["indptr"] = _widened(path, arrays["indptr"])
        return corpus

    @classmethod
    def build(cls, source: Any, path: PathLike, **options: Any) -> "CompiledCorpus":
        """Compile ``source`` to ``path`` and open it.

        Parameters
        ----------
        source, path, **options
            As :func:`compile_corpus_file`'s.

        Returns
        -------
        CompiledCorpus
        """
        compile_corpus_file(source, path, **options)
        return cls.open(path)


def _widened(path: str, pointers: NDArray[np.uint32]) -> NDArray[np.int64]:
    """uint32 token pointers as int64, which the kernels read: written a slice at a time
    to a file beside ``path`` (or in the temporary folder where that one is not
    writable), mapped, and unlinked at once, so that they take disk while the corpus is
    open, not memory."""
    if len(pointers) == 0:
        return np.zeros(0, dtype=np.int64)
    folder = os.path.dirname(os.path.abspath(path))
    try:
        fd, name = tempfile.mkstemp(prefix=".sscrf-pointers-", dir=folder)
    except OSError:
        fd, name = tempfile.mkstemp(prefix=".sscrf-pointers-")
    try:
        with os.fdopen(fd, "wb") as f:
            for start in range(0, len(pointers), _SLICE):
                f.write(np.asarray(pointers[start:start + _SLICE], dtype="<i8").tobytes())
        return np.memmap(name, dtype="<i8", mode="r", shape=(len(pointers),))
    finally:
        os.remove(name)  # the mapping keeps its pages; the name goes now


def _check_monotone(path: str, name: str, a: NDArray[np.int64], last: int) -> None:
    """``a[0] == 0``, non-decreasing, ``a[-1] == last``, a slice at a time."""
    if a[0] != 0 or a[-1] != last:
        raise SscrfError(f"{path}: corrupt {name} (must run from 0 to {last:,})")
    for start in range(0, len(a) - 1, _SLICE):
        block = np.asarray(a[start:start + _SLICE + 1])
        if (block[1:] < block[:-1]).any():
            raise SscrfError(f"{path}: corrupt {name} (decreasing near entry {start:,})")


def _validate(corpus: CompiledCorpus) -> None:
    path, arrays = corpus.path, corpus._arrays
    _check_monotone(path, "token pointers", arrays["indptr"], corpus.nnz)
    _check_monotone(path, "sentence offsets", arrays["offsets"], corpus.n_tokens)
    indices = arrays["indices"]
    for start in range(0, corpus.nnz, _SLICE):
        block = indices[start:start + _SLICE]
        if block.min() < 0 or block.max() >= corpus.n_attributes:
            raise SscrfError(f"{path}: corrupt: an attribute id out of range near entry "
                             f"{start:,}")
    values = arrays.get("values")
    if values is not None:
        for start in range(0, corpus.nnz, _SLICE):
            if not np.isfinite(values[start:start + _SLICE]).all():
                raise SscrfError(f"{path}: corrupt: a non-finite value near entry {start:,}")
    labels = arrays.get("labels")
    if labels is not None:
        n = len(corpus.label_names or ())
        for start in range(0, corpus.n_tokens, _SLICE):
            block = labels[start:start + _SLICE]
            if block.min() < 0 or block.max() >= n:
                raise SscrfError(f"{path}: corrupt: a label id out of range near token "
                                 f"{start:,}")


# -- compiling ------------------------------------------------------------------------------


def _batches(source: Any, has_labels: bool, encoding: str, buffer_tokens: int
             ) -> Iterator[list[tuple[Any, Any]]]:
    """Lists of (tokens, labels) sentences of about ``buffer_tokens`` tokens."""
    if isinstance(source, (str, bytes, os.PathLike)):
        sentences = ((tokens, labels) for _, tokens, labels in
                     conll_sentences(os.fsdecode(source), has_labels, False, None, encoding))
    else:
        sentences = ((s, None) for s in source)  # type: ignore[misc]
    batch, n = [], 0
    for item in sentences:
        batch.append(item)
        n += len(item[0])
        if n >= buffer_tokens:
            yield batch
            batch, n = [], 0
    if batch:
        yield batch


def _rate(report: Progress, k: int, what: str, tokens: int, started: float) -> None:
    elapsed = time.perf_counter() - started
    report.step(k, f"{what}: {tokens:,} tokens, {tokens / max(elapsed, 1e-9):,.0f} tokens/s, "
                   f"{elapsed:.1f} s")


def _count(source: Any, extractor: FeatureExtractor, has_labels: bool, encoding: str,
           buffer_tokens: int, report: Progress) -> AttributeCounts:
    """Attribute counts over the source, a batch at a time (the vocabulary's first pass)."""
    index, strings = _core.AttributeIndex(), list[str]()
    total = np.zeros(0, dtype=np.int64)
    widths, tokens, started = [], 0, time.perf_counter()
    for k, batch in enumerate(_batches(source, has_labels, encoding, buffer_tokens), 1):
        counts = extractor.count([s for s, _ in batch])
        ids = index.intern(counts.strings, True, strings)
        if len(strings) > len(total):
            total = np.concatenate([total, np.zeros(len(strings) - len(total), np.int64)])
        np.add.at(total, ids, counts.counts)
        if counts.n_columns is not None:
            widths.append(counts.n_columns)
        tokens += sum(len(s) for s, _ in batch)
        _rate(report, k, "counting", tokens, started)
    return AttributeCounts(strings, total, min(widths) if widths else None)


def _first_sentence(source: Any, has_labels: bool, encoding: str) -> Any:
    for batch in _batches(source, has_labels, encoding, 1):
        return batch[0][0]
    return None


#: A value of a column that reads as a chunk label (IOB, IOBES), not a token's.
_CHUNK_LABEL = re.compile(r"O|[BIESLU]-\S+")


def _warn_if_last_column_is_labels(source: Any, name: str, encoding: str) -> None:
    """Warns when the first tokens of a CoNLL file read without labels have
    chunk labels, and only those, in their last column of two or more: its
    values would become attributes, the gold labels as features."""
    first = next(_batches(source, False, encoding, 2000), [])
    last = [token[-1] for sentence, _ in first for token in sentence if len(token) >= 2]
    if not last or len(last) < sum(len(sentence) for sentence, _ in first):
        return
    if any(value != "O" for value in last) and all(_CHUNK_LABEL.fullmatch(v) for v in last):
        shown = ", ".join(sorted(set(last))[:3])
        warnings.warn(f"{name}: the last column holds chunk labels only ({shown}, ...): "
                      "without has_labels=True (sscrf compile --labeled) it is read as a token "
                      "column, and the labels become attributes", UserWarning, stacklevel=3)


def _extractor_of(vocabulary: Any) -> FeatureExtractor:
    """The fitted extractor of a CRF, an extractor or a compiled corpus."""
    if isinstance(vocabulary, CompiledCorpus):
        return vocabulary.extractor()
    extractor = getattr(vocabulary, "extractor_", vocabulary)
    if not isinstance(extractor, FeatureExtractor) or extractor.attributes_ is None:
        raise SscrfTypeError("vocabulary= takes a fitted CRF, a fitted FeatureExtractor or a "
                             f"CompiledCorpus, not {type(vocabulary).__name__}")
    if getattr(extractor, "vector_spec_", None) is not None:
        raise SscrfError("the model reads word vectors, which a compiled corpus does not "
                         "hold: tag and train it from sentences")
    return extractor


def compile_corpus_file(source: Any, path: PathLike, *, templates: Any = "default",
                        vocabulary: Any = None, min_freq: int = 1,
                        max_features: Optional[int] = None,
                        hash_features: Optional[int] = None, has_labels: bool = False,
                        encoding: str = "utf-8", buffer_tokens: int = 1 << 18,
                        verbose: bool = False) -> dict[str, Any]:
    """Compile sentences into a corpus file (see the module's documentation for the format).

    Parameters
    ----------
    source : str, os.PathLike or list of sentences
        A CoNLL file (a regular file, not a pipe: read twice, as a stream,
        ``buffer_tokens`` at a time) or sentences: token column lists
        (templates) or feature dicts (``templates=None``). A file's last
        column is a token column unless ``has_labels``; one of chunk labels
        only (``B-NP``, ``O``) is warned about.
    path : str or os.PathLike
        The output, written through a temporary file and a rename.
    templates : "default", template text, lines, Templates or None
        How attributes are made; ``"default"``: the default templates for
        the first token's columns. Ignored with ``vocabulary``.
    vocabulary : CRF, FeatureExtractor, CompiledCorpus or None
        Compile under this fitted vocabulary: a model's (to tag with it or
        to train it further; ``CRF.load`` reads a model file) or another
        corpus file's (the next shard of one corpus); None counts the
        source's attributes first.
    min_freq, max_features : int, int or None
        The cut of a counted vocabulary (see :class:`sscrf.CRF`).
    hash_features : int or None
        Hash attributes into this many buckets (a power of two; see
        :mod:`sscrf.features.hashing`) instead of counting a vocabulary:
        one pass, no vocabulary held or stored. A model trained on the
        corpus takes the same ``hash_features``.
    has_labels : bool
        The CoNLL file's last column is the label; labels are stored.
    encoding : str
    buffer_tokens : int
        Tokens held as Python objects at a time.
    verbose : bool
        Report progress (tokens/s, elapsed) on stderr; always to the
        ``sscrf`` logger.

    Returns
    -------
    dict
        ``n_tokens``, ``n_sentences``, ``nnz``, ``n_attributes``, ``bytes``
        (the file), ``array_bytes`` (the file less its header and
        vocabulary), ``labels`` (the stored label names, in id order; None
        without ``has_labels``) and ``seconds``.
    """
    started = time.perf_counter()
    check_integer(buffer_tokens, "buffer_tokens", minimum=1)
    if max_features is not None:
        check_integer(max_features, "max_features", minimum=1)
    from_file = isinstance(source, (str, bytes, os.PathLike))
    if has_labels and not from_file:
        raise SscrfError("has_labels=True reads a CoNLL file; give its path as source")
    if not from_file:
        source = check_unlabeled(source, "source")
    report = Progress(verbose)
    name = os.fsdecode(source) if from_file else "sentences"
    if from_file and os.path.exists(name) and not os.path.isfile(name):
        # each pass opens the file anew: a pipe would give each pass other lines
        raise SscrfError(f"{name}: not a regular file: compiling reads a file more than once "
                         "(its first sentence, the vocabulary's count, the sentences), which a "
                         "pipe or a device cannot give; write it to a file first")
    if hash_features is not None:
        hash_features = check_hash_features(hash_features)
        if vocabulary is not None or max_features is not None or min_freq != 1:
            raise SscrfError("hash_features has no vocabulary: vocabulary=, min_freq and "
                             "max_features go without it (a hashed model's vocabulary= "
                             "brings its hashing)")
    if vocabulary is None and not has_labels and from_file:
        _warn_if_last_column_is_labels(source, name, encoding)
    if vocabulary is None and isinstance(templates, str) and templates.strip() == "default":
        first = _first_sentence(source, has_labels, encoding)
        templates = default_templates(1 if not first else len(first[0]))
    if vocabulary is not None:
        extractor = _extractor_of(vocabulary)
    elif hash_features is not None:
        extractor = FeatureExtractor(templates, hash_features=hash_features).set_hashing()
    else:
        extractor = FeatureExtractor(templates, min_freq)
        counts = _count(source, extractor, has_labels, encoding, buffer_tokens, report)
        extractor.set_vocabulary(counts.freeze(min_freq, max_features))
        del counts
    if extractor.hash_features is None:
        report.note(f"vocabulary: {len(extractor.attributes_ or ()):,} attributes")
    out = _write(source, path, name, extractor, has_labels, encoding, buffer_tokens, report)
    out["seconds"] = time.perf_counter() - started
    report.note(f"compiled {name} to {os.fsdecode(path)}: {out['n_tokens']:,} tokens, "
                f"{out['bytes'] / max(out['n_tokens'], 1):.1f} bytes per token, "
                f"{out['seconds']:.1f} s")
    return out


def _write(source: Any, path: PathLike, name: str, extractor: FeatureExtractor, has_labels: bool,
           encoding: str, buffer_tokens: int, report: Progress) -> dict[str, Any]:
    """Second pass: intern each batch, spill its arrays, assemble the file."""
    path = os.fsdecode(os.fspath(path))
    label_ids: dict[str, int] = {}
    n_tokens = n_sentences = nnz = 0
    all_ones, started = True, time.perf_counter()
    # a hashing extractor is fitted without a pass; it records the token
    # columns (the fewest of any token, as a fit does) from this one
    widths: Optional[list[int]] = (
        [] if extractor.hash_features is not None and extractor.n_columns_ is None
        and extractor.templates is not None else None)
    folder = os.path.dirname(os.path.abspath(path))
    with tempfile.TemporaryDirectory(prefix=".sscrf-compile-", dir=folder) as spill:
        files = {k: open(os.path.join(spill, k), "wb")
                 for k in ("indptr", "offsets", "indices", "values", "labels")}
        try:
            files["indptr"].write(np.zeros(1, "<i8").tobytes())
            files["offsets"].write(np.zeros(1, "<i8").tobytes())
            for k, batch in enumerate(_batches(source, has_labels, encoding, buffer_tokens), 1):
                f = extractor.transform([s for s, _ in batch])
                if widths is not None and f.n_tokens:
                    widths.append(min(len(token) for s, _ in batch for token in s))
                files["indptr"].write((f.indptr[1:] + nnz).astype("<i8").tobytes())
                files["offsets"].write((f.offsets[1:] + n_tokens).astype("<i8").tobytes())
                files["indices"].write(np.asarray(f.indices, "<i4").tobytes())
                if not is_ones(f.values):
                    all_ones = False
                files["values"].write(np.asarray(f.values, "<f8").tobytes())
                if has_labels:
                    ids = [label_ids.setdefault(label, len(label_ids))
                           for _, labels in batch for label in labels]
                    files["labels"].write(np.asarray(ids, "<i4").tobytes())
                n_tokens += f.n_tokens
                n_sentences += f.n_sentences
                nnz += f.nnz
                _rate(report, k, f"compiling {name}", n_tokens, started)
        finally:
            for spill_file in files.values():
                spill_file.close()
        narrow = nnz <= np.iinfo(np.uint32).max
        flags = ((FLAG_ONES if all_ones else 0) | (FLAG_LABELS if has_labels else 0)
                 | (FLAG_POINTERS32 if narrow else 0))
        if widths:
            extractor.n_columns_ = min(widths)
        state = extractor.to_state()
        meta = {"features": state, "labels": list(label_ids) if has_labels else None,
                "source": name}

        def spilled(section: str) -> Iterator[bytes]:
            with open(os.path.join(spill, section), "rb") as f:
                while True:
                    block = f.read(1 << 24)
                    if not block:
                        return
                    if section == "indptr" and narrow:  # spilled as int64
                        block = np.frombuffer(block, "<i8").astype("<u4").tobytes()
                    yield block

        end, array_bytes = assemble(path, meta, flags, (n_tokens, n_sentences, nnz), spilled)
    return {"n_tokens": n_tokens, "n_sentences": n_sentences, "nnz": nnz,
            "n_attributes": len(extractor.attributes_ or ()), "bytes": end,
            "array_bytes": array_bytes, "labels": meta["labels"]}


# -- shards ---------------------------------------------------------------------------------


def _shard_paths(paths: Union[PathLike, Sequence[PathLike]]) -> list[str]:
    """The files of a list of paths or of a glob pattern, sorted."""
    if isinstance(paths, str):
        found = sorted(glob.glob(paths))
        if not found:
            raise SscrfError(f"{paths}: no compiled corpus file matches")
        return found
    out = [os.fsdecode(os.fspath(p)) for p in paths]  # type: ignore[union-attr]
    if not out:
        raise SscrfError("CompiledCorpus.open: the list of shards is empty")
    return out


def _open_shards(paths: list[str], validate: bool) -> "CompiledCorpus":
    """Shards compiled under one vocabulary, merged into one mapped file (see ``open``)."""
    shards = [CompiledCorpus.open(p, validate) for p in paths]
    first = shards[0]
    for shard in shards[1:]:
        if shard.checksum != first.checksum or shard.templates != first.templates:
            raise SscrfError(f"{shard.path}: compiled under another vocabulary than "
                             f"{first.path}; compile every shard with vocabulary= the first")
        if (shard.labels is None) != (first.labels is None):
            raise SscrfError(f"{shard.path}: {'no' if shard.labels is None else ''} labels "
                             f"stored, unlike {first.path}; compile every shard alike")
    names: dict[str, int] = {}
    for shard in shards:
        for label in shard.label_names or ():
            names.setdefault(label, len(names))
    ones_only = all(s._arrays.get("values") is None for s in shards)
    flags = (FLAG_ONES if ones_only else 0) | (0 if first.labels is None else FLAG_LABELS)
    sizes = tuple(sum(getattr(s, k) for s in shards) for k in ("n_tokens", "n_sentences", "nnz"))
    meta = dict(first._meta, labels=None if first.labels is None else list(names),
                source=" + ".join(paths))

    def blocks(section: str) -> Iterator[bytes]:
        if section in ("indptr", "offsets"):
            yield np.zeros(1, "<i8").tobytes()
        shift = 0
        for s in shards:
            if section == "labels":
                assert s.label_names is not None
                remap = np.array([names[x] for x in s.label_names] or [0], dtype="<i4")
            array = s._arrays.get(section)
            total = s.nnz if section == "values" else len(array) if array is not None else 0
            start = 1 if section in ("indptr", "offsets") else 0
            for k in range(start, total, _SLICE):
                if array is None:  # a shard of ones among shards with values
                    yield np.ones(min(_SLICE, total - k), "<f8").tobytes()
                    continue
                block = np.asarray(array[k:k + _SLICE])
                if section in ("indptr", "offsets"):
                    block = block + shift
                elif section == "labels":
                    block = remap[block]
                yield np.ascontiguousarray(block).tobytes()
            shift += s.nnz if section == "indptr" else s.n_tokens

    folder = os.path.dirname(os.path.abspath(paths[0]))
    fd, merged = tempfile.mkstemp(prefix=".sscrf-shards-", suffix=".corpus", dir=folder)
    os.close(fd)
    try:
        assemble(merged, meta, flags, sizes, blocks)  # type: ignore[arg-type]
        corpus = CompiledCorpus.open(merged, validate=False)
    finally:
        os.remove(merged)  # the mapping keeps its pages; the name goes now
    corpus.path = f"{paths[0]} (+{len(paths) - 1} shards)" if len(paths) > 1 else paths[0]
    corpus.paths = list(paths)
    return corpus


# -- as training input ----------------------------------------------------------------------


def unlabeled_input(X_unlabeled: Any) -> Any:
    """``X_unlabeled`` checked: a CompiledCorpus (without empty sentences) as it is, else
    :func:`sscrf.inputs.check_unlabeled`'s list."""
    if not isinstance(X_unlabeled, CompiledCorpus):
        return check_unlabeled(X_unlabeled)
    offsets = X_unlabeled.features().offsets
    for start in range(0, len(offsets) - 1, _SLICE):
        block = np.asarray(offsets[start:start + _SLICE + 1])
        empty = np.flatnonzero(block[1:] == block[:-1])
        if len(empty):
            raise SscrfError(f"{X_unlabeled.path}: unlabeled sentence {start + empty[0]} is "
                             "empty; sentences need at least one token")
    return X_unlabeled


def refuse_vocabulary_cuts(where: str, min_freq: int, max_features: Optional[int]) -> None:
    """Raise SscrfError when ``min_freq`` or ``max_features`` would cut the vocabulary of
    a compiled corpus (``where``): its ids are the model's, cut when it was compiled."""
    cuts = [(name, value) for name, value, cut in (
        ("min_freq", min_freq, min_freq != 1),
        ("max_features", max_features, max_features is not None)) if cut]
    if cuts:
        given = " and ".join(f"{name}={value}" for name, value in cuts)
        options = " and ".join("--" + name.replace("_", "-") for name, _ in cuts)
        raise SscrfError(f"{where}: a compiled corpus's vocabulary was cut when it was "
                         f"compiled: give {given} to CompiledCorpus.build (sscrf compile "
                         f"{options}) instead")


def check_labeled_corpus(X: CompiledCorpus, y: Any, use: str = "to train on it as X",
                         names: tuple[str, str] = ("X", "y")) -> None:
    """Refuse a compiled corpus given as fit's (or score's) ``X`` with a ``y``, or without
    stored labels (``use`` ends that message); ``names`` are what the caller calls X and
    y (``("X_dev", "y_dev")``)."""
    if y is not None:
        raise SscrfError(f"{X.path}: a compiled corpus as {names[0]} brings its labels; give "
                         f"{names[1]}=None")
    if X.labels is None or X.label_names is None:
        raise SscrfError(f"{X.path}: no labels stored; compile it with has_labels=True "
                         f"(sscrf compile --labeled) {use}")


def labeled_input(X: CompiledCorpus, y: Any, use: str = "to train on it as X",
                  names: tuple[str, str] = ("X", "y")) -> list[list[str]]:
    """The labels a compiled corpus given as fit's (or score's) ``X`` stores, per sentence,
    after :func:`check_labeled_corpus`.

    Raises
    ------
    SscrfError
        ``y`` given, no labels stored, or an empty sentence.
    """
    check_labeled_corpus(X, y, use, names)
    unlabeled_input(X)  # no empty sentences
    label_names = np.array(X.label_names, dtype=object)
    labels = cast("NDArray[np.int32]", X.labels)  # checked above
    offsets = np.asarray(X.features().offsets)
    return [label_names[np.asarray(labels[a:b])].tolist()
            for a, b in zip(offsets[:-1].tolist(), offsets[1:].tolist())]


def n_tokens_of(sentences: Any) -> int:
    """Tokens of a list of sentences or of a CompiledCorpus."""
    if isinstance(sentences, CompiledCorpus):
        return sentences.n_tokens
    return sum(map(len, sentences))


def _templates_of(compiled: CompiledCorpus, templates: Any) -> Optional[list[str]]:
    """The compiled corpus's template lines, refused unless ``templates`` (a model's
    ``templates=``) is ``"default"`` or the same."""
    lines = compiled.templates
    if not (isinstance(templates, str) and templates.strip() == "default"):
        parsed = None if templates is None else FeatureExtractor(templates).templates
        given = None if parsed is None else parsed.lines
        if (given is None) != (lines is None) or (given is not None
                                                  and list(given) != list(lines or ())):
            raise SscrfError(f"{compiled.path}: compiled with other templates than the "
                             "model's templates=; give templates='default' to take the "
                             "corpus's, or compile it again")
    return lines


def hashed_with(compiled: CompiledCorpus, X: Sequence[Any], templates: Any,
                n_threads: Optional[int] = None) -> tuple[FeatureExtractor, list[Features]]:
    """The hashing extractor of training on ``X`` with a hashed compiled unlabeled corpus
    (:attr:`CompiledCorpus.hash_features` buckets, its templates), and both matrices."""
    hashing = cast(int, compiled.hash_features)
    extractor = FeatureExtractor(_templates_of(compiled, templates), hash_features=hashing,
                                 n_threads=n_threads)
    extractor.hash_collisions = cast(str, compiled.hash_collisions)  # the corpus's rule
    (features,) = extractor.fit_transform(X)
    widths = [w for w in (compiled.extractor().n_columns_, extractor.n_columns_) if w is not None]
    extractor.set_hashing(min(widths) if widths else None)
    return extractor, [features, compiled.features()]


def vocabulary_with(compiled: CompiledCorpus, X: Sequence[Any], templates: Any, min_freq: int
                    ) -> tuple[FeatureExtractor, list[Features]]:
    """The vocabulary of training on ``X`` with a compiled unlabeled corpus, and both matrices.

    The compiled corpus's vocabulary comes first, unchanged (its ids are the
    model's); the attributes of ``X`` it lacks follow, those in at least
    ``min_freq`` tokens of ``X``, most frequent first.

    Returns
    -------
    (FeatureExtractor, [Features of X, Features of the compiled corpus])
    """
    lines = _templates_of(compiled, templates)
    base = compiled.attributes
    counts = FeatureExtractor(lines, min_freq).count(X)
    known = set(base)
    order = counts.frequency_order(min_freq)
    extra = [counts.strings[i] for i in order.tolist() if counts.strings[i] not in known]
    widths = [w for w in (compiled.extractor().n_columns_, counts.n_columns) if w is not None]
    extractor = FeatureExtractor(lines, min_freq)
    extractor.set_vocabulary(Vocabulary(base + extra, min(widths) if widths else None))
    n = len(extractor.attributes_ or ())
    return extractor, [extractor.transform(X)._replace(n_attributes=n), compiled.features(n)]
