"""Tagging and pool scoring on a Dask cluster, equal to one process.

The model is sent to the workers once (:func:`broadcast_model`, replicated on
every worker) and each partition of a ``dask.bag.Bag`` of sentences is tagged
where it lies, with the same :class:`sscrf.CRF` methods as in one process:
the labels, marginals and selector scores are those of ``crf.predict``,
``crf.predict_marginals`` and :func:`sscrf.active.select` on the whole list,
because every one of them is computed sentence by sentence.

:func:`score_pool` ranks an active-learning pool that does not fit one
machine: each partition returns its sentences' scores (one float each, or
one span per sentence), the client merges them in pool order and keeps the
``m`` best with :func:`sscrf.active.select`'s rule (best first, ties to the
lower index), so it chooses what ``select`` chooses on the whole pool.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Optional, Sequence

import dask.bag as db
import numpy as np
from dask import delayed
from distributed import Client, Future

from ..active.selectors import SELECTORS, check_count, check_log_q, select, short_repr
from ..errors import SscrfError, SscrfTypeError
from ..io import read_conll
from .fitting import ShardedCorpus
from .shards import PathOrPaths, expand_paths


if TYPE_CHECKING:
    from numpy.typing import ArrayLike, NDArray

__all__ = ["broadcast_model", "conll_bag", "predict", "predict_marginals", "score_pool"]



def _check_client(client: Any) -> Client:
    if not isinstance(client, Client):
        raise SscrfTypeError(f"client must be a distributed.Client, not {type(client).__name__}")
    return client


def _check_model(crf: Any) -> None:
    if not hasattr(crf, "coef_") or not hasattr(crf, "predict"):
        raise SscrfError("the model is not fitted: fit it (or load one with sscrf.CRF.load) "
                         "before tagging on the cluster")


def _check_bag(sentences: Any, what: str = "sentences") -> db.Bag:
    if isinstance(sentences, ShardedCorpus):
        return sentences.to_bag()
    if not isinstance(sentences, db.Bag):
        raise SscrfTypeError(f"{what} must be a dask.bag.Bag of sentences (e.g. "
                             "dask.bag.from_sequence(X, npartitions=k) or conll_bag(paths)) "
                             "or a ShardedCorpus, "
                             f"not {type(sentences).__name__}")
    return sentences


def broadcast_model(client: Client, crf: Any) -> Future:
    """Send a fitted model to the cluster once; returns its future.

    The client sends it to one worker; every other worker copies it from a
    worker that has it, once, when its first task needs it, so the model
    leaves the client once and crosses the network once per worker, not
    once per partition. (``scatter(..., broadcast=True)`` hangs when a
    worker is lost during it, even with a timeout.) Keep the future
    referenced while tasks use it; if the worker holding the only copy is
    lost, broadcast again.
    """
    _check_client(client)
    _check_model(crf)
    # a fresh key each time: re-sending a key that is being released races with it
    future: Future = client.scatter(crf, hash=False)
    return future


def _model_in_graph(crf: Any) -> Any:
    """The model as one key of a lazy graph: each worker fetches it once, whatever the
    number of partitions, and the graph keeps it alive as long as the bag (a scattered
    future would be released when the function returned, before the bag is computed)."""
    return crf if isinstance(crf, Future) else delayed(crf, pure=True)


def _predict_partition(sentences: Sequence[Any], crf: Any) -> list[list[Any]]:
    result: list[list[Any]] = crf.predict(list(sentences))
    return result


def _marginals_partition(sentences: Sequence[Any], crf: Any) -> list[Any]:
    result: list[Any] = crf.predict_marginals(list(sentences))
    return result


def predict(client: Client, crf: Any, sentences: db.Bag) -> db.Bag:
    """Viterbi labels of every sentence of a bag, computed on the workers.

    Parameters
    ----------
    client : distributed.Client
    crf : sscrf.CRF or distributed.Future
        A fitted model (it becomes one key of the bag's graph, fetched once
        by each worker), or the future :func:`broadcast_model` returned, to
        send it to every worker once for several calls; keep that future
        referenced until the bag is computed.
    sentences : dask.bag.Bag or ShardedCorpus
        Sentences in any input format the model takes (lists of feature
        dicts, of attribute strings, or of CoNLL columns for template models);
        a sharded corpus's sentences are tagged where its shards lie.

    Returns
    -------
    dask.bag.Bag
        Lazy; one list of labels per sentence, in the bag's order, equal to
        ``crf.predict(list_of_sentences)``. ``.compute()`` gathers it;
        ``.to_textfiles`` or ``.map_partitions`` keep it on the cluster.
    """
    _check_client(client)
    if not isinstance(crf, Future):
        _check_model(crf)
    return _check_bag(sentences).map_partitions(_predict_partition, _model_in_graph(crf))


def predict_marginals(client: Client, crf: Any, sentences: db.Bag) -> db.Bag:
    """Per token, a dict label → marginal probability, computed on the workers.

    Equal to ``crf.predict_marginals(list_of_sentences)``; arguments as in
    :func:`predict`.
    """
    _check_client(client)
    if not isinstance(crf, Future):
        _check_model(crf)
    return _check_bag(sentences).map_partitions(_marginals_partition, _model_in_graph(crf))


def _score_partition(sentences: Sequence[Any], crf: Any, strategy: str,
                     options: dict[str, Any]) -> tuple[NDArray[np.int64], NDArray[np.float64], int]:
    """Every offered sentence of one partition with its score (local indices), and the
    partition's length."""
    pool = list(sentences)
    indices, scores = select(crf, pool, strategy, max(len(pool), 1), **options)
    return indices, scores, len(pool)


def score_pool(client: Client, crf: Any, pool: db.Bag, strategy: str, m: int, *,
               log_q: Optional[ArrayLike] = None, random_state: Any = None,
               **options: Any) -> tuple[NDArray[np.int64], NDArray[np.float64]]:
    """Choose ``m`` sentences of a pool held on the cluster, as :func:`sscrf.active.select` does.

    Parameters
    ----------
    client : distributed.Client
    crf : sscrf.CRF, distributed.Future or None
        A fitted model (or its broadcast future); None for ``random`` and
        ``quota_sampling``.
    pool : dask.bag.Bag or ShardedCorpus
        The candidate sentences; indices count in the bag's (or the shards') order.
    strategy, m, log_q, random_state, **options
        As in :func:`sscrf.active.select`. ``exclude`` (for
        ``most_uncertain_span``) is not taken here: drop labeled tokens'
        sentences from the bag instead.

    Returns
    -------
    indices : ndarray (k,) int, or (k, 3) rows ``(index, begin, stop)`` for spans
    scores : ndarray (k,)
        What ``select`` returns for the same pool collected in one list.
    """
    _check_client(client)
    pool = _check_bag(pool, "pool")
    if strategy not in SELECTORS:
        raise SscrfError(f"unknown strategy {short_repr(strategy)}; known: "
                         f"{', '.join(sorted(SELECTORS))}")
    if "exclude" in options:
        raise SscrfError("score_pool does not take exclude=: remove the sentences (or score "
                         "the pool in one process with sscrf.active.select)")
    m = check_count(m)
    selector = SELECTORS[strategy]
    if not selector.needs_model:  # a draw over the pool's positions, made on the client
        n = int(pool.count().compute())
        return select(crf, [None] * n, strategy, m, log_q=log_q, random_state=random_state,
                      **options)
    if not isinstance(crf, Future):
        _check_model(crf)
    model = _model_in_graph(crf)
    score = delayed(_score_partition, pure=True)
    futures = client.compute([score(part, model, strategy, options)
                              for part in pool.to_delayed()])
    results = client.gather(futures)
    check_log_q(log_q, sum(length for _, _, length in results))
    return _merge(results, m, selector.spans)


def _merge(results: Sequence[tuple[NDArray[np.int64], NDArray[np.float64], int]], m: int,
           spans: bool) -> tuple[NDArray[np.int64], NDArray[np.float64]]:
    """The ``m`` best of every partition's scored sentences, indices counted over the pool;
    best first, ties to the lower index, as :func:`sscrf.active.select` ranks."""
    shape = (0, 3) if spans else (0,)
    indices, scores, offset = [np.zeros(shape, dtype=np.int64)], [np.zeros(0)], 0
    for local, part_scores, length in results:
        local = np.array(local, dtype=np.int64).reshape(shape[:0] + (-1,) + shape[1:])
        if spans:
            local[:, 0] += offset
        else:
            local += offset
        indices.append(local)
        scores.append(np.asarray(part_scores, dtype=np.float64))
        offset += length
    all_indices, all_scores = np.concatenate(indices), np.concatenate(scores)
    sentence = all_indices[:, 0] if spans else all_indices
    order = np.lexsort((sentence, -all_scores))[:m]
    return all_indices[order], all_scores[order]


def _read_partition(paths: Sequence[str], has_labels: bool, encoding: str) -> list[Any]:
    sentences: list[Any] = []
    for path in paths:
        sentences.extend(read_conll(path, has_labels=has_labels, encoding=encoding).tokens)
    return sentences


def conll_bag(paths: PathOrPaths, *,
              has_labels: bool = False, encoding: str = "utf-8") -> db.Bag:
    """A bag of the token sentences of CoNLL column files, one partition per file.

    Parameters
    ----------
    paths : str, path, or list of them
        Files, or a glob pattern (``"corpus/part-*.conll"``, expanded on the
        client); the workers read them, so they must see the same paths (a
        shared file system). A missing file raises ``FileNotFoundError``, a
        malformed one :class:`sscrf.SscrfError`, when the bag is computed.
    has_labels : bool, default False
        Whether the last column is a label (left out of the tokens).
    encoding : str, default "utf-8"

    Returns
    -------
    dask.bag.Bag
        Each element a sentence: a list of tokens, each a list of columns,
        as :func:`sscrf.io.read_conll` gives ``tokens``.
    """
    names = expand_paths(paths)
    files = db.from_sequence(names, npartitions=len(names))
    return files.map_partitions(_read_partition, has_labels, encoding)
