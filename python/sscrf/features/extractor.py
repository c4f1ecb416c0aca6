"""FeatureExtractor: sentences of template columns or feature dicts to interned CSR matrices."""

from __future__ import annotations

from collections.abc import Mapping
from itertools import chain
from operator import itemgetter
from typing import TYPE_CHECKING, Any, Optional, Union, cast

import numpy as np

from .. import _core
from ..errors import SscrfError, SscrfTypeError
from ..inputs import check_integer, check_threads, is_integer
from .csr import Features, csr_from_matrix, is_ones, ones, renumber
from .hashing import (COLLISION_RULES, BucketNames, check_hash_features, hash_buckets,
                      hashed)
from .dicts import OLD_SEPARATOR, SEPARATOR, dict_pairs, spellings
from .sentences import flatten_corpus, locate
from .templates import parse_templates
from .vectors import check_vector_spec, column_words, vector_names, with_vectors
from .vocabulary import AttributeCounts, Vocabulary, frequency_order, token_counts

if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence

    from numpy.typing import NDArray

    from .templates import Templates

__all__ = ["AttributeIds", "FeatureExtractor", "TEMPLATE_SLICE_TOKENS"]

# Template extraction runs on slices of whole sentences of about this many
# tokens, so that its per-token temporaries exist for one slice at a time.
TEMPLATE_SLICE_TOKENS = 1 << 15

_COLUMN_TOKEN_TYPES = {list, tuple}


class FeatureExtractor:
    """Turns sentences into interned attribute matrices.

    Parameters
    ----------
    templates : None, Templates, str or list of str
        With templates (a ``Templates``, template text or its lines), a token
        is a list or tuple of column strings and attributes come from the
        templates. With ``None``, a token is a list or tuple of attribute
        strings (each with value 1.0, as python-crfsuite takes them) or a
        feature dict, flattened as python-crfsuite's ``ItemSequence`` does:

        - ``"name": "str"`` → attribute ``name:str``, value 1.0;
        - ``"name": 2.5`` (int or float, finite) → attribute ``name``, value 2.5
          (an explicit 0 is stored and counts as firing);
        - ``"name": True`` → ``name`` with 1.0; ``False`` → no attribute;
        - ``"name": ["a", "b"]`` (list, tuple or set of str) → ``name:a`` and
          ``name:b``, 1.0 each (a set in sorted order);
        - ``"name": np.array([0.5, -1.0])`` (a 1-D numpy array of numbers, a
          vector such as a word embedding) → ``name0`` with 0.5, ``name1``
          with −1.0, one attribute per position (zeros included): what the
          dict ``{"name0": 0.5, "name1": -1.0}`` gives, without a key per
          dimension (float64 arrays are read in C++);
        - ``"name": {"k": v}`` → the same rules under the name ``name:k``
          (sklearn-crfsuite's flattening), recursively.

        An attribute appearing more than once in a token (e.g. two identical
        template lines) is stored once with the values summed.
    min_freq : int
        Attributes firing at fewer than ``min_freq`` tokens over everything
        given to :meth:`fit` are dropped from the vocabulary (a count ≥
        ``min_freq`` is kept; CRFsuite's ``feature.minfreq`` sums values per
        (attribute, label) pair instead, see :class:`sscrf.CRF`).
    value_separator : str
        What joins a dict key and its string value: ``":"`` (python-crfsuite's
        naming, the default) or ``"="`` (the naming of models written before
        it, which keep it). Template attributes do not use it.
    n_threads : int or None
        Threads of template extraction (None: every core); the result does
        not depend on it. Feature-dict tokens are converted on the calling
        thread: reading Python objects needs the GIL, and the conversion is
        a fraction of the time Python takes to build the dicts (see the
        guide's "Large corpora").
    hash_features : int or None
        ``2**k`` (1 <= k <= 30): attribute strings go to ``2**k`` buckets by
        FNV-1a 64 of their UTF-8 bytes mod ``2**k`` (see
        :mod:`~sscrf.features.hashing`), with no vocabulary counted; binary
        attributes of a token sharing a bucket count once, other values add
        up. ``min_freq`` is not applied. None (default): a counted vocabulary.
    word_vectors : WordVectors or None
        Template mode: each token whose word has a vector also gets the
        attributes ``rep.v0``, ``rep.v1``, ... with its entries as values
        (:meth:`sscrf.WordRepresentations.word_vectors`). An extractor read
        from a model file records their setting and checksum, not the
        vectors: :meth:`bind_word_vectors` gives them back.

    Attributes
    ----------
    templates : Templates or None
    value_separator : str
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

    ``fit`` is the vocabulary's steps on one machine; for shards of a corpus,
    :meth:`count` each shard, :func:`~sscrf.features.merge_counts` the counts
    in shard order, :meth:`~sscrf.features.AttributeCounts.freeze` them and
    :meth:`set_vocabulary` (see :mod:`sscrf.features.vocabulary`).
    """

    # Template extraction in the core; False runs the numpy reference
    # (Templates.apply), which the tests compare it with.
    _compiled_templates = True

    def __init__(self, templates: Union[None, Templates, str, Sequence[str]] = None,
                 min_freq: int = 1, value_separator: str = SEPARATOR,
                 n_threads: Optional[int] = None, hash_features: Optional[int] = None,
                 word_vectors: Any = None) -> None:
        self.hash_features = None if hash_features is None else check_hash_features(hash_features)
        # how a token's attributes sharing a bucket combine (see hashing); "sum"
        # for extractors saved before the rule
        self.hash_collisions = "once"
        self.templates = None if templates is None else parse_templates(templates)
        self.word_vectors: Any = None
        self.vector_spec_: Optional[dict[str, Any]] = None
        if word_vectors is not None:
            if not all(hasattr(word_vectors, a) for a in ("spec", "rows", "table")):
                raise SscrfTypeError(f"word_vectors must be a WordVectors (from "
                                     f"WordRepresentations.word_vectors()), not "
                                     f"{type(word_vectors).__name__}")
            if self.templates is None:
                raise SscrfError("word_vectors go with templates; feature dicts take the "
                                 "vectors from WordRepresentations.features")
            if self.hash_features is not None:
                raise SscrfError("word_vectors and hash_features do not go together: the "
                                 "vector attributes need a vocabulary")
            self.vector_spec_ = check_vector_spec(word_vectors.spec, "word_vectors")
            self.word_vectors = word_vectors
        self.min_freq = check_integer(min_freq, "min_freq", minimum=1)
        self.n_threads = None if n_threads is None else check_threads(n_threads)
        if not isinstance(value_separator, str):
            raise SscrfTypeError(f"value_separator must be a str such as ':' or '=', not "
                                 f"{type(value_separator).__name__}")
        if not value_separator or "\0" in value_separator:
            raise SscrfError(f"value_separator must be a non-empty str without NUL such as "
                             f"':' or '=', not {value_separator!r}")
        self.value_separator = value_separator
        self.attributes_: Optional[list[str]] = None
        self._hash_fitted = False
        self.n_columns_: Optional[int] = None
        self._lookup: Optional[_core.AttributeIndex] = None  # attribute -> id, built when needed

    def __copy__(self) -> FeatureExtractor:
        # shares the compiled lookup, which nothing changes once fitted
        # (copy.copy would otherwise go through __getstate__ and drop it)
        clone = type(self).__new__(type(self))
        clone.__dict__.update(self.__dict__)
        return clone

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["_lookup"] = None  # compiled; rebuilt from attributes_ when needed
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        # pickles from before the naming field joined string values with "=",
        # and from before word vectors
        self.__dict__.update({"value_separator": OLD_SEPARATOR, "word_vectors": None,
                              "vector_spec_": None, "hash_collisions": "sum", **state})

    def __repr__(self) -> str:
        mode = (f"dicts ({self.value_separator!r} naming)" if self.templates is None
                else f"{len(self.templates)} templates")
        size = "unfitted" if self.attributes_ is None else f"{len(self.attributes_)} attributes"
        return f"<FeatureExtractor: {mode}, min_freq={self.min_freq}, {size}>"

    # -- public API -----------------------------------------------------------

    def fit(self, *corpora: Sequence[Any]) -> FeatureExtractor:
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

    def fit_transform(self, *corpora: Sequence[Any]) -> list[Features]:
        """Fit on all corpora and return each one's matrix.

        Returns
        -------
        list of Features
            One per corpus, in the order given.
        """
        return self._fit(corpora)

    def transform(self, X: Sequence[Any]) -> Features:
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
        if getattr(self, "hash_features", None) is not None:
            if not self._hash_fitted:
                raise SscrfError("this FeatureExtractor is not fitted yet; call fit first")
            return self._hashed([X])[0]
        if self.attributes_ is None:
            raise SscrfError("this FeatureExtractor is not fitted yet; call fit first")
        if self._lookup is None:
            self._lookup = _core.AttributeIndex(self.attributes_)
        features, _ = self._features(X, self._lookup, "")
        return features

    def count(self, *corpora: Sequence[Any]) -> AttributeCounts:
        """Count attributes over all sentences of the given corpora (no fit).

        The first step of building a vocabulary; counts of several shards are
        merged with :func:`merge_counts` and frozen with
        :meth:`AttributeCounts.freeze`, see :mod:`sscrf.features.vocabulary`.
        ``min_freq`` is not applied here.

        Parameters
        ----------
        *corpora : list of sentences

        Returns
        -------
        AttributeCounts
        """
        index, strings, provisional, n_columns = self._provisional(corpora, "count")
        assert strings is not None  # kept by default
        return AttributeCounts(strings, token_counts(provisional, len(index)), n_columns)

    def set_vocabulary(self, vocabulary: Vocabulary) -> FeatureExtractor:
        """Take a frozen vocabulary as this extractor's, as ``fit`` would set it.

        Parameters
        ----------
        vocabulary : Vocabulary

        Returns
        -------
        self
        """
        if not isinstance(vocabulary, Vocabulary):
            raise SscrfTypeError(
                f"set_vocabulary takes a Vocabulary, not {type(vocabulary).__name__}")
        if getattr(self, "hash_features", None) is not None:
            raise SscrfError("hashing has no vocabulary: use hash_features or max_features")
        self._lookup = vocabulary.index()
        self.attributes_ = list(vocabulary.attributes)
        self.n_columns_ = vocabulary.n_columns
        return self

    def set_hashing(self, n_columns: Optional[int] = None) -> FeatureExtractor:
        """Fitted without a pass over any corpus, as hashing needs none (``hash_features``
        must be set): :meth:`transform` then hashes.

        Parameters
        ----------
        n_columns : int or None
            The token columns recorded (what ``fit`` records: the fewest of
            any token; None: not known).

        Returns
        -------
        self
        """
        if getattr(self, "hash_features", None) is None:
            raise SscrfError("set_hashing needs hash_features")
        self.n_columns_, self._hash_fitted = n_columns, True
        self.attributes_ = cast("list[str]", BucketNames(cast(int, self.hash_features)))
        return self

    def vocabulary(self) -> Vocabulary:
        """The fitted vocabulary.

        Returns
        -------
        Vocabulary
        """
        if self.attributes_ is None:
            raise SscrfError("this FeatureExtractor is not fitted yet; call fit first")
        return Vocabulary(self.attributes_, self.n_columns_)

    def attribute_index(self) -> dict[str, int]:
        """Attribute string → id (a fresh dict).

        In dict mode with a naming other than ``"="``, a string absent from
        it is also looked up (``in``, ``[]``, ``get``) in its old spelling:
        ``w=john`` finds ``w:john`` (see :func:`~sscrf.features.dicts.spellings`),
        so that constraints and warm starts written for ``=`` still match.

        Returns
        -------
        dict of str to int
        """
        if self.attributes_ is None:
            raise SscrfError("this FeatureExtractor is not fitted yet; call fit first")
        pairs = zip(self.attributes_, range(len(self.attributes_)))
        if self.templates is None and self.value_separator != OLD_SEPARATOR:
            return AttributeIds(pairs, separator=self.value_separator)
        return dict(pairs)

    def attribute_strings(self, sentence: Sequence[Any]) -> list[list[tuple[str, float]]]:
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
        tokens, lengths = flatten_corpus([sentence], "")
        if self.templates is not None:
            columns, _ = self._columns(tokens, lengths, "")
            factors = self.templates.apply(columns, lengths)
            out = [[(strings[inverse[t]], 1.0) for inverse, _, strings in factors]
                   for t in range(len(tokens))]
            spec = getattr(self, "vector_spec_", None)
            if spec is not None:
                self._check_bound()
                rows = self.word_vectors.rows(column_words(tokens, lengths, spec["column"], ""))
                for entries, r in zip(out, rows.tolist()):
                    if r >= 0:
                        entries += zip(vector_names(spec), self.word_vectors.table[r].tolist())
            return out
        names, values, counts = dict_pairs(tokens, lengths, "", separator=self.value_separator)
        out, start = [], 0
        for count in counts:
            out.append(list(zip(names[start : start + count], values[start : start + count])))
            start += count
        return out

    def bind_word_vectors(self, word_vectors: Any) -> FeatureExtractor:
        """Give an extractor read from a model file the word vectors it was fitted
        with; they must have the recorded setting and checksum.

        Parameters
        ----------
        word_vectors : WordVectors

        Returns
        -------
        self
        """
        spec = self.vector_spec_
        if spec is None:
            raise SscrfError("this extractor was fitted without word vectors")
        given = getattr(word_vectors, "spec", None)
        if given != spec:
            differ = ([k for k in sorted(spec) if given.get(k) != spec[k]]
                      if isinstance(given, dict) else ["all"])
            raise SscrfError(f"these word vectors are not the ones the model was trained "
                             f"with ({', '.join(differ)} differ): give the same "
                             f"representations, column and scale")
        self.word_vectors = word_vectors
        return self

    def _check_bound(self) -> None:
        if self.word_vectors is None:
            spec = cast("dict[str, Any]", self.vector_spec_)
            raise SscrfError(
                f"the model reads word vectors ({spec['name']}0, ...) from word "
                "representations that are not loaded: give them back with "
                "model.bind_word_vectors(representations.word_vectors(column, scale)), "
                "the same representations and setting as in training ('sscrf tag' "
                "reads them from the file training read)")

    def to_state(self) -> dict[str, Any]:
        """JSON-serialisable state for model files.

        Returns
        -------
        dict
            ``templates`` (list of str, or None in dict mode), ``min_freq``
            (int), ``value_separator`` (str), ``attributes`` (list of str, or
            None before fit) and ``n_columns`` (int or None); with hashing
            ``hash_features`` and ``hash_collisions``; ``word_vectors`` (their
            spec) when set.
        """
        return {
            "templates": None if self.templates is None else list(self.templates.lines),
            "min_freq": self.min_freq,
            "value_separator": self.value_separator,
            "attributes": None if self.attributes_ is None
            else [] if isinstance(self.attributes_, BucketNames) else list(self.attributes_),
            "n_columns": self.n_columns_,
            **({} if getattr(self, "hash_features", None) is None
               else {"hash_features": self.hash_features,
                     "hash_collisions": self.hash_collisions}),
            **({} if self.vector_spec_ is None else {"word_vectors": dict(self.vector_spec_)}),
        }

    @classmethod
    def from_state(cls, state: Mapping[str, Any]) -> FeatureExtractor:
        """Rebuild an extractor from :meth:`to_state`'s output, validating it.

        A state without ``value_separator`` (written before the field) has
        the ``"="`` naming.

        Raises
        ------
        SscrfError
            If the state is malformed (wrong keys or types, repeated attributes).
        """
        if not isinstance(state, Mapping):
            raise SscrfError(f"feature state must be a dict, not {type(state).__name__}")
        expected = {"templates", "min_freq", "value_separator", "attributes", "n_columns"}
        hashing = state.get("hash_features")
        optional = {"hash_features", "hash_collisions", "word_vectors"}
        if set(state) - optional not in (expected, expected - {"value_separator"}):
            raise SscrfError(
                f"feature state has keys {sorted(state)}, expected {sorted(expected)}"
            )
        separator = state.get("value_separator", OLD_SEPARATOR)
        if not isinstance(separator, str):
            raise SscrfError(f"feature state: bad 'value_separator' {separator!r}")
        templates = state["templates"]
        if templates is not None and not (
            isinstance(templates, list) and all(isinstance(x, str) for x in templates)
        ):
            raise SscrfError("feature state: 'templates' must be a list of str or null")
        try:
            self = cls(templates, state["min_freq"], separator, hash_features=hashing)
        except SscrfError as error:
            raise SscrfError(f"feature state: {error}") from None
        if hashing is not None:  # states before the rule add collisions up
            rule = state.get("hash_collisions", "sum")
            if rule not in COLLISION_RULES:
                raise SscrfError(f"feature state: bad 'hash_collisions' {rule!r}")
            self.hash_collisions = rule
        elif "hash_collisions" in state:
            raise SscrfError("feature state: 'hash_collisions' without 'hash_features'")
        if "word_vectors" in state:
            if self.templates is None or self.hash_features is not None:
                raise SscrfError("feature state: word vectors go with templates and a "
                                 "vocabulary")
            self.vector_spec_ = check_vector_spec(state["word_vectors"])
        attributes = state["attributes"]
        n_columns = state["n_columns"]
        if n_columns is not None and (not is_integer(n_columns) or n_columns < 0):
            raise SscrfError(f"feature state: bad 'n_columns' {n_columns!r}")
        if self.hash_features is not None and attributes is not None:
            if attributes != []:  # fitted: the bucket names stand for the strings
                raise SscrfError("feature state: a hashed extractor's 'attributes' must be []")
            self._hash_fitted = True
            self.attributes_ = cast("list[str]", BucketNames(self.hash_features))
        elif attributes is not None:
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

    def _provisional(self, corpora: Sequence[Sequence[Any]], what: str,
                     keep_strings: bool = True
                     ) -> tuple[Any, Optional[list[str]], list[Features], Optional[int]]:
        """Each corpus' Features under ids handed out in first-occurrence order.

        ``keep_strings=False``: compiled templates do not make the attribute
        strings (None is returned; ``index.strings(ids)`` makes them later).

        Returns
        -------
        index : _core.AttributeIndex
        strings : list of str or None
            Id → attribute string.
        features : list of Features
        n_columns : int or None
            Template mode: the fewest columns of any token (None without tokens).
        """
        if not corpora:
            raise SscrfError(f"{what} needs at least one corpus (a list of sentences)")
        index, strings = _core.AttributeIndex(), cast("list[str]", [])
        provisional = []
        n_columns = None
        for k, corpus in enumerate(corpora):
            prefix = f"corpus {k}, " if len(corpora) > 1 else ""
            features, shortest = self._features(corpus, index, prefix, grow=True,
                                                new_strings=strings, keep_strings=keep_strings)
            provisional.append(features)
            if shortest is not None:
                n_columns = shortest if n_columns is None else min(n_columns, shortest)
        if not keep_strings and len(strings) != len(index):  # the compiled path made none
            return index, None, provisional, n_columns
        return index, strings, provisional, n_columns

    def _fit(self, corpora: Sequence[Sequence[Any]]) -> list[Features]:
        """Build the vocabulary; return each corpus' Features under it.

        The steps of :meth:`count` and :meth:`AttributeCounts.freeze`, fused
        so that each sentence is extracted once: the provisional matrices are
        renumbered instead of extracted again.
        """
        if getattr(self, "hash_features", None) is not None:
            return self._hashed(corpora, fit=True)
        ordered = self._fit_in_order(corpora)
        if ordered is not None:
            index, final, attributes, features, n_columns = ordered
            if final is not None:  # the core numbered them by frequency
                self._adopt(index, final,
                            index.strings(final) if attributes is None else attributes, n_columns)
                return [features]
            strings, provisional = None, [features]  # first-occurrence ids: renumbered below
        else:
            # compiled templates make the strings once, in the final order, below
            index, strings, provisional, n_columns = self._provisional(
                corpora, "fit", keep_strings=self.templates is None)
        n_ids = len(index)
        order = frequency_order(token_counts(provisional, n_ids), self.min_freq)
        if len(order) == n_ids and (np.diff(order) > 0).all():
            # the provisional ids are the final ones
            self._adopt(index, order, strings if strings is not None else index.strings(order),
                        n_columns)
            return [f._replace(n_attributes=n_ids) for f in provisional]
        attributes = (index.strings(order) if strings is None
                      else [strings[i] for i in order.tolist()])
        del strings
        new_id = self._adopt(index, order, attributes, n_columns)
        return [renumber(f, new_id, len(attributes)) for f in provisional]

    def _adopt(self, index: Any, order: NDArray[np.int64], attributes: list[str],
               n_columns: Optional[int]) -> NDArray[np.int64]:
        """Take a fit's vocabulary: ``attributes`` (the strings of ``index``'s ids
        ``order``, in final order), the index renumbered to the final ids, or
        dropped where some attributes were (the index of the kept ones is built
        when first needed). Returns the final id of each ``index`` id, -1 if dropped."""
        new_id = np.full(len(index), -1, dtype=np.int64)
        new_id[order] = np.arange(len(order))
        if len(order) < len(index):
            index = None
        elif (np.diff(order) <= 0).any():
            index.renumber(new_id)
        self.attributes_ = attributes
        self._lookup = index
        self.n_columns_ = n_columns
        return new_id

    def _fit_in_order(self, corpora: Sequence[Sequence[Any]]
                      ) -> Optional[tuple[Any, Optional[NDArray[np.int64]],
                                          Optional[list[str]], Features, Optional[int]]]:
        """A fit of one corpus by compiled templates in one call into the core
        (:meth:`Templates.fit_expand`), or None where the general path applies
        (several corpora, word vectors, a corpus the compiled reader does not
        take).

        Returns
        -------
        (index, order, attributes, features, n_columns)
            ``order`` None: ``features`` are in the index's first-occurrence
            ids, to be renumbered; else in final ids, ``order[i]`` the index
            id of final id ``i``, and ``attributes`` their strings where the
            core made them (else None).
        """
        corpus = corpora[0] if len(corpora) == 1 else None
        if (type(corpus) is not list or self.templates is None or not self._compiled_templates
                or getattr(self, "vector_spec_", None) is not None):
            return None
        encoded = _core.encode_columns(corpus, self.templates.columns, self._thread_count())
        if encoded is None:
            return None
        columns, offsets, shortest = encoded
        index = _core.AttributeIndex()
        indptr, indices, values, order, attributes = self.templates.fit_expand(
            columns, offsets, index, self.min_freq, self._thread_count())
        n_ids = len(index) if order is None else len(order)
        features = Features(indptr, indices, ones(len(indices)) if values is None else values,
                            offsets, n_ids)
        return index, order, attributes, features, shortest

    def _hashed(self, corpora: Sequence[Sequence[Any]], fit: bool = False) -> list[Features]:
        """Each corpus' Features under ``hash_features`` buckets (no vocabulary)."""
        n_buckets = cast(int, self.hash_features)
        _, strings, provisional, n_columns = self._provisional(corpora, "fit")
        assert strings is not None  # kept by default
        if fit:
            self.set_hashing(n_columns)
        bucket = hash_buckets(strings, n_buckets)
        return [hashed(f, bucket, n_buckets, self.hash_collisions) for f in provisional]

    def _features(self, X: Sequence[Any], index: Any, prefix: str, grow: bool = False,
                  new_strings: Optional[list[str]] = None, keep_strings: bool = True
                  ) -> tuple[Features, Optional[int]]:
        """:meth:`_base_features`, and the word vectors' entries when there are any."""
        spec = getattr(self, "vector_spec_", None)
        if spec is None:
            return self._base_features(X, index, prefix, grow, new_strings, keep_strings)
        self._check_bound()
        tokens, lengths = flatten_corpus(X, prefix)
        words = column_words(tokens, lengths, spec["column"], prefix)
        del tokens
        features, shortest = self._base_features(X, index, prefix, grow, new_strings,
                                                 keep_strings)
        rows = self.word_vectors.rows(words)
        names = vector_names(spec)
        if grow and (rows >= 0).any():  # interned together: consecutive ids
            ids = index.intern(names, True, new_strings if keep_strings and new_strings
                               is not None else [])
        else:
            ids = index.intern(names, False, [])
        return with_vectors(features, rows, self.word_vectors.table, ids, len(index)), shortest

    def _base_features(self, X: Sequence[Any], index: Any, prefix: str, grow: bool = False,
                       new_strings: Optional[list[str]] = None, keep_strings: bool = True
                       ) -> tuple[Features, Optional[int]]:
        """CSR matrix of a corpus under ``index`` (attribute -> id).

        ``index`` is an ``_core.AttributeIndex``. With ``grow`` (fitting), new
        attributes are added to ``index`` in order of first occurrence: token
        by token, and within a token in template or dict order; their strings
        are appended to ``new_strings`` (compiled templates with
        ``keep_strings=False`` do not make them). Without, attributes outside
        ``index`` are dropped.

        Returns
        -------
        features : Features
        shortest : int or None
            Template mode: the fewest columns of any token (None without tokens).
        """
        if self.templates is not None and self._compiled_templates and type(X) is list:
            # The columns as UTF-8 buffers read from the sentences in one
            # compiled pass, no flat token list; a corpus it does not take
            # (a token that is not an exact list or tuple of strs wide
            # enough) goes the checked way below, which names the problem.
            encoded = _core.encode_columns(X, self.templates.columns, self._thread_count())
            if encoded is not None:
                return self._expand(*encoded, index, grow,
                                    new_strings if keep_strings else None)
        tokens, lengths = flatten_corpus(X, prefix)
        offsets = np.zeros(len(lengths) + 1, dtype=np.int64)
        np.cumsum(lengths, out=offsets[1:])
        if self.templates is None and tokens and set(map(type, tokens)) <= _COLUMN_TOKEN_TYPES:
            features = self._string_list_features(tokens, offsets, index, grow, new_strings)
            if features is not None:
                return features, None
        if self.templates is None:
            # One compiled pass: no string per (token, attribute) is built
            # (the key bytes are formed in a buffer), tokens of the common
            # kinds are read in C, any other token through dict_pairs.
            separator = self.value_separator

            def slow(i: int) -> tuple[list[str], list[float]]:
                names, values, _ = dict_pairs([tokens[i]], lengths, prefix, i, separator)
                return names, values

            indptr, indices, values = index.dict_tokens_to_csr(
                tokens, grow, slow, [] if new_strings is None else new_strings, separator)
            if values is None:
                values = ones(len(indices))
            elif len(values) and not (values.max() <= _core.MAX_SCORE
                                      and values.min() >= -_core.MAX_SCORE):  # NaN: False
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
        if self._compiled_templates:
            buffers = [_core.encode_strings(columns[c]) for c in self.templates.columns]
            del columns, tokens
            return self._expand(buffers, offsets, shortest, index, grow,
                                new_strings if keep_strings else None)
        # Slices of whole sentences of about TEMPLATE_SLICE_TOKENS tokens:
        # the factorisation's per-token temporaries (int64 per cell and per
        # template) then exist for one slice at a time. Interning slice after
        # slice in each slice's reading order is interning in the corpus'
        # reading order, so ids are those of one pass over the whole corpus.
        ends = offsets[1:]
        indptr_parts, index_parts, value_parts = [], [], []
        begin, s0, nnz = 0, 0, 0
        while s0 < len(lengths):
            s1 = max(int(np.searchsorted(ends, begin + TEMPLATE_SLICE_TOKENS, side="right")),
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
        if all(map(is_ones, value_parts)):
            values = ones(len(indices))
        else:
            values = np.concatenate([np.ones(len(v)) if is_ones(v) else v for v in value_parts])
        return Features(indptr, indices, values, offsets, len(index)), shortest

    @staticmethod
    def _string_list_features(tokens: Sequence[Any], offsets: NDArray[np.int64], index: Any,
                              grow: bool, new_strings: Optional[list[str]]
                              ) -> Optional[Features]:
        """CSR of tokens that are all lists of attribute strings (python-crfsuite's
        form), interned in one call; None if an item is not a str (the general
        path then names it).

        The ids are those of the token-by-token path: new strings are interned
        in reading order, and a string repeated in a token is one entry
        holding its count.
        """
        names = list(chain.from_iterable(tokens))
        if not set(map(type, names)) <= {str}:
            return None
        counts = np.fromiter(map(len, tokens), dtype=np.int64, count=len(tokens))
        ids = index.intern(names, grow, [] if new_strings is None else new_strings)
        del names
        n_ids = max(len(index), 1)
        keys = np.repeat(np.arange(len(tokens), dtype=np.int64), counts) * n_ids + ids
        keys = keys[ids >= 0]
        del ids
        # sorted by token, then id; repeats summed (each counts 1.0)
        keys, repeats = np.unique(keys, return_counts=True)
        rows = keys // n_ids
        indptr = np.zeros(len(tokens) + 1, dtype=np.int64)
        np.cumsum(np.bincount(rows, minlength=len(tokens)), out=indptr[1:])
        indices = (keys - rows * n_ids).astype(np.int32)
        values = ones(len(indices)) if (repeats == 1).all() else repeats.astype(np.float64)
        return Features(indptr, indices, values, offsets, len(index))

    def _thread_count(self) -> int:
        """Threads of the compiled extraction (an extractor without ``n_threads``,
        as older models' are: every core)."""
        return check_threads(getattr(self, "n_threads", None))

    def _expand(self, encoded: Any, offsets: NDArray[np.int64], shortest: Optional[int],
                index: Any, grow: bool, new_strings: Optional[list[str]]
                ) -> tuple[Features, Optional[int]]:
        """Template mode in the core: (Features, shortest) of encoded columns."""
        indptr, indices, values = cast("Templates", self.templates).expand(
            encoded, offsets, index, grow, new_strings, self._thread_count())
        values = ones(len(indices)) if values is None else values
        return Features(indptr, indices, values, offsets, len(index)), shortest

    def _template_slice(self, columns: dict[int, list[str]], lengths: NDArray[np.int64],
                        index: Any, grow: bool, new_strings: Optional[list[str]]) -> Features:
        """CSR of a run of whole sentences (template mode); see :meth:`_features`.

        Templates are applied one at a time and their strings looked up, so
        that one template's strings are alive at a time; with ``grow``, the
        new ones are kept and interned at the end in order of first
        occurrence (by token, then template), so that new attributes are
        numbered in reading order.
        """
        offsets = np.zeros(len(lengths) + 1, dtype=np.int64)
        np.cumsum(lengths, out=offsets[1:])
        # matrix[t, j]: the id of template j's attribute at token t; −2 − k for
        # the k-th new attribute until it is interned.
        templates = cast("Templates", self.templates)
        matrix = np.empty((int(lengths.sum()), len(templates)), dtype=np.int32)
        unseen: list[str] = []
        unseen_first, unseen_count = [], []
        for j, (inverse, first, strings) in enumerate(templates.apply_each(columns, lengths)):
            ids = index.intern(strings, False, [])
            if grow:
                new = np.flatnonzero(ids < 0)
                ids[new] = -2 - len(unseen) - np.arange(len(new))
                unseen += map(strings.__getitem__, new.tolist())
                unseen_first.append(first[new])
                unseen_count.append(len(new))
            matrix[:, j] = ids[inverse]
            del inverse, first, strings, ids
        if unseen:
            order = np.lexsort((np.repeat(np.arange(len(unseen_count)), unseen_count),
                                np.concatenate(unseen_first)))
            new_ids = np.empty(len(unseen), dtype=np.int64)
            new_ids[order] = index.intern(list(map(unseen.__getitem__, order.tolist())), True,
                                          new_strings)
            pending = matrix < 0
            matrix[pending] = new_ids[-2 - matrix[pending]]
        return csr_from_matrix(matrix, offsets, len(index))

    def _columns(self, tokens: Sequence[Any], lengths: NDArray[np.int64], prefix: str
                 ) -> tuple[dict[int, list[str]], Optional[int]]:
        """The columns the templates read, checked: lists of str, one per token.

        Returns
        -------
        columns : dict of int to list of str
        shortest : int or None
            Fewest columns of any token (None without tokens).
        """
        templates = cast("Templates", self.templates)
        if not tokens:
            return {c: [] for c in templates.columns}, None
        if not set(map(type, tokens)) <= _COLUMN_TOKEN_TYPES:
            for i, token in enumerate(tokens):
                if not isinstance(token, (list, tuple)):
                    hint = (
                        "; feature dicts need templates=None "
                        "(CRF's default; FeatureExtractor(None))"
                        if isinstance(token, Mapping)
                        else ""
                    )
                    raise SscrfTypeError(
                        f"{locate(prefix, lengths, i)}: with templates a token must be a list "
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
                f"{locate(prefix, lengths, i)}: token has {width} column(s) but template "
                f"{user!r} uses column {column}"
            )
        columns = {}
        for c in templates.columns:
            values = list(map(itemgetter(c), tokens))
            if set(map(type, values)) != {str}:
                for i, v in enumerate(values):
                    if not isinstance(v, str):
                        raise SscrfTypeError(
                            f"{locate(prefix, lengths, i)}: column {c} is "
                            f"{type(v).__name__}, not str"
                        )
            columns[c] = values
        return columns, shortest


class AttributeIds(dict):  # type: ignore[type-arg]
    """Attribute string → id that also finds a string given in its old spelling.

    A dict; ``in``, ``[]`` and ``get`` of a string absent from it try the
    names it may have under ``separator``
    (:func:`~sscrf.features.dicts.spellings`), so ``w=john`` finds the id of
    ``w:john``.

    Parameters
    ----------
    pairs : iterable of (str, int)
    separator : str
    """

    def __init__(self, pairs: Iterable[tuple[str, int]], separator: str = SEPARATOR) -> None:
        super().__init__(pairs)
        self.separator = separator

    def __missing__(self, attribute: object) -> int:
        if not isinstance(attribute, str):
            raise KeyError(attribute)
        for name in spellings(attribute, self.separator)[1:]:
            if dict.__contains__(self, name):
                return dict.__getitem__(self, name)
        raise KeyError(attribute)

    def __contains__(self, attribute: object) -> bool:
        return dict.__contains__(self, attribute) or (
            isinstance(attribute, str)
            and any(map(self._has, spellings(attribute, self.separator)[1:])))

    def _has(self, name: str) -> bool:
        return dict.__contains__(self, name)

    def get(self, attribute: Any, default: Any = None) -> Any:
        """The id of ``attribute`` (or of its old spelling's name), else ``default``."""
        try:
            return self[attribute]
        except KeyError:
            return default
