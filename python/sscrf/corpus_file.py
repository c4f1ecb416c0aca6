"""Compiled corpora on disk: one streaming compile, then memory-mapped reads.

A corpus is compiled once (:func:`compile_corpus_file`, or ``sscrf compile
FILE -o FILE.corpus`` on the command line) and then opened with
:meth:`CompiledCorpus.open`, which maps the file's arrays into memory
(``np.memmap``) instead of reading them: a :class:`CompiledCorpus` is
accepted as ``X_unlabeled`` by :meth:`sscrf.CRF.fit` and as ``X`` by
``predict`` and ``predict_marginals``, and no Python object is made per token.

Compiling reads the source twice, each time ``buffer_tokens`` tokens at a
time: the first pass counts attributes (:meth:`FeatureExtractor.count
<sscrf.features.FeatureExtractor.count>`), which are then cut by
``min_freq`` and ``max_features`` and frozen (ids most frequent first, as
:class:`~sscrf.features.AttributeCounts` gives them); the second interns the
sentences under that vocabulary and appends them to spill files, assembled
into the output at the end. With ``vocabulary=`` (a fitted CRF, a fitted
extractor or a model file) there is no first pass.

File format (version 1), little-endian throughout::

    offset  size  field
         0     8  magic b"SSCRFCOR"
         8     4  version (uint32) = 1
        12     4  flags (uint32): 1 = every value is 1.0 (no values section),
                  2 = a labels section is present
        16     8  n_tokens (int64)
        24     8  n_sentences (int64)
        32     8  nnz, stored (token, attribute) entries (int64)
        40     8  n_attributes (int64), the vocabulary's size
        48     8  meta_bytes (int64), the length of the meta section
        56    16  the vocabulary's checksum: BLAKE2b-128 of the attribute
                  strings as compact JSON (``vocabulary_checksum``)
        72     8  BLAKE2b-64 of bytes 0..72 (the header's own checksum)
        80    48  zeros
       128        meta: UTF-8 JSON {"features": the extractor's state
                  (templates, min_freq, attributes, n_columns), "labels":
                  label strings or null, "source": str}

followed by the arrays, each starting at a multiple of 64 bytes (zeros
between), so that each maps aligned: ``indptr`` int64 ``[n_tokens + 1]``,
``offsets`` int64 ``[n_sentences + 1]``, ``indices`` int32 ``[nnz]``,
``values`` float64 ``[nnz]`` (absent with flag 1) and ``labels`` int32
``[n_tokens]`` (with flag 2, ids into the meta's labels). The file ends
exactly where the last array does.

Binary features thus take 4 bytes per entry and 8 per token (and 8 per
sentence). Opening checks, before anything is allocated from a declared
size, the magic, the version, the header's checksum and that the sizes add
up to the file's length; then the meta's vocabulary against its checksum,
and every array (monotone offsets, ids in range, finite values) a slice at
a time. A corpus is one file; shards are several files, compiled under one
vocabulary (``vocabulary=`` the first shard's, or a model) and given one at
a time.
"""

import hashlib
import json
import os
import struct
import tempfile
import time

import numpy as np

from . import _core
from .errors import SscrfError, SscrfTypeError
from .features import FeatureExtractor, Features, default_templates
from .features.csr import is_ones, ones
from .features.vocabulary import AttributeCounts, Vocabulary
from .inputs import check_integer, check_unlabeled
from .io import conll_sentences
from .progress import Progress
from .serialization import replace_file

__all__ = ["CompiledCorpus", "MAGIC", "VERSION", "compile_corpus_file", "is_compiled_corpus",
           "n_tokens_of", "unlabeled_input", "vocabulary_checksum", "vocabulary_with"]

MAGIC = b"SSCRFCOR"
VERSION = 1
_HEADER = struct.Struct("<8sIIqqqqq16s")
_HEADER_SIZE = 128
_ALIGN = 64
_FLAG_ONES, _FLAG_LABELS = 1, 2
#: The meta section holds the vocabulary: 10 million attributes take about 300 MB.
MAX_META_BYTES = 1 << 30
#: Entries per slice when validating or copying: bounds the temporaries.
_SLICE = 1 << 22


def vocabulary_checksum(attributes):
    """BLAKE2b-128 of attribute strings (compact JSON, UTF-8): the id a corpus file and a
    model are compared by.

    Parameters
    ----------
    attributes : list of str

    Returns
    -------
    bytes (16)
    """
    text = json.dumps(list(attributes), ensure_ascii=False, separators=(",", ":"))
    return hashlib.blake2b(text.encode("utf-8"), digest_size=16).digest()


def _aligned(n):
    return -(-n // _ALIGN) * _ALIGN


def _sections(n_tokens, n_sentences, nnz, meta_bytes, flags):
    """(name, dtype, count, offset) of each array, and the file's length (Python ints)."""
    at = _aligned(_HEADER_SIZE + meta_bytes)
    out = []
    layout = [("indptr", "<i8", n_tokens + 1), ("offsets", "<i8", n_sentences + 1),
              ("indices", "<i4", nnz)]
    if not flags & _FLAG_ONES:
        layout.append(("values", "<f8", nnz))
    if flags & _FLAG_LABELS:
        layout.append(("labels", "<i4", n_tokens))
    end = at
    for name, dtype, count in layout:
        out.append((name, dtype, count, at))
        end = at + count * np.dtype(dtype).itemsize
        at = _aligned(end)
    return out, end


def is_compiled_corpus(path):
    """Whether the file at ``path`` starts with a compiled corpus's magic."""
    try:
        with open(path, "rb") as f:
            return f.read(len(MAGIC)) == MAGIC
    except OSError:
        return False


class CompiledCorpus:
    """A compiled corpus file, memory-mapped (:meth:`open`; written by :func:`compile_corpus_file`).

    Attributes
    ----------
    path : str
    n_tokens, n_sentences, nnz, n_attributes : int
    checksum : bytes
        The vocabulary's :func:`vocabulary_checksum`.
    label_names : list of str or None
        With stored labels, the strings of :attr:`labels`' ids.
    labels : ndarray of int32 or None
    nbytes : int
        The file's size.
    """

    def __init__(self, path, header, meta, arrays):
        self.path = path
        (self.n_tokens, self.n_sentences, self.nnz, self.n_attributes, self.checksum,
         self.nbytes) = header
        self._meta = meta
        self._arrays = arrays
        self.labels = arrays.get("labels")
        self.label_names = meta.get("labels")

    def __len__(self):
        """Number of sentences."""
        return self.n_sentences

    def __iter__(self):
        raise SscrfTypeError(f"{self.path}: a CompiledCorpus is not a list of sentences; it "
                             "is taken as fit's X_unlabeled and by predict and "
                             "predict_marginals (without allowed=)")

    def __repr__(self):
        return (f"<CompiledCorpus {self.path!r}: {self.n_sentences:,} sentences, "
                f"{self.n_tokens:,} tokens, {self.n_attributes:,} attributes>")

    @property
    def attributes(self):
        """Id → attribute string: the vocabulary the corpus was compiled under."""
        return self._meta["features"]["attributes"]

    @property
    def templates(self):
        """The template lines (None: compiled from feature dicts)."""
        return self._meta["features"]["templates"]

    def extractor(self):
        """A :class:`~sscrf.features.FeatureExtractor` frozen to this corpus's vocabulary."""
        return FeatureExtractor.from_state(self._meta["features"])

    def features(self, n_attributes=None):
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

    def check_vocabulary(self, attributes, templates, what="the model"):
        """Refuse a vocabulary (and templates) this corpus was not compiled under.

        The corpus's vocabulary must be the first ``n_attributes`` strings of
        ``attributes`` (a model trained on it may add its labeled data's
        attributes after them), and its templates the same.

        Raises
        ------
        SscrfError
        """
        if (self.templates is None) != (templates is None) or (
                templates is not None and list(templates) != list(self.templates)):
            raise SscrfError(f"{self.path}: compiled with other templates than {what}'s; "
                             "compile it again with --vocabulary set to the model")
        if len(attributes) < self.n_attributes or vocabulary_checksum(
                attributes[:self.n_attributes]) != self.checksum:
            raise SscrfError(f"{self.path}: compiled under another vocabulary than {what}'s "
                             f"({self.n_attributes:,} attributes against {len(attributes):,}); "
                             "compile it again with --vocabulary set to the model")

    def features_for(self, extractor):
        """:meth:`features` after :meth:`check_vocabulary` against a fitted extractor."""
        templates = None if extractor.templates is None else extractor.templates.lines
        self.check_vocabulary(extractor.attributes_, templates)
        return self.features(len(extractor.attributes_))

    @classmethod
    def open(cls, path, validate=True):
        """Map a compiled corpus file, after checking it.

        Parameters
        ----------
        path : str or os.PathLike
        validate : bool
            Check every array (a pass over the file); the header, the sizes
            and the vocabulary are always checked.

        Returns
        -------
        CompiledCorpus

        Raises
        ------
        SscrfError
            A foreign, truncated or corrupt file, naming it and the reason.
        """
        path = os.fsdecode(os.fspath(path))
        try:
            size = os.path.getsize(path)
            with open(path, "rb") as f:
                head = f.read(_HEADER_SIZE)
                header, flags, meta_bytes = _read_header(path, head, size)
                meta = _read_meta(path, f.read(meta_bytes), header, flags)
        except OSError as e:
            raise SscrfError(f"{path}: cannot read the compiled corpus ({e.strerror})") from None
        n_tokens, n_sentences, nnz = header[:3]
        arrays = {}
        for name, dtype, count, offset in _sections(n_tokens, n_sentences, nnz, meta_bytes,
                                                    flags)[0]:
            arrays[name] = (np.zeros(count, dtype=dtype) if count == 0 else
                            np.memmap(path, dtype=dtype, mode="r", offset=offset,
                                      shape=(count,)))
        corpus = cls(path, header + (size,), meta, arrays)
        if validate:
            _validate(corpus)
        return corpus

    @classmethod
    def build(cls, source, path, **options):
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


def _read_header(path, head, size):
    if len(head) < _HEADER_SIZE:
        if head[:len(MAGIC)] != MAGIC[:len(head)] or not head:
            raise SscrfError(f"{path}: not a compiled sscrf corpus (no {MAGIC!r} magic)")
        raise SscrfError(f"{path}: truncated: {size} bytes, shorter than the "
                         f"{_HEADER_SIZE}-byte header")
    (magic, version, flags, n_tokens, n_sentences, nnz, n_attributes, meta_bytes,
     checksum) = _HEADER.unpack_from(head)
    if magic != MAGIC:
        raise SscrfError(f"{path}: not a compiled sscrf corpus (no {MAGIC!r} magic)")
    if version != VERSION:
        raise SscrfError(f"{path}: compiled corpus version {version}; this sscrf reads "
                         f"version {VERSION}: compile it again")
    own = hashlib.blake2b(head[:72], digest_size=8).digest()
    if head[72:80] != own:
        raise SscrfError(f"{path}: corrupt header (its checksum does not match)")
    if flags & ~(_FLAG_ONES | _FLAG_LABELS):
        raise SscrfError(f"{path}: corrupt header (unknown flags {flags:#x})")
    if min(n_tokens, n_sentences, nnz, n_attributes, meta_bytes) < 0 \
            or n_attributes > np.iinfo(np.int32).max or meta_bytes > MAX_META_BYTES:
        raise SscrfError(f"{path}: corrupt header (sizes out of range)")
    # Python integers: a declared size cannot overflow before it is compared.
    _, end = _sections(n_tokens, n_sentences, nnz, meta_bytes, flags)
    if end != size:
        what = "truncated" if size < end else "corrupt"
        raise SscrfError(f"{path}: {what}: its header declares {end:,} bytes, the file has "
                         f"{size:,}")
    return (n_tokens, n_sentences, nnz, n_attributes, checksum), flags, meta_bytes


def _read_meta(path, raw, header, flags):
    try:
        meta = json.loads(raw.decode("utf-8"))
        features = meta["features"]
        attributes = features["attributes"]
        ok = (isinstance(attributes, list) and len(attributes) == header[3]
              and all(isinstance(a, str) for a in attributes))
    except (UnicodeDecodeError, ValueError, KeyError, TypeError):
        ok = False
    if not ok:
        raise SscrfError(f"{path}: corrupt meta section (not the vocabulary the header declares)")
    if vocabulary_checksum(attributes) != header[4]:
        raise SscrfError(f"{path}: corrupt: the vocabulary does not match its checksum")
    labels = meta.get("labels")
    if bool(flags & _FLAG_LABELS) != (labels is not None) or (
            labels is not None and not all(isinstance(x, str) for x in labels)):
        raise SscrfError(f"{path}: corrupt meta section (labels)")
    try:
        FeatureExtractor.from_state(features)
    except SscrfError as e:
        raise SscrfError(f"{path}: corrupt meta section ({e})") from None
    return meta


def _check_monotone(path, name, a, last):
    """``a[0] == 0``, non-decreasing, ``a[-1] == last``, a slice at a time."""
    if a[0] != 0 or a[-1] != last:
        raise SscrfError(f"{path}: corrupt {name} (must run from 0 to {last:,})")
    for start in range(0, len(a) - 1, _SLICE):
        block = np.asarray(a[start:start + _SLICE + 1])
        if (block[1:] < block[:-1]).any():
            raise SscrfError(f"{path}: corrupt {name} (decreasing near entry {start:,})")


def _validate(corpus):
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
        n = len(corpus.label_names)
        for start in range(0, corpus.n_tokens, _SLICE):
            block = labels[start:start + _SLICE]
            if block.min() < 0 or block.max() >= n:
                raise SscrfError(f"{path}: corrupt: a label id out of range near token "
                                 f"{start:,}")


# -- compiling ------------------------------------------------------------------------------


def _batches(source, has_labels, encoding, buffer_tokens):
    """Lists of (tokens, labels) sentences of about ``buffer_tokens`` tokens."""
    if isinstance(source, (str, bytes, os.PathLike)):
        sentences = ((tokens, labels) for _, tokens, labels in
                     conll_sentences(source, has_labels, False, None, encoding))
    else:
        sentences = ((s, None) for s in source)
    batch, n = [], 0
    for item in sentences:
        batch.append(item)
        n += len(item[0])
        if n >= buffer_tokens:
            yield batch
            batch, n = [], 0
    if batch:
        yield batch


def _rate(report, k, what, tokens, started):
    elapsed = time.perf_counter() - started
    report.step(k, f"{what}: {tokens:,} tokens, {tokens / max(elapsed, 1e-9):,.0f} tokens/s, "
                   f"{elapsed:.1f} s")


def _count(source, extractor, has_labels, encoding, buffer_tokens, report):
    """Attribute counts over the source, a batch at a time (the vocabulary's first pass)."""
    index, strings = _core.AttributeIndex(), []
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


def _first_sentence(source, has_labels, encoding):
    for batch in _batches(source, has_labels, encoding, 1):
        return batch[0][0]
    return None


def _extractor_of(vocabulary):
    """The fitted extractor of a CRF, an extractor or a compiled corpus."""
    if isinstance(vocabulary, CompiledCorpus):
        return vocabulary.extractor()
    extractor = getattr(vocabulary, "extractor_", vocabulary)
    if not isinstance(extractor, FeatureExtractor) or extractor.attributes_ is None:
        raise SscrfTypeError("vocabulary= takes a fitted CRF, a fitted FeatureExtractor or a "
                             f"CompiledCorpus, not {type(vocabulary).__name__}")
    return extractor


def compile_corpus_file(source, path, *, templates="default", vocabulary=None, min_freq=1,
                        max_features=None, has_labels=False, encoding="utf-8",
                        buffer_tokens=1 << 18, verbose=False):
    """Compile sentences into a corpus file (see the module's documentation for the format).

    Parameters
    ----------
    source : str, os.PathLike or list of sentences
        A CoNLL file (read twice, as a stream, ``buffer_tokens`` at a time)
        or sentences: token column lists (templates) or feature dicts
        (``templates=None``).
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
        vocabulary) and ``seconds``.
    """
    started = time.perf_counter()
    check_integer(buffer_tokens, "buffer_tokens", minimum=1)
    if max_features is not None:
        check_integer(max_features, "max_features", minimum=1)
    if has_labels and not isinstance(source, (str, bytes, os.PathLike)):
        raise SscrfError("has_labels=True reads a CoNLL file; give its path as source")
    if not isinstance(source, (str, bytes, os.PathLike)):
        source = check_unlabeled(source, "source")
    report = Progress(verbose)
    name = os.fsdecode(source) if isinstance(source, (str, bytes, os.PathLike)) else "sentences"
    if vocabulary is not None:
        extractor = _extractor_of(vocabulary)
    else:
        if isinstance(templates, str) and templates.strip() == "default":
            first = _first_sentence(source, has_labels, encoding)
            templates = default_templates(1 if not first else len(first[0]))
        extractor = FeatureExtractor(templates, min_freq)
        counts = _count(source, extractor, has_labels, encoding, buffer_tokens, report)
        extractor.set_vocabulary(counts.freeze(min_freq, max_features))
        del counts
    report.note(f"vocabulary: {len(extractor.attributes_):,} attributes")
    out = _write(source, path, name, extractor, has_labels, encoding, buffer_tokens, report)
    out["seconds"] = time.perf_counter() - started
    report.note(f"compiled {name} to {os.fsdecode(path)}: {out['n_tokens']:,} tokens, "
                f"{out['bytes'] / max(out['n_tokens'], 1):.1f} bytes per token, "
                f"{out['seconds']:.1f} s")
    return out


def _write(source, path, name, extractor, has_labels, encoding, buffer_tokens, report):
    """Second pass: intern each batch, spill its arrays, assemble the file."""
    path = os.fsdecode(os.fspath(path))
    label_ids = {}
    n_tokens = n_sentences = nnz = 0
    all_ones, started = True, time.perf_counter()
    folder = os.path.dirname(os.path.abspath(path))
    with tempfile.TemporaryDirectory(prefix=".sscrf-compile-", dir=folder) as spill:
        files = {k: open(os.path.join(spill, k), "wb")
                 for k in ("indptr", "offsets", "indices", "values", "labels")}
        try:
            files["indptr"].write(np.zeros(1, "<i8").tobytes())
            files["offsets"].write(np.zeros(1, "<i8").tobytes())
            for k, batch in enumerate(_batches(source, has_labels, encoding, buffer_tokens), 1):
                f = extractor.transform([s for s, _ in batch])
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
            for f in files.values():
                f.close()
        flags = (_FLAG_ONES if all_ones else 0) | (_FLAG_LABELS if has_labels else 0)
        state = extractor.to_state()
        meta = json.dumps({"features": state, "labels": list(label_ids) if has_labels else None,
                           "source": name}, ensure_ascii=False).encode("utf-8")
        sections, end = _sections(n_tokens, n_sentences, nnz, len(meta), flags)
        head = _HEADER.pack(MAGIC, VERSION, flags, n_tokens, n_sentences, nnz,
                            len(state["attributes"]), len(meta),
                            vocabulary_checksum(state["attributes"]))
        head += hashlib.blake2b(head, digest_size=8).digest()

        def write(out):
            out.write(head.ljust(_HEADER_SIZE, b"\0"))
            out.write(meta)
            for section, _, _, offset in sections:
                out.write(b"\0" * (offset - out.tell()))
                with open(os.path.join(spill, section), "rb") as f:
                    while True:
                        block = f.read(1 << 24)
                        if not block:
                            break
                        out.write(block)

        replace_file(path, write)
    return {"n_tokens": n_tokens, "n_sentences": n_sentences, "nnz": nnz,
            "n_attributes": len(extractor.attributes_), "bytes": end,
            "array_bytes": end - sections[0][3]}


# -- as training input ----------------------------------------------------------------------


def unlabeled_input(X_unlabeled):
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


def n_tokens_of(sentences):
    """Tokens of a list of sentences or of a CompiledCorpus."""
    if isinstance(sentences, CompiledCorpus):
        return sentences.n_tokens
    return sum(map(len, sentences))


def vocabulary_with(compiled, X, templates, min_freq):
    """The vocabulary of training on ``X`` with a compiled unlabeled corpus, and both matrices.

    The compiled corpus's vocabulary comes first, unchanged (its ids are the
    model's); the attributes of ``X`` it lacks follow, those in at least
    ``min_freq`` tokens of ``X``, most frequent first.

    Returns
    -------
    (FeatureExtractor, [Features of X, Features of the compiled corpus])
    """
    lines = compiled.templates
    if not (isinstance(templates, str) and templates.strip() == "default"):
        given = None if templates is None else FeatureExtractor(templates).templates.lines
        if (given is None) != (lines is None) or (given is not None
                                                  and list(given) != list(lines)):
            raise SscrfError(f"{compiled.path}: compiled with other templates than the "
                             "model's templates=; give templates='default' to take the "
                             "corpus's, or compile it again")
    base = compiled.attributes
    counts = FeatureExtractor(lines, min_freq).count(X)
    known = set(base)
    order = counts.frequency_order(min_freq)
    extra = [counts.strings[i] for i in order.tolist() if counts.strings[i] not in known]
    widths = [w for w in (compiled.extractor().n_columns_, counts.n_columns) if w is not None]
    extractor = FeatureExtractor(lines, min_freq)
    extractor.set_vocabulary(Vocabulary(base + extra, min(widths) if widths else None))
    n = len(extractor.attributes_)
    return extractor, [extractor.transform(X)._replace(n_attributes=n), compiled.features(n)]
