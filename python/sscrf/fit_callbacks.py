"""What a fit runs after each iteration: checkpoints, and scores on held-out sentences.

:func:`checkpointing` writes the model so far every few iterations;
:func:`shifted_callback` numbers the iterations of a second stage on from
the first. For ``CRF.fit(..., X_dev=, y_dev=)``,
the dev sentences are compiled once under the fit's frozen vocabulary; each
evaluation is one Viterbi pass of the compiled corpus kernel and a score of
the labelings (:data:`DEV_SCORINGS`, computed on the label ids, or the user's
callable, given the label strings). A
:class:`DevTracker` wraps the optimiser's callback, scores every ``period``
iterations (and the final iterate) and keeps a copy of the best iterate,
which the fit returns instead of the last one.
"""

from __future__ import annotations

import collections
import itertools
import warnings
from typing import TYPE_CHECKING, Any, Callable, Optional, Sequence

import numpy as np

from . import _core
from .corpus import compile_corpus
from .corpus_file import CompiledCorpus, check_labeled_corpus, labeled_input
from .errors import SscrfError, SscrfTypeError
from .inputs import check_integer, check_labeled
from .metrics import EncodedChunkF1, chunk_scores, token_accuracy
from .model_file import write_model

if TYPE_CHECKING:
    from numpy.typing import NDArray

    #: The optimiser's callback: (iteration, loss, θ) -> stop?
    Callback = Callable[[int, float, NDArray[np.float64]], Any]

__all__ = ["DEV_SCORINGS", "DevSet", "DevTracker", "check_dev_pair", "check_dev_scoring",
           "default_scoring",
           "checkpointing", "saved_scoring", "scoring_function", "scoring_text",
           "shifted_callback"]


def _chunk_f1(y_true: Sequence[Sequence[Any]], y_pred: Sequence[Sequence[Any]]) -> float:
    return chunk_scores(y_true, y_pred)["f1"]


#: The named dev scores: entity (chunk) F1 of IOB2 labels, and token accuracy.
DEV_SCORINGS = {"chunk_f1": _chunk_f1, "accuracy": token_accuracy}


def scoring_text(scoring: Optional[str]) -> str:
    """A dev score's name as reports print it (None: a callable's)."""
    return {"chunk_f1": "chunk F1", "accuracy": "token accuracy",
            None: "a callable's score"}.get(scoring, str(scoring))


def check_dev_scoring(scoring: Any) -> Any:
    """Check ``dev_scoring``: None, a name of :data:`DEV_SCORINGS` or a callable."""
    if scoring is None or callable(scoring):
        return scoring
    if isinstance(scoring, str):
        if scoring not in DEV_SCORINGS:
            raise SscrfError(f"dev_scoring={scoring!r} is not one of {sorted(DEV_SCORINGS)}; "
                             "or give a callable(y_true, y_pred) -> float, higher is better")
        return scoring
    raise SscrfTypeError("dev_scoring must be None, 'chunk_f1', 'accuracy' or a callable "
                         f"(y_true, y_pred) -> float, not {type(scoring).__name__}")


#: How a message about a compiled X_dev without labels ends.
DEV_USE = "to score on it as X_dev"


def check_dev_pair(X_dev: Any, y_dev: Any) -> None:
    """Refuse one of ``X_dev`` and ``y_dev`` without the other (a compiled corpus as
    ``X_dev`` brings its labels: ``y_dev`` must be None)."""
    if isinstance(X_dev, CompiledCorpus):
        check_labeled_corpus(X_dev, y_dev, DEV_USE, ("X_dev", "y_dev"))
    elif (X_dev is None) != (y_dev is None):
        raise SscrfError("give X_dev and y_dev together (held-out sentences and their labels)")


def check_patience(patience: Any) -> Optional[int]:
    """``dev_patience``: None (run to ``max_iterations``) or an int >= 1."""
    return None if patience is None else check_integer(patience, "dev_patience", minimum=1)


#: ``training_["stop_reason"]`` of a fit that ``dev_patience`` ended.
STOP_DEV_PATIENCE = "no better dev score in dev_patience checks"


def default_scoring(y_dev: Sequence[Sequence[Any]]) -> str:
    """``"chunk_f1"`` when some dev label starts with ``B-`` or ``I-``, else ``"accuracy"``."""
    chunked = any(isinstance(label, str) and label[:2] in ("B-", "I-")
                  for seq in y_dev for label in seq)
    return "chunk_f1" if chunked else "accuracy"


def scoring_function(scoring: Any, y_dev: Sequence[Sequence[Any]]
                     ) -> tuple[str, Callable[..., Any]]:
    """``(name, callable)`` of ``dev_scoring`` for these dev labels."""
    if scoring is None:
        scoring = default_scoring(y_dev)
    if callable(scoring):
        return getattr(scoring, "__name__", "callable"), scoring
    return scoring, DEV_SCORINGS[scoring]


def saved_scoring(scoring: Any) -> Optional[str]:
    """``dev_scoring`` as a model file keeps it: a callable (code) becomes None."""
    return None if callable(scoring) else scoring


def _encoded_scoring(name: Optional[str], y: list[list[Any]], classes: list[Any]
                     ) -> Optional[Callable[[Any], float]]:
    """The named score ``name`` of label ids against ``y``, computed on arrays; None
    where the labels' own score is needed (a callable, a label that is not a str)."""
    if name is None:
        return None
    if name == "chunk_f1":
        if not all(isinstance(label, str) for label in itertools.chain(classes, *y)):
            return None
        return EncodedChunkF1(y, classes)
    index = {label: k for k, label in enumerate(classes)}
    # a dev label the model does not know is never predicted: id -1
    true = np.array([index.get(label, -1) for seq in y for label in seq], dtype=np.int64)
    return lambda labels: int(np.count_nonzero(np.asarray(labels) == true)) / len(true)


class DevSet:
    """Dev sentences compiled under a fit's vocabulary, scored at any θ.

    Parameters
    ----------
    extractor : sscrf.features.FeatureExtractor
        The fit's frozen vocabulary.
    classes : list of str
    X_dev, y_dev : list of sentences, list of label sequences
        Completely labeled; or a :class:`sscrf.CompiledCorpus` compiled with
        its labels under the fit's vocabulary, and None.
    scoring : None, str or callable
        ``dev_scoring`` (:func:`scoring_function`).
    n_threads : int
    """

    def __init__(self, extractor: Any, classes: Sequence[str], X_dev: Any, y_dev: Any,
                 scoring: Any, n_threads: int) -> None:
        compiled = X_dev if isinstance(X_dev, CompiledCorpus) else None
        if compiled is not None:
            y_dev = labeled_input(compiled, y_dev, DEV_USE, ("X_dev", "y_dev"))
        else:
            X_dev, y_dev = check_labeled(X_dev, y_dev, allow_empty_sentences=True,
                                         names=("X_dev", "y_dev"))
        if sum(map(len, y_dev)) == 0:
            raise SscrfError("X_dev has no token: give held-out sentences, or X_dev=None")
        self.y = [list(seq) for seq in y_dev]
        known = set(classes)
        unknown = collections.Counter(label for seq in self.y for label in seq
                                      if label not in known)
        if unknown:
            shown = ", ".join(map(repr, sorted(unknown)[:3])) + (", ..." if len(unknown) > 3
                                                                 else "")
            warnings.warn(f"y_dev has labels the model has not: {shown} "
                          f"({sum(unknown.values())} tokens); the model never predicts them, "
                          "so those tokens count as errors in every dev score", UserWarning,
                          stacklevel=2)
        self.name, self.function = scoring_function(scoring, self.y)
        features = (extractor.transform(X_dev) if compiled is None else compiled.features_for(
            extractor, "the fit", "compile it with --vocabulary set to the training corpus "
            "(or to the model it continues), or give X_dev as sentences"))
        self.corpus, self.offsets = compile_corpus(features), np.asarray(features.offsets)
        self.names = np.asarray(list(classes), dtype=object)
        self.n_threads = n_threads
        self.encoded = _encoded_scoring(self.name if self.function is DEV_SCORINGS.get(self.name)
                                        else None, self.y, list(classes))

    def label_ids(self, layout: Any, theta: NDArray[np.float64]) -> NDArray[np.int32]:
        """The Viterbi label id of every dev token under θ (``layout``: a ``_core.Layout``)."""
        labels, _ = _core.viterbi_corpus(self.corpus, layout, theta, self.n_threads)
        return labels

    def predict(self, layout: Any, theta: NDArray[np.float64]) -> list[list[str]]:
        """Viterbi labelings of the dev sentences under θ."""
        names = self.names[self.label_ids(layout, theta)]
        return [list(names[a:b]) for a, b in zip(self.offsets[:-1], self.offsets[1:])]

    def score(self, layout: Any, theta: NDArray[np.float64]) -> float:
        """The dev score of θ (higher is better)."""
        if self.encoded is not None:
            return self.encoded(self.label_ids(layout, theta))
        value = float(self.function(self.y, self.predict(layout, theta)))
        if not np.isfinite(value):
            raise SscrfError(f"dev_scoring returned {value!r}; it must return a finite number")
        return value


class DevTracker:
    """Scores the iterates of a fit on a :class:`DevSet` and keeps the best.

    ``wrap(callback)`` gives the optimiser's callback: at every iteration
    that is a multiple of ``period`` it scores the iterate, then calls
    ``callback``. :meth:`finish` scores the final θ too and returns the
    best θ (the latest one on ties) and the record of the curve.

    With ``patience`` k, the callback ends training once k scores in a row
    have not beaten the best so far (``stopped`` is then True). It counts
    only while ``counting``: the fit turns it off for a supervised warm
    start, so that the semi-supervised stage always runs.
    """

    def __init__(self, devset: DevSet, layout: Any, period: int,
                 patience: Optional[int] = None) -> None:
        self.devset, self.layout = devset, layout
        self.period = check_integer(period, "dev_period", minimum=1)
        self.patience = check_patience(patience)
        self.curve: list[list[Any]] = []
        # (score, iteration, a copy of θ)
        self.best: Optional[tuple[float, int, NDArray[np.float64]]] = None
        self.counting = True
        self.stale = 0  # scores in a row, while counting, below or equal to the best
        self.stopped = False

    def count_from_here(self) -> None:
        """Start counting toward ``patience`` afresh (the last stage of a fit begins)."""
        self.counting, self.stale = True, 0

    def observe(self, iteration: int, theta: NDArray[np.float64]) -> float:
        """Score ``theta`` as the iterate of ``iteration``; returns the score."""
        score = self.devset.score(self.layout, np.ascontiguousarray(theta, dtype=np.float64))
        self.curve.append([int(iteration), score])
        improved = self.best is None or score > self.best[0]
        if self.best is None or score >= self.best[0]:
            self.best = (score, int(iteration), np.array(theta, dtype=np.float64))
        if self.counting:
            self.stale = 0 if improved else self.stale + 1
        return score

    def wrap(self, callback: Optional[Callback]) -> Callback:
        """The optimiser's callback, scoring every ``period`` iterations first."""

        def scored(iteration: int, loss: float, theta: NDArray[np.float64]) -> Any:
            if iteration % self.period == 0:
                self.observe(iteration, theta)
            stop = callback(iteration, loss, theta) if callback is not None else False
            if (self.patience is not None and self.counting
                    and self.stale >= self.patience):
                self.stopped = True
                return True
            return stop

        return scored

    def finish(self, iteration: int, theta: NDArray[np.float64]
               ) -> tuple[NDArray[np.float64], dict[str, Any]]:
        """``(best θ, record)`` after scoring the final ``theta`` (iteration ``iteration``)."""
        if not self.curve or self.curve[-1][0] != iteration:
            self.observe(iteration, theta)
        assert self.best is not None  # observe() has run
        score, best_iteration, best_theta = self.best
        record = {"scoring": self.devset.name, "period": self.period, "curve": self.curve,
                  "best_iteration": best_iteration, "best_score": score}
        return best_theta, record


def checkpointing(callback: Optional[Callback], path: Any, every: int, params: Any,
                  state: dict[str, Any], layout: Any) -> Callback:
    """``callback`` that first writes the model so far to ``path`` every ``every`` iterations."""

    saved = dict(params, dev_scoring=saved_scoring(params["dev_scoring"]))

    def save_then_call(iteration: int, loss: float, theta: NDArray[np.float64]) -> Any:
        if iteration % every == 0:
            write_model(path, params=saved, classes=state["classes_"],
                        extractor=state["extractor_"], feature_set=state["feature_set_"],
                        training={"iterations": iteration, "loss": loss,
                                  "stop_reason": "checkpoint"},
                        layout=layout, coef=np.array(theta, dtype=np.float64))
        return callback(iteration, loss, theta) if callback is not None else False

    return save_then_call


def shifted_callback(callback: Callback, offset: int) -> Callback:
    """``callback`` with iteration numbers that go on from ``offset``."""
    return lambda iteration, loss, theta: callback(iteration + offset, loss, theta)
