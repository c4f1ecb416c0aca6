"""Training a CRF on a Dask cluster: sentences in shards on the workers, L-BFGS on the client.

:class:`ShardedCorpus` holds sentences as futures on the workers, one shard
each. :func:`fit` builds the vocabulary, label set and layout from the
shards' counts (the ones ``CRF.fit`` builds from the same sentences), then
runs sscrf's own optimiser on the client (:class:`ClusterObjective` is the
objective it minimises). Each evaluation sends θ to the cluster once and
runs one task per worker: the shards are cut into groups, aligned blocks of
the fixed binary tree over the shard indices
(:func:`sscrf.distributed.shards.shard_groups`), one group per worker, so
that each task evaluates its shards where they live and adds them along
their part of the tree, and tasks on the workers add the groups' results
along the rest of it. Only the final loss and gradient reach the client,
and the bits do not depend on how many workers there are or which holds
which shard. GE takes two such rounds: the expectation sums first (a small
M × S array from each worker), the score weights computed from their total
on the client, then the gradient. The design is Spark MLlib's L-BFGS
(driver-side optimiser, ``treeAggregate``, broadcast weights), on Dask.

Every step is a pure function of the shard's sentences, so a worker lost
during a fit costs its shards' recomputation elsewhere and nothing else:
the model is the same.
"""

from __future__ import annotations

import time
import uuid
import warnings
from typing import TYPE_CHECKING, Any, Callable, Optional, Sequence

import numpy as np
import dask.bag as db
from dask import delayed
from distributed import Client, Future
from distributed.client import FutureCancelledError

from .. import constraints as _constraints
from ..corpus_file import refuse_vocabulary_cuts
from ..errors import SscrfError, SscrfTypeError
from ..features import FeatureExtractor, default_templates
from ..features.vocabulary import merge_counts
from ..io import read_conll, text_sentences
from ..layout import ParameterLayout
from ..minimizer import minimize
from ..objectives import GEPenalty, Objective, Term
from ..optim import STOP_CALLBACK, STOP_INTERRUPTED
from ..progress import Progress
from ..fit_callbacks import shifted_callback
from ..training import (ZERO_WEIGHT_WARNING, check_params, kept_constraints, model_labels,
                        training_record)
from .shards import (FitContext, Partial, PathOrPaths, Shard, add_into, add_results,
                     compiled_extractor, compiled_shard, compiled_terms, compiled_vocabulary,
                     expand_paths, forget_fit, layout_from_pairs, make_shard,
                     shard_attribute_tokens, shard_counts, shard_groups, shard_labels,
                     shard_pairs, shard_partial, tree_sum, with_ge_gradient)

if TYPE_CHECKING:
    from numpy.typing import NDArray

__all__ = ["ClusterObjective", "ShardedCorpus", "fit"]

#: Tries of one evaluation when the workers holding θ are lost during it.
EVALUATION_ATTEMPTS = 5


def _conll_shard(path: str, has_labels: bool, encoding: str) -> Shard:
    corpus = read_conll(path, has_labels=has_labels, encoding=encoding)
    return make_shard(corpus.tokens, corpus.labels if has_labels else None, path)


def _lines_shard(path: str, encoding: str) -> Shard:
    sentences = [[[word] for word in words] for words in text_sentences(path, encoding)]
    return make_shard(sentences, None, path)


def _partition_shard(partition: Sequence[Any], labeled: bool) -> Shard:
    if not labeled:
        return make_shard(list(partition), None, "a bag partition")
    pairs = list(partition)
    for k, pair in enumerate(pairs):
        if not (isinstance(pair, (tuple, list)) and len(pair) == 2):
            raise SscrfError(f"a labeled bag holds (sentence, labels) pairs; element {k} of a "
                             f"partition is {type(pair).__name__}")
    return make_shard([p[0] for p in pairs], [p[1] for p in pairs], "a bag partition")


def _fit_context(*fields: Any) -> FitContext:
    return FitContext(*fields)


def _held(value: Any) -> Any:
    return value


def _shard_sentences(shard: Shard) -> list[Any]:
    return list(shard.X)


def _n_columns(shard: Shard) -> Optional[int]:
    for sentence in shard.X:
        for token in sentence:
            return len(token)
    return None


class ShardedCorpus:
    """Sentences held on the workers of a Dask cluster, one future per shard.

    Build one with :meth:`from_sentences`, :meth:`from_conll`,
    :meth:`from_text` or :meth:`from_bag`. Each shard is computed by a
    task, so a shard lost with its worker is rebuilt elsewhere. The shard
    order is the corpus order: the vocabulary and the sums of a fit follow
    it, and the same partition gives the same model wherever the shards are.

    Attributes
    ----------
    shards : list of distributed.Future
        Each resolves to a :class:`sscrf.distributed.shards.Shard`.
    labeled : bool
    compiled : bool
        The shards are compiled corpus files (:meth:`from_compiled`).
    """

    def __init__(self, client: Client, shards: Sequence[Future], labeled: bool,
                 compiled: bool = False) -> None:
        if not isinstance(client, Client):
            raise SscrfTypeError(f"client must be a distributed.Client, not "
                                 f"{type(client).__name__}")
        if not shards:
            raise SscrfError("a sharded corpus needs at least one shard")
        self.client = client
        self.shards = list(shards)
        self.labeled = bool(labeled)
        self.compiled = bool(compiled)

    def __len__(self) -> int:
        return len(self.shards)

    def __repr__(self) -> str:
        kind = "labeled" if self.labeled else "unlabeled"
        return f"ShardedCorpus({len(self.shards)} {kind} shards)"

    def to_bag(self) -> db.Bag:
        """The shards' sentences as a ``dask.bag.Bag``, one partition per shard, read
        where the shards lie: what :func:`sscrf.distributed.predict` and
        :func:`sscrf.distributed.score_pool` take (they take the corpus itself too)."""
        if self.compiled:
            raise SscrfError("compiled corpus files hold features, not sentences: tag the "
                             "sentences they were compiled from (conll_bag(paths))")
        part = delayed(_shard_sentences, pure=True)
        return db.from_delayed([part(shard) for shard in self.shards])

    @classmethod
    def from_sentences(cls, client: Client, X: Sequence[Any], y: Optional[Sequence[Any]] = None,
                       *, n_shards: Optional[int] = None) -> ShardedCorpus:
        """Cut sentences held here into ``n_shards`` consecutive shards (default: one per
        worker) and send them to the cluster. ``y``: their labels, or None for
        unlabeled text."""
        X = list(X)
        if y is not None and len(y) != len(X):
            raise SscrfError(f"X has {len(X)} sentences and y {len(y)}")
        k = n_shards if n_shards is not None else max(1, len(client.scheduler_info()["workers"]))
        if not isinstance(k, int) or k < 1:
            raise SscrfError(f"n_shards must be a positive integer, not {n_shards!r}")
        bounds = np.linspace(0, len(X), min(k, max(len(X), 1)) + 1).astype(int)
        futures = [client.submit(make_shard, X[a:b], None if y is None else list(y[a:b]),
                                 f"shard {i}", pure=False)
                   for i, (a, b) in enumerate(zip(bounds[:-1], bounds[1:]))]
        return cls(client, futures, y is not None)

    @classmethod
    def from_conll(cls, client: Client, paths: PathOrPaths, *, has_labels: bool = True,
                   encoding: str = "utf-8") -> ShardedCorpus:
        """One shard per CoNLL column file (a list, or a glob expanded here), read on the
        workers: they must see the same paths. ``has_labels``: the last column is the
        label (False for unlabeled text in columns)."""
        futures = [client.submit(_conll_shard, path, has_labels, encoding, pure=False)
                   for path in expand_paths(paths)]
        return cls(client, futures, has_labels)

    @classmethod
    def from_text(cls, client: Client, paths: PathOrPaths, *, encoding: str = "utf-8"
                  ) -> ShardedCorpus:
        """Unlabeled text, one shard per file, one sentence of whitespace-separated words
        per line; each token is the one column ``[word]`` (default templates of one
        column). Blank lines are skipped."""
        futures = [client.submit(_lines_shard, path, encoding, pure=False)
                   for path in expand_paths(paths)]
        return cls(client, futures, False)

    @classmethod
    def from_compiled(cls, client: Client, paths: PathOrPaths, *, labeled: bool = False
                      ) -> ShardedCorpus:
        """One shard per compiled corpus file (``sscrf compile``, or
        :func:`sscrf.compile_corpus_file`), memory-mapped on the workers: they must see
        the same paths. The files must share one vocabulary (compile them with
        ``--vocabulary`` set to the first, or to a model); a fit takes it as it is,
        as ``CRF.fit`` takes a compiled corpus's. ``labeled``: the files store labels
        (``sscrf compile --labeled``), for ``X``. Each file is checked where it is
        read (:meth:`sscrf.CompiledCorpus.open`)."""
        futures = [client.submit(compiled_shard, path, labeled, pure=False)
                   for path in expand_paths(paths)]
        return cls(client, futures, labeled, compiled=True)

    @classmethod
    def from_bag(cls, client: Client, bag: db.Bag, *, labeled: bool = False) -> ShardedCorpus:
        """One shard per partition of a ``dask.bag.Bag`` of sentences, or of
        ``(sentence, labels)`` pairs with ``labeled=True``."""
        shard = delayed(_partition_shard, pure=True)
        futures = client.compute([shard(part, labeled) for part in bag.to_delayed()])
        return cls(client, futures, labeled)


class _ClusterSum(Term):
    """One data term of the objective: the sum of every shard's terms, evaluated on the
    cluster (:class:`sscrf.objectives.Objective` adds the L2 prior, as on one machine)."""

    name = "shards"

    def __init__(self, objective: ClusterObjective, stage: str) -> None:  # no corpus here
        self.objective, self.stage, self.weight = objective, stage, 1.0

    def _evaluate(self, theta: NDArray[np.float64], out: Optional[NDArray[np.float64]]
                  ) -> tuple[float, NDArray[np.float64]]:
        loss, grad = self.objective.data_terms(theta, self.stage)
        if out is None:
            return loss, grad
        np.copyto(out, grad)
        return loss, out


class ClusterObjective:
    """The objective ``CRF.fit`` minimises, over sharded sentences, evaluated on a cluster.

    Building it does what ``fit`` does before its first iteration: the
    vocabulary from the shards' counts, the label set, the layout and, with
    ``constraints``, the GE constraints kept (as :meth:`sscrf.CRF.fit` keeps
    them, with its warnings) and their firing counts. Calling it at θ gives
    ``(loss, gradient)`` with the L2 prior, the form
    ``scipy.optimize.minimize(..., jac=True)`` takes; :func:`fit` runs
    sscrf's own L-BFGS on it. Close it (or use it in a ``with`` block) to
    free the compiled shards on the workers.

    Parameters
    ----------
    client : distributed.Client
    estimator : sscrf.CRF
        Its hyperparameters define the objective.
    X : ShardedCorpus
        Labeled sentences (complete, partial annotations, alternatives).
    X_unlabeled : ShardedCorpus, optional
        Unlabeled sentences, for entropy (``entropy_weight > 0``) and GE.
    constraints : dict, optional
        GE constraints ``{attribute: {label: probability}}``, with ``ge_weight > 0``.

    Attributes
    ----------
    extractor : FeatureExtractor
        The frozen vocabulary (the fitted model's ``extractor_``).
    classes : list of str
    layout : ParameterLayout
    feature_set : str
    constraints : dict or None
        The GE constraints kept.
    n_groups : int
        Tasks per evaluation: one per worker at the start.
    """

    def __init__(self, client: Client, estimator: Any, X: ShardedCorpus,
                 X_unlabeled: Optional[ShardedCorpus] = None, *, constraints: Any = None
                 ) -> None:
        params = estimator.get_params()
        self.params, self.n_threads = params, check_params(params)
        constraints = _check_supported(params, X, X_unlabeled, constraints)
        started = time.perf_counter()
        self.report = Progress(params["verbose"])
        self.client, self.fit_id = client, uuid.uuid4().hex
        self.shards = X.shards + ([] if X_unlabeled is None else X_unlabeled.shards)
        unlabeled = [] if X_unlabeled is None else X_unlabeled.shards
        compiled = [c.compiled for c in (X, X_unlabeled) if c is not None]
        if any(compiled) and not all(compiled):
            raise SscrfError("X and X_unlabeled must both be compiled corpus files "
                             "(ShardedCorpus.from_compiled), or both sentences: a compiled "
                             "corpus brings its vocabulary, sentences have theirs counted")
        if any(compiled):
            refuse_vocabulary_cuts("the compiled shards", params["min_freq"],
                                   params.get("max_features"))
        extractor = (self._compiled_vocabulary() if any(compiled)
                     else self._vocabulary(params))
        used: set[str] = set().union(*client.gather([client.submit(shard_labels, s)
                                                     for s in X.shards]))
        classes = model_labels(params, [sorted(used)], constraints is not None, constraints)
        feature_set = params["feature_set"]
        if feature_set == "auto":
            feature_set = "dense" if X_unlabeled is not None else "observed"
        n_attributes = len(extractor.attributes_ or [])
        extractor_future = client.submit(_held, extractor, pure=False)  # as the context, below
        if feature_set == "dense":
            layout = ParameterLayout.every_pair(n_attributes, len(classes))
        else:
            keys = client.gather([client.submit(shard_pairs, s, extractor_future, classes)
                                  for s in X.shards])
            layout = layout_from_pairs(keys, n_attributes, len(classes))
        self.extractor, self.classes, self.layout = extractor, classes, layout
        self.feature_set, self.constraints = feature_set, None
        context = FitContext(extractor, classes, layout, params, self.n_threads)
        targets = None
        if constraints is not None:
            index = extractor.attribute_index()
            wanted = np.array(sorted({index[a] for a in constraints if a in index}),
                              dtype=np.int64)
            fires = np.zeros(n_attributes, dtype=bool)
            if len(wanted):
                found = client.gather([client.submit(shard_attribute_tokens, s,
                                                     extractor_future, wanted)
                                       for s in unlabeled])
                fires[wanted] = np.sum(found, axis=0) > 0
            constraint_of_attribute, targets, self.constraints = kept_constraints(
                constraints, extractor, fires, classes)
            context = context._replace(constraint_of_attribute=constraint_of_attribute,
                                       n_constraints=len(targets))
        # a task's result, not scattered data: lost with a worker, it is computed again
        # elsewhere from the task itself (scattered data lost with every copy is gone)
        self.context = client.submit(_fit_context, *context, pure=False)
        self.groups = shard_groups(len(self.shards), len(client.scheduler_info()["workers"]))
        self._placement = self._initial_placement()
        self.n_supervised, self.n_terms, ge_counts = self._count_terms()
        self.penalty = None
        if targets is not None:
            if ge_counts is None:  # kept constraints fire in some unlabeled shard
                raise SscrfError("no unlabeled shard holds the GE constraints' tokens")
            self.penalty = GEPenalty(targets, ge_counts, params["ge_penalty"])
        self.report.note(f"features: {n_attributes:,} attributes, {len(classes)} labels, "
                         f"{layout.core.n_parameters:,} parameters ({feature_set} feature "
                         f"set), {len(self.shards)} shards in {len(self.groups)} groups, "
                         f"{time.perf_counter() - started:.1f} s")

    @property
    def n_groups(self) -> int:
        return len(self.groups)

    def _vocabulary(self, params: dict[str, Any]) -> FeatureExtractor:
        client, templates = self.client, params["templates"]
        if isinstance(templates, str) and templates.strip() == "default":
            columns = [c for c in client.gather([client.submit(_n_columns, s)
                                                 for s in self.shards]) if c is not None]
            templates = default_templates(columns[0] if columns else 1)
        extractor = FeatureExtractor(templates, params["min_freq"], n_threads=self.n_threads)
        counts = client.gather([client.submit(shard_counts, s, extractor)
                                for s in self.shards])
        extractor.set_vocabulary(merge_counts(counts).freeze(params["min_freq"],
                                                             params.get("max_features")))
        return extractor

    def _compiled_vocabulary(self) -> FeatureExtractor:
        client = self.client
        found = client.gather([client.submit(compiled_vocabulary, s) for s in self.shards])
        for path, key in found[1:]:
            if key != found[0][1]:
                raise SscrfError(f"{path}: compiled under another vocabulary or templates "
                                 f"than {found[0][0]}; compile the shards with --vocabulary "
                                 "set to one of them")
        extractor: FeatureExtractor = client.submit(compiled_extractor,
                                                    self.shards[0]).result()
        return extractor

    # -- placement: one group per worker, where most of its shards are ----------------

    def _initial_placement(self) -> list[Optional[str]]:
        holders = self.client.who_has(self.shards)
        placement: list[Optional[str]] = []
        for group in self.groups:
            found: dict[str, int] = {}
            for i in group:
                for address in holders.get(self.shards[i].key, ()):
                    found[address] = found.get(address, 0) + 1
            placement.append(min(found, key=lambda a: (-found[a], a)) if found else None)
        return placement

    def _current_placement(self) -> list[Optional[str]]:
        """The placement, each group whose worker has left moved to a live one (the
        tasks may still run elsewhere: a preference, not a rule)."""
        alive = sorted(self.client.scheduler_info()["workers"])
        for g, address in enumerate(self._placement):
            if alive and address not in alive:
                self._placement[g] = alive[g % len(alive)]
        return self._placement

    def _submit(self, g: int, function: Callable[..., Any], *args: Any) -> Future:
        address = self._placement[g]
        group = self.groups[g]
        return self.client.submit(function, self.fit_id, group.start,
                                  [self.shards[i] for i in group], self.context, *args,
                                  workers=None if address is None else [address],
                                  allow_other_workers=True, pure=False)

    def _count_terms(self) -> tuple[int, int, Optional[NDArray[np.int64]]]:
        """Compile every shard where its group runs; how many supervised terms and terms
        in all they have, and the GE firing counts ``C_m`` (None without GE)."""
        self._current_placement()
        counts = self.client.gather([self._submit(g, _group_counts)
                                     for g in range(len(self.groups))])
        ge = [c[2] for c in counts if c[2] is not None]
        return (sum(c[0] for c in counts), sum(c[1] for c in counts) + bool(ge),
                np.sum(ge, axis=0) if ge else None)

    # -- evaluation ------------------------------------------------------------------

    def __call__(self, theta: NDArray[np.float64]) -> tuple[float, NDArray[np.float64]]:
        """Loss and gradient at θ, the L2 prior included."""
        return Objective([_ClusterSum(self, "every")], self.params["c2"])(theta)

    def data_terms(self, theta: NDArray[np.float64], stage: str = "every"
                   ) -> tuple[float, NDArray[np.float64]]:
        """Loss and gradient of the shards' terms at θ, without the prior; ``stage``
        ``"supervised"``: the complete sentences' likelihood only (the warm start).

        θ goes to one worker; the others copy it from a worker that has it
        (not a star from the client, and not ``scatter(..., broadcast=True)``,
        which hangs when a worker is lost during it). If the workers holding θ
        are lost before every task has read it, the evaluation is run again.
        """
        theta = np.ascontiguousarray(theta, dtype=np.float64)
        last: Optional[BaseException] = None
        for attempt in range(EVALUATION_ATTEMPTS):
            try:
                return self._data_terms(theta, stage)
            # "lost dependencies" (θ's holder is gone), or θ sent to a worker just lost
            # that the scheduler still lists (CommClosedError is an OSError)
            except (FutureCancelledError, OSError) as e:
                last = e
                time.sleep(0.5 * (attempt + 1))  # the scheduler notices the loss meanwhile
        raise SscrfError(f"an evaluation on the cluster failed {EVALUATION_ATTEMPTS} times "
                         f"({type(last).__name__}: {last}); are workers being lost?") from last

    def _data_terms(self, theta: NDArray[np.float64], stage: str
                    ) -> tuple[float, NDArray[np.float64]]:
        client = self.client
        theta_future = client.scatter(theta, hash=False)
        self._current_placement()
        groups = range(len(self.groups))

        def add(a: Future, b: Future) -> Future:
            return client.submit(add_results, a, b, pure=False)

        if stage != "every" or self.penalty is None:
            total = tree_sum([self._submit(g, _group_total, theta_future, stage)
                              for g in groups], add).result()
            return float(total.loss), np.asarray(total.grad, dtype=np.float64)
        # GE: the shards' first passes stay on the workers; their expectation sums go
        # up the tree; the score weights come back down for the gradient pass
        first = [self._submit(g, _group_first_pass, theta_future) for g in groups]
        sums = tree_sum([client.submit(_group_sums, f, pure=False) for f in first],
                        lambda a, b: client.submit(_add_sums, a, b, pure=False)).result()
        if sums is None:
            raise SscrfError("no shard returned GE expectations; were unlabeled shards lost?")
        value, score_weights = self.penalty.score_weights(np.asarray(sums))
        weight = self.params["ge_weight"]
        weights_future = client.scatter(weight * score_weights, hash=False)
        total = tree_sum([self._submit(g, _group_second_pass, first[g], theta_future,
                                       weights_future) for g in groups], add).result()
        return float(total.loss) + weight * value, np.asarray(total.grad, dtype=np.float64)

    def fitted_state(self, result: Any) -> dict[str, Any]:
        """The fitted attributes of a model with the optimiser's ``result``."""
        state: dict[str, Any] = {"classes_": self.classes, "extractor_": self.extractor,
                                 "feature_set_": self.feature_set,
                                 "row_ptr_": self.layout.row_ptr,
                                 "label_ids_": self.layout.label_ids, "coef_": result.theta,
                                 "training_": training_record(result)}
        if self.constraints is not None:
            state["constraints_"] = self.constraints
        return state

    def close(self) -> None:
        """Free the shards' compiled terms on the workers."""
        try:
            self.client.run(forget_fit, self.fit_id)
        except Exception:  # noqa: BLE001  best effort: a worker that is gone holds nothing
            pass

    def __enter__(self) -> ClusterObjective:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


# -- the tasks: one per group of shards ------------------------------------------------


def _group_terms(fit_id: str, first: int, shards: Sequence[Shard], context: FitContext
                 ) -> list[Any]:
    return [compiled_terms((fit_id, first + k), shard, context)
            for k, shard in enumerate(shards)]


def _group_counts(fit_id: str, first: int, shards: Sequence[Shard], context: FitContext
                  ) -> tuple[int, int, Optional[NDArray[np.int64]]]:
    terms = _group_terms(fit_id, first, shards, context)
    ge = [t.ge.counts for t in terms if t.ge is not None]
    return (sum(len(t.supervised) for t in terms), sum(len(t.every) for t in terms),
            np.sum(ge, axis=0) if ge else None)


def _group_total(fit_id: str, first: int, shards: Sequence[Shard], context: FitContext,
                 theta: NDArray[np.float64], stage: str) -> Partial:
    """The group's shards at θ, added along their part of the fixed tree."""
    terms = _group_terms(fit_id, first, shards, context)
    return tree_sum([shard_partial(t, theta, stage) for t in terms], add_into)


def _group_first_pass(fit_id: str, first: int, shards: Sequence[Shard], context: FitContext,
                      theta: NDArray[np.float64]) -> list[Partial]:
    """Each shard's terms at θ and its GE expectation sums, kept apart for the second
    pass (which adds the GE gradient shard by shard, before the tree)."""
    return [shard_partial(t, theta, "every")
            for t in _group_terms(fit_id, first, shards, context)]


def _group_sums(partials: list[Partial]) -> Optional[NDArray[np.float64]]:
    """The group's GE sums, added along the tree (None for a group without GE)."""
    return tree_sum([p.ge_sums for p in partials], _add_sums)


def _add_sums(a: Optional[NDArray[np.float64]], b: Optional[NDArray[np.float64]]
              ) -> Optional[NDArray[np.float64]]:
    """Two groups' GE sums added, None counting as zeros (as in :func:`add_results`)."""
    return a if b is None else b if a is None else a + b


def _group_second_pass(fit_id: str, first: int, shards: Sequence[Shard], context: FitContext,
                       partials: list[Partial], theta: NDArray[np.float64],
                       score_weights: NDArray[np.float64]) -> Partial:
    terms = _group_terms(fit_id, first, shards, context)
    return tree_sum([with_ge_gradient(t, p, theta, score_weights)
                     for t, p in zip(terms, partials)], add_into)


def _check_supported(params: dict[str, Any], X: Any, X_unlabeled: Any, constraints: Any
                     ) -> Any:
    """Refuse what the distributed fit does not take; the checked constraints (None
    when GE takes no part)."""
    if params.get("hash_features") is not None:
        raise SscrfError("the distributed fit counts a vocabulary; it does not take "
                         "hash_features yet")
    if params["proportion_weight"] > 0:
        raise SscrfError("the distributed fit does not take proportion_weight yet")
    if params.get("word_vectors") is not None:
        raise SscrfError("the distributed fit does not take word_vectors yet")
    if not isinstance(X, ShardedCorpus) or not X.labeled:
        raise SscrfTypeError("X must be a labeled ShardedCorpus (ShardedCorpus.from_sentences"
                             "(client, X, y), .from_conll(client, paths), .from_bag(..., "
                             "labeled=True))")
    if X_unlabeled is not None and (not isinstance(X_unlabeled, ShardedCorpus)
                                    or X_unlabeled.labeled):
        raise SscrfTypeError("X_unlabeled must be an unlabeled ShardedCorpus "
                             "(from_text, from_conll(..., has_labels=False), from_bag)")
    if params["entropy_weight"] > 0 and X_unlabeled is None:
        raise SscrfError(f"entropy_weight={params['entropy_weight']!r} needs unlabeled data: "
                         "give X_unlabeled, or set entropy_weight=0 for a supervised fit")
    if params["ge_weight"] > 0 and constraints is None:
        raise SscrfError(f"ge_weight={params['ge_weight']!r} needs constraints (labeled "
                         "features) and X_unlabeled: give constraints=, or set ge_weight=0")
    if constraints is None:
        return None
    if params["ge_weight"] == 0:  # the baseline of a grid over the weight, as CRF.fit
        warnings.warn(ZERO_WEIGHT_WARNING, UserWarning, stacklevel=4)
        return None
    if X_unlabeled is None:
        raise SscrfError("constraints need unlabeled data: give X_unlabeled")
    checked = _constraints.check_constraints(constraints, params["labels"])
    if not checked:
        raise SscrfError("constraints is empty")
    return checked


def fit(client: Client, estimator: Any, X: ShardedCorpus,
        X_unlabeled: Optional[ShardedCorpus] = None, *, constraints: Any = None,
        callback: Optional[Callable[..., Any]] = None) -> Any:
    """Train ``estimator`` (a :class:`sscrf.CRF`) on sharded sentences; returns it, fitted.

    The model is the one ``estimator.fit`` trains on the same sentences, in
    shard order, up to the order of floating-point sums: the same vocabulary,
    labels and layout; loss and gradient equal to about 1e-15 relative (the
    same bits for any number of workers and placement of the shards); the
    same stopping rules and the supervised warm start before the entropy and
    GE terms.

    Parameters
    ----------
    client : distributed.Client
    estimator : sscrf.CRF
        Its hyperparameters are used; it receives the fitted attributes.
    X : ShardedCorpus
        Labeled sentences (complete, or partial annotations: sets, None,
        alternatives).
    X_unlabeled : ShardedCorpus, optional
        Unlabeled sentences, for the entropy term (``entropy_weight > 0``)
        and GE (``constraints`` with ``ge_weight > 0``).
    constraints : dict, optional
        GE constraints, as :meth:`sscrf.CRF.fit` takes them.
    callback : callable, optional
        As in :meth:`sscrf.CRF.fit`.

    Returns
    -------
    sscrf.CRF
        ``estimator``, fitted.
    """
    with ClusterObjective(client, estimator, X, X_unlabeled,
                          constraints=constraints) as objective:
        result, stages = _optimise(objective, callback)
        state = objective.fitted_state(result)
    if stages:
        state["training_"]["stages"] = stages
    state["training_"]["shards"] = len(objective.shards)
    return estimator.set_fitted_state(state)


def _optimise(objective: ClusterObjective, callback: Optional[Callable[..., Any]]
              ) -> tuple[Any, dict[str, Any]]:
    """The stages of :func:`sscrf.training.fit`'s optimise step, on the cluster: the
    supervised optimum first when other terms take part (as Jiao et al. start)."""
    params, report = objective.params, objective.report
    options = dict(max_iterations=params["max_iterations"], epsilon=params["epsilon"],
                   period=params["period"], delta=params["delta"], callback=callback,
                   verbose=params["verbose"], c1=params["c1"], n_threads=1,
                   memory=params["num_memories"])
    theta0 = np.zeros(objective.layout.size)
    stages: dict[str, Any] = {}
    if objective.n_terms > objective.n_supervised > 0:
        report.note("stage 1/2: supervised warm start")
        warm = minimize(Objective([_ClusterSum(objective, "supervised")], params["c2"]),
                        theta0, **options)
        stages["supervised"] = training_record(warm)
        if warm.stop_reason in (STOP_INTERRUPTED, STOP_CALLBACK):
            return warm, stages
        theta0 = warm.theta
        report.note("stage 2/2: adding the other terms")
        if callback is not None:  # iterations count on across the stages
            options["callback"] = shifted_callback(callback, warm.n_iterations)
    result = minimize(Objective([_ClusterSum(objective, "every")], params["c2"]), theta0,
                      **options)
    return result, stages
