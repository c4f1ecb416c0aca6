"""Training a CRF on a Dask cluster: sentences in shards on the workers, L-BFGS on the client.

:class:`ShardedCorpus` holds sentences as futures on the workers, one shard
each. :func:`fit` builds the vocabulary, label set and layout from the
shards' counts (the ones ``CRF.fit`` builds from the same sentences), then
runs sscrf's own optimiser on the client: each evaluation broadcasts θ to
every worker once, evaluates each shard where it lives
(:func:`sscrf.distributed.shards.shard_value_and_gradient`), and adds the
shards' results on the workers in a fixed binary tree over the shard
indices, so that only the final loss and gradient reach the client and the
bits do not depend on which worker holds which shard. The design is Spark
MLlib's L-BFGS (driver-side optimiser, ``treeAggregate``, broadcast
weights), on Dask.

Every step is a pure function of the shard's sentences, so a worker lost
during a fit costs its shards' recomputation elsewhere and nothing else:
the model is the same.
"""

from __future__ import annotations

import time
import uuid
from typing import TYPE_CHECKING, Any, Callable, Optional, Sequence

import numpy as np
from dask import delayed
from distributed import Client, Future
from distributed.client import FutureCancelledError

from ..errors import SscrfError, SscrfTypeError
from ..features import FeatureExtractor, default_templates
from ..features.vocabulary import merge_counts
from ..io import read_conll
from ..layout import ParameterLayout
from ..minimizer import minimize
from ..objectives import Objective, Term
from ..optim import STOP_CALLBACK, STOP_INTERRUPTED
from ..progress import Progress
from ..fit_callbacks import shifted_callback
from ..training import check_params, label_set, training_record
from .shards import (PathOrPaths, Shard, add_results, compiled_terms, expand_paths, forget_fit,
                     layout_from_pairs, make_shard, shard_counts, shard_labels, shard_pairs,
                     shard_value_and_gradient, tree_sum)

if TYPE_CHECKING:
    import dask.bag as db
    from numpy.typing import NDArray

__all__ = ["ShardedCorpus", "fit"]

#: Tries of one evaluation when the workers holding θ are lost during it.
EVALUATION_ATTEMPTS = 5



def _conll_shard(path: str, has_labels: bool, encoding: str) -> Shard:
    corpus = read_conll(path, has_labels=has_labels, encoding=encoding)
    return make_shard(corpus.tokens, corpus.labels if has_labels else None, path)


def _lines_shard(path: str, encoding: str) -> Shard:
    with open(path, encoding=encoding) as f:
        sentences = [[[word] for word in line.split()] for line in f if line.strip()]
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
    """

    def __init__(self, client: Client, shards: Sequence[Future], labeled: bool) -> None:
        if not isinstance(client, Client):
            raise SscrfTypeError(f"client must be a distributed.Client, not "
                                 f"{type(client).__name__}")
        if not shards:
            raise SscrfError("a sharded corpus needs at least one shard")
        self.client = client
        self.shards = list(shards)
        self.labeled = bool(labeled)

    def __len__(self) -> int:
        return len(self.shards)

    def __repr__(self) -> str:
        kind = "labeled" if self.labeled else "unlabeled"
        return f"ShardedCorpus({len(self.shards)} {kind} shards)"

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
    def from_bag(cls, client: Client, bag: db.Bag, *, labeled: bool = False) -> ShardedCorpus:
        """One shard per partition of a ``dask.bag.Bag`` of sentences, or of
        ``(sentence, labels)`` pairs with ``labeled=True``."""
        shard = delayed(_partition_shard, pure=True)
        futures = client.compute([shard(part, labeled) for part in bag.to_delayed()])
        return cls(client, futures, labeled)


class _ClusterSum(Term):
    """One data term of the objective: the sum of every shard's terms, evaluated on the
    cluster (the client adds the L2 prior, as :class:`sscrf.objectives.Objective` does)."""

    name = "shards"

    def __init__(self, run: _Run, stage: str) -> None:  # no corpus here: it is on the cluster
        self.run, self.stage, self.weight = run, stage, 1.0

    def _evaluate(self, theta: NDArray[np.float64], out: Optional[NDArray[np.float64]]
                  ) -> tuple[float, NDArray[np.float64]]:
        loss, grad = self.run.evaluate(theta, self.stage)
        if out is None:
            return loss, grad
        np.copyto(out, grad)
        return loss, out


class _Run:
    """What a distributed fit holds on the cluster, and its evaluations."""

    def __init__(self, client: Client, shards: list[Future], extractor: Future,
                 classes: list[str], layout: Future, params: dict[str, Any],
                 n_threads: int) -> None:
        self.client, self.shards, self.fit_id = client, shards, uuid.uuid4().hex
        self.context = (extractor, classes, layout, params, n_threads)

    def term_counts(self) -> tuple[int, int]:
        """How many supervised terms, and terms in all, the shards have (compiling them)."""
        extractor, classes, layout, params, n_threads = self.context
        counts = self.client.gather([
            self.client.submit(_count_terms, (self.fit_id, i), shard, extractor, classes,
                               layout, params, n_threads, pure=False)
            for i, shard in enumerate(self.shards)])
        return sum(c[0] for c in counts), sum(c[1] for c in counts)

    def evaluate(self, theta: NDArray[np.float64], stage: str
                 ) -> tuple[float, NDArray[np.float64]]:
        """Loss and gradient of the shards' terms at θ. θ goes to one worker; the others
        copy it from a worker that has it (not a star from the client, and not
        ``scatter(..., broadcast=True)``, which hangs when a worker is lost during it).
        If the workers holding θ are lost before every shard has read it, the
        evaluation is run again."""
        last: Optional[BaseException] = None
        for attempt in range(EVALUATION_ATTEMPTS):
            try:
                return self._evaluate(theta, stage)
            # "lost dependencies" (θ's holder is gone), or θ sent to a worker just lost
            # that the scheduler still lists (CommClosedError is an OSError)
            except (FutureCancelledError, OSError) as e:
                last = e
                time.sleep(0.5 * (attempt + 1))  # the scheduler notices the loss meanwhile
        raise SscrfError(f"an evaluation on the cluster failed {EVALUATION_ATTEMPTS} times "
                         f"({type(last).__name__}: {last}); are workers being lost?") from last

    def _evaluate(self, theta: NDArray[np.float64], stage: str
                  ) -> tuple[float, NDArray[np.float64]]:
        theta_future = self.client.scatter(theta, hash=False)
        extractor, classes, layout, params, n_threads = self.context
        parts = [self.client.submit(_evaluate_shard, (self.fit_id, i), shard, extractor,
                                    classes, layout, params, n_threads, theta_future, stage,
                                    pure=False)
                 for i, shard in enumerate(self.shards)]
        total = tree_sum(parts, lambda a, b: self.client.submit(add_results, a, b, pure=False))
        loss, grad = total.result()
        return float(loss), np.asarray(grad, dtype=np.float64)

    def close(self) -> None:
        try:
            self.client.run(forget_fit, self.fit_id)
        except Exception:  # noqa: BLE001  best effort: a worker that is gone holds nothing
            pass


def _count_terms(key: tuple[str, int], shard: Shard, extractor: FeatureExtractor,
                 classes: list[str], layout: ParameterLayout, params: dict[str, Any],
                 n_threads: int) -> tuple[int, int]:
    terms = compiled_terms(key, shard, extractor, classes, layout, params, n_threads)
    return len(terms.supervised), len(terms.every)


def _evaluate_shard(key: tuple[str, int], shard: Shard, extractor: FeatureExtractor,
                    classes: list[str], layout: ParameterLayout, params: dict[str, Any],
                    n_threads: int, theta: NDArray[np.float64], stage: str
                    ) -> tuple[float, NDArray[np.float64]]:
    terms = compiled_terms(key, shard, extractor, classes, layout, params, n_threads)
    return shard_value_and_gradient(terms, theta, stage)


def _check_supported(params: dict[str, Any], X: Any, X_unlabeled: Any,
                     constraints: Any) -> None:
    if constraints is not None or params["ge_weight"] > 0:
        raise SscrfError("the distributed fit does not take GE constraints yet; fit them "
                         "in one process (CRF.fit)")
    if params.get("hash_features") is not None:
        raise SscrfError("the distributed fit counts a vocabulary; it does not take "
                         "hash_features yet")
    if params["proportion_weight"] > 0:
        raise SscrfError("the distributed fit does not take proportion_weight yet")
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


def fit(client: Client, estimator: Any, X: ShardedCorpus,
        X_unlabeled: Optional[ShardedCorpus] = None, *, constraints: Any = None,
        callback: Optional[Callable[..., Any]] = None) -> Any:
    """Train ``estimator`` (a :class:`sscrf.CRF`) on sharded sentences; returns it, fitted.

    The model is the one ``estimator.fit`` trains on the same sentences, in
    shard order, up to the order of floating-point sums: the same vocabulary,
    labels and layout; loss and gradient equal to about 1e-15 relative (the
    same bits for any placement of the shards); the same stopping rules and
    the supervised warm start before the entropy term.

    Parameters
    ----------
    client : distributed.Client
    estimator : sscrf.CRF
        Its hyperparameters are used; it receives the fitted attributes.
    X : ShardedCorpus
        Labeled sentences (complete, or partial annotations: sets, None).
    X_unlabeled : ShardedCorpus, optional
        Unlabeled sentences, for the entropy term (``entropy_weight > 0``).
    constraints : None
        GE is not distributed yet (it raises).
    callback : callable, optional
        As in :meth:`sscrf.CRF.fit`.

    Returns
    -------
    sscrf.CRF
        ``estimator``, fitted.
    """
    params = estimator.get_params()
    n_threads = check_params(params)
    _check_supported(params, X, X_unlabeled, constraints)
    started = time.perf_counter()
    report = Progress(params["verbose"])
    shards = X.shards + ([] if X_unlabeled is None else X_unlabeled.shards)
    templates = params["templates"]
    if isinstance(templates, str) and templates.strip() == "default":
        columns = [c for c in client.gather([client.submit(_n_columns, s) for s in shards])
                   if c is not None]
        templates = default_templates(columns[0] if columns else 1)
    extractor = FeatureExtractor(templates, params["min_freq"], n_threads=n_threads)
    counts = client.gather([client.submit(shard_counts, s, extractor) for s in shards])
    extractor.set_vocabulary(merge_counts(counts).freeze(params["min_freq"],
                                                         params.get("max_features")))
    used: set[str] = set().union(*client.gather([client.submit(shard_labels, s)
                                                 for s in X.shards]))
    classes = label_set(params["labels"], [sorted(used)])
    feature_set = params["feature_set"]
    if feature_set == "auto":
        feature_set = "dense" if X_unlabeled is not None else "observed"
    extractor_future = client.scatter(extractor, broadcast=True, hash=False)
    n_attributes = len(extractor.attributes_ or [])
    if feature_set == "dense":
        layout = ParameterLayout.every_pair(n_attributes, len(classes))
    else:
        keys = client.gather([client.submit(shard_pairs, s, extractor_future, classes)
                              for s in X.shards])
        layout = layout_from_pairs(keys, n_attributes, len(classes))
    report.note(f"features: {n_attributes:,} attributes, {len(classes)} labels, "
                f"{layout.core.n_parameters:,} parameters ({feature_set} feature set), "
                f"{len(shards)} shards, {time.perf_counter() - started:.1f} s")
    run = _Run(client, shards, extractor_future, classes,
               client.scatter(layout, broadcast=True, hash=False), params, n_threads)
    try:
        result, stages = _optimise(run, params, layout, callback, report)
    finally:
        run.close()
    state: dict[str, Any] = {"classes_": classes, "extractor_": extractor,
                             "feature_set_": feature_set, "row_ptr_": layout.row_ptr,
                             "label_ids_": layout.label_ids, "coef_": result.theta,
                             "training_": training_record(result)}
    if stages:
        state["training_"]["stages"] = stages
    state["training_"]["shards"] = len(shards)
    return estimator.set_fitted_state(state)


def _optimise(run: _Run, params: dict[str, Any], layout: ParameterLayout,
              callback: Optional[Callable[..., Any]], report: Progress
              ) -> tuple[Any, dict[str, Any]]:
    """The stages of :func:`sscrf.training.fit`'s optimise step, on the cluster: the
    supervised optimum first when other terms take part (as Jiao et al. start)."""
    options = dict(max_iterations=params["max_iterations"], epsilon=params["epsilon"],
                   period=params["period"], delta=params["delta"], callback=callback,
                   verbose=params["verbose"], c1=params["c1"], n_threads=1,
                   memory=params["num_memories"])
    theta0 = np.zeros(layout.size)
    stages: dict[str, Any] = {}
    n_supervised, n_terms = run.term_counts()
    if n_terms > n_supervised > 0:
        report.note("stage 1/2: supervised warm start")
        warm = minimize(Objective([_ClusterSum(run, "supervised")], params["c2"]), theta0,
                        **options)
        stages["supervised"] = training_record(warm)
        if warm.stop_reason in (STOP_INTERRUPTED, STOP_CALLBACK):
            return warm, stages
        theta0 = warm.theta
        report.note("stage 2/2: adding the other terms")
        if callback is not None:  # iterations count on across the stages
            options["callback"] = shifted_callback(callback, warm.n_iterations)
    result = minimize(Objective([_ClusterSum(run, "every")], params["c2"]), theta0, **options)
    return result, stages
