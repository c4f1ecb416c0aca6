"""Fitting a CRF in stages: plan, compile, terms, optimise, finish.

:func:`fit` validates everything it is given, builds the vocabulary, the
layout and the objective terms, runs the optimiser (the supervised warm
start first when a non-concave term takes part, as Jiao et al. do) and
returns the fitted state as a dict of the estimator's attributes. Nothing is
written to the estimator here: :meth:`sscrf.CRF.fit` assigns the dict in one
place once everything has succeeded, so a fit that raises leaves the
estimator as it was. Ctrl-C during optimisation ends it with the best
parameters so far, stop reason ``"interrupted"``: :func:`fit` returns that
state (``CRF.fit`` commits it, then raises ``KeyboardInterrupt``), or raises
``KeyboardInterrupt`` itself before the first iteration, when nothing was
learnt.

The optimise stage is :func:`sscrf.minimizer.minimize`: :func:`sscrf.optim.lbfgs`
with CRFsuite's stopping rules, a progress display, and the handling of
Ctrl-C and of a non-finite loss.
"""

from __future__ import annotations

import copy
import math
import time
import warnings
from contextlib import contextmanager
from contextvars import ContextVar
from typing import (TYPE_CHECKING, Any, Callable, Dict, Iterator, List, Mapping, NamedTuple,
                    Optional, Sequence, Tuple, cast)

import numpy as np

from . import _core
from . import constraints as _constraints
from .annotations import is_complete, label_view, sentence_masks
from .corpus import compile_corpus, subset_features
from .corpus_file import (CompiledCorpus, hashed_with, labeled_input, n_tokens_of,
                          refuse_vocabulary_cuts, unlabeled_input, vocabulary_with)
from .fit_callbacks import (STOP_DEV_PATIENCE, DevSet, DevTracker, check_dev_pair,
                            check_dev_scoring, check_patience, checkpointing,
                            shifted_callback)
from .errors import FeatureScaleWarning, SscrfError
from .features import FeatureExtractor, default_templates
from .features.csr import large_values
from .features.vocabulary import Vocabulary, limit_features, token_counts
from .inputs import (ENTROPY_METHODS, check_choice, check_crfsuite_options, check_integer,
                     check_label_list, check_labeled, check_number, check_sample_weight,
                     check_threads, check_writable, encode_labels)
from .layout import ParameterLayout
from .objectives import (GE, AlternativesLikelihood, Entropy, EntropyAndGE, Likelihood,
                         Objective, PartialLikelihood)
from .minimizer import HISTORY_PAIRS, NonFiniteLoss, TrainResult, minimize
from .optim import STOP_CALLBACK, STOP_INTERRUPTED
from .progress import Progress
from .proportions import (always_on_corpus, check_label_proportions, proportion_term,
                          target_proportions)
from .resources import check_memory, size_text

if TYPE_CHECKING:
    from numpy.typing import ArrayLike, NDArray

    from .features import Features
    from .objectives import Term

    Params = Mapping[str, Any]

__all__ = ["FEATURE_SETS", "HISTORY_PAIRS", "NonFiniteLoss", "RESCALE_ABOVE", "TrainResult",
           "WARN_ABOVE", "check_params", "fit", "ge_constraints", "kept_constraints", "label_set",
           "labeled_terms", "minimize", "model_labels", "training_bytes", "training_record",
           "variable_scale"]

FEATURE_SETS = ("auto", "observed", "dense")

#: The weights of an attribute with values above this in magnitude are
#: optimised in rescaled variables: from here L-BFGS's one-scalar H0 slows
#: (an attribute reaching 16 took 100 iterations to a loss 0.1% above what
#: rescaling reaches in 73).
RESCALE_ABOVE = 2.0 ** 4
#: Values above this warn (FeatureScaleWarning): the L2 prior is 1e-6 as
#: strong on such a weight as on a unit feature's.
WARN_ABOVE = 2.0 ** 10
_STOPPED = (STOP_INTERRUPTED, STOP_CALLBACK)  # stop reasons that end a fit


def check_params(params: Params) -> int:
    """Validate the estimator's hyperparameters (a ``get_params()`` dict); returns the
    thread count they give."""
    for name in ("c1", "c2", "epsilon", "delta", "entropy_weight", "ge_weight",
                 "proportion_weight"):
        check_number(params[name], name, minimum=0)
    check_dev_scoring(params["dev_scoring"])
    check_patience(params.get("dev_patience"))
    check_label_proportions(params["label_proportions"])
    for name, least in (("max_iterations", 0), ("period", 1), ("min_freq", 1),
                        ("dev_period", 1)):
        check_integer(params[name], name, minimum=least)
    if params.get("max_features") is not None:
        check_integer(params["max_features"], "max_features", minimum=1)
    check_choice(params["entropy_method"], "entropy_method", ENTROPY_METHODS)
    check_choice(params["ge_penalty"], "ge_penalty", ("kl", "l2"))
    check_choice(params["feature_set"], "feature_set", FEATURE_SETS)
    check_integer(params["num_memories"], "num_memories", minimum=1)
    check_crfsuite_options(params["algorithm"], params["linesearch"], params["feature_set"],
                           params["all_possible_states"], params["all_possible_transitions"])
    return check_threads(params["n_threads"])


# -- plan -------------------------------------------------------------------------------


#: Constant, so that Python's filter shows it once.
ZERO_WEIGHT_WARNING = ("zero entropy_weight, ge_weight and proportion_weight leave X_unlabeled "
                       "(and constraints) out: a supervised fit, 'auto' features are 'dense'")


def _plan(params: Params, X: Any, y: Any, X_unlabeled: Any, constraints: Any) -> Tuple[Any, ...]:
    """Checked data, the terms that take part, and ``semi``: the unlabeled data join the
    vocabulary and ``auto`` is ``dense``, as with the term on, at a zero weight too."""
    if isinstance(X, CompiledCorpus):  # its stored labels are y
        y = labeled_input(X, y)
    else:
        X, y = check_labeled(X, y, allow_empty_corpus=True, partial=True)
    unlabeled = None if X_unlabeled is None else unlabeled_input(X_unlabeled)
    entropy_weight, ge_weight = params["entropy_weight"], params["ge_weight"]
    use_entropy = entropy_weight > 0 and bool(unlabeled)
    use_proportions = params["proportion_weight"] > 0 and bool(unlabeled)
    # A zero weight is the baseline of a grid over that weight (0 belongs in
    # every semi-supervised grid): the data it would weigh are left out, not refused.
    zero_ge = constraints is not None and ge_weight == 0
    use_ge = constraints is not None and not zero_ge
    semi = bool(unlabeled) or zero_ge
    terms_on = use_entropy or use_ge or use_proportions
    if not X and not (unlabeled and terms_on):
        raise SscrfError("the training data is empty" + (
            "" if not semi else ": no labeled data, and at entropy_weight=0, ge_weight=0 "
            "X_unlabeled takes no part; set entropy_weight > 0, or ge_weight > 0"))
    # A positive weight with nothing to act on would train a supervised model unasked
    # (an empty X_unlabeled is data that happens to be empty: supervised).
    for name in ("entropy_weight", "proportion_weight"):
        if params[name] > 0 and X_unlabeled is None:
            raise SscrfError(f"{name}={params[name]!r} needs unlabeled data: give "
                             f"X_unlabeled, or set {name}=0 for a supervised fit")
    if ge_weight > 0 and not use_ge:
        raise SscrfError(f"ge_weight={ge_weight!r} needs constraints (labeled features) "
                         "and X_unlabeled: give constraints=, or set ge_weight=0")
    if use_ge:
        if not unlabeled:
            raise SscrfError("constraints need unlabeled data: give X_unlabeled")
        constraints = _constraints.check_constraints(constraints, params["labels"])
        if not constraints:
            raise SscrfError("constraints is empty")
    else:
        constraints = None
    if semi and not terms_on:
        warnings.warn(ZERO_WEIGHT_WARNING, UserWarning, stacklevel=5)
    return X, y, unlabeled, use_entropy, use_ge, constraints, semi, use_proportions


def label_set(labels: Optional[Sequence[str]], y: Sequence[Sequence[str]]) -> List[str]:
    """The model's labels: ``labels`` (checked against ``y``), else every label of ``y``."""
    if labels is not None:
        checked: List[str] = check_label_list(labels)
        known = set(checked)
        for s, seq in enumerate(y):
            for t, label in enumerate(seq):
                if label not in known:
                    raise SscrfError(f"sentence {s}, token {t}: label {label!r} is not in labels=")
        return checked
    found = sorted({label for seq in y for label in seq})
    if not found:
        raise SscrfError("no labels: without labeled data, give the label set with labels=")
    return found


def model_labels(params: Params, y: Any, use_ge: bool, constraints: Any) -> List[str]:
    """The label set of a fit: ``labels=``, else the labels of ``y``, and with GE the
    labels the constraints name."""
    label_source = label_view(y, params["labels"])
    if use_ge and params["labels"] is None:  # labels named by constraints join the label set
        named = _constraints.constraint_labels(constraints)
        seen = {label for seq in label_source for label in seq}
        only_named = [label for label in named if label not in seen]
        if seen and only_named:  # with labeled data, most likely a misspelling
            shown = ", ".join(map(repr, only_named[:5]))
            warnings.warn(f"label(s) {shown} are named by the constraints but by no labeled "
                          "token (misspelt?); each becomes a label of its own (give the "
                          "label set, labels= or --labels, to refuse unknown labels)",
                          UserWarning, stacklevel=4)
        label_source = list(label_source) + [named]
    classes = label_set(params["labels"], label_source)
    if len(classes) == 1:  # e.g. a label column of '_' only, or the wrong column
        warnings.warn(f"the label set is the one label {classes[0]!r}: the model will "
                      "give it to every token", UserWarning, stacklevel=4)
    return classes


def n_columns(X: Sequence[Sequence[Any]]) -> int:
    """Columns of the first token (1 without tokens), for templates="default"."""
    for s, sentence in enumerate(X):
        for t, token in enumerate(sentence):
            if isinstance(token, (list, tuple)) and len(token) == 0:
                raise SscrfError(f"sentence {s}, token {t}: templates='default' needs tokens "
                                 "of at least one column, not an empty list")
            return len(token)
    return 1


# -- terms ------------------------------------------------------------------------------


def labeled_terms(features: Features, y: Sequence[Sequence[Any]], label_index: Dict[str, int],
                  weights: Optional[ArrayLike], layout: _core.Layout, n_threads: int,
                  token_labels: Optional[NDArray[Any]] = None) -> Tuple[List[Term], List[Term]]:
    """The training terms of annotated sentences.

    Complete sentences go to the ``likelihood`` term; sentences with sets,
    ``None`` or alternatives to ``partial_likelihood`` (through node masks,
    and node plus edge masks for alternatives the masks represent exactly)
    or to ``alternatives`` (the rest). Sentences whose annotation allows
    every labeling add nothing and are left out.

    ``layout`` is the compiled ``_core.Layout``; ``token_labels``: the label
    ids of the tokens when already encoded (only used when every sentence
    is complete).

    Returns
    -------
    (list, list)
        The ``likelihood`` term (if any), then the others.
    """
    if all(is_complete(seq) for seq in y):
        labels = encode_labels(y, label_index) if token_labels is None else token_labels
        return [Likelihood(compile_corpus(features, labels=labels, weights=weights,
                                          n_labels=layout.n_labels), layout, n_threads)], []
    masks = [sentence_masks(seq, label_index, f"sentence {s}") for s, seq in enumerate(y)]
    complete, node_only, with_edges, inexact = [], [], [], []
    for s, m in enumerate(masks):
        if m.complete:
            complete.append(s)
        elif m.unconstrained:
            continue
        elif m.edge is None:
            node_only.append(s)
        elif m.exact:
            with_edges.append(s)
        else:
            inexact.append(s)
    w = None if weights is None else np.asarray(weights, dtype=np.float64)

    def sub_weights(ids: List[int]) -> Optional[NDArray[np.float64]]:
        return None if w is None else np.ascontiguousarray(w[ids])

    supervised: List[Term] = []
    others: List[Term] = []
    if complete:
        sub, _ = subset_features(features, complete)
        labels = np.concatenate([masks[s].singleton_ids() for s in complete])
        supervised.append(Likelihood(
            compile_corpus(sub, labels=labels, weights=sub_weights(complete),
                           n_labels=layout.n_labels), layout, n_threads))
    for ids, edges in ((node_only, False), (with_edges, True)):
        if not ids:
            continue
        sub, _ = subset_features(features, ids)
        node = np.concatenate([masks[s].node for s in ids])
        edge = np.concatenate([masks[s].edge for s in ids]) if edges else None
        corpus = compile_corpus(sub, weights=sub_weights(ids), mask=node, edge_mask=edge,
                                n_labels=layout.n_labels)
        others.append(PartialLikelihood(corpus, layout, n_threads))
    if inexact:
        alternatives = [cast("NDArray[Any]", masks[s].alternatives) for s in inexact]
        groups = [g for g, rows in enumerate(alternatives) for _ in range(len(rows))]
        sub, _ = subset_features(features, inexact)
        labels = np.concatenate([row for rows in alternatives for row in rows])
        sw = None if w is None else w[inexact]
        others.append(AlternativesLikelihood(sub, labels.astype(np.int32), np.asarray(groups),
                                             layout, n_threads, sentence_weights=sw))
    return supervised, others


def ge_constraints(constraints: Mapping[str, Any], extractor: FeatureExtractor,
                   unlabeled: Features, classes: Sequence[str]
                   ) -> Tuple[NDArray[np.int64], NDArray[np.float64], Dict[str, Any]]:
    """Constraint map (A,), targets (M, S) and the constraints kept, for the ``ge`` term.

    Drops, with a warning, constraints whose attribute is not in the
    vocabulary or never fires in the unlabeled data.
    """
    return kept_constraints(constraints, extractor,
                            token_counts([unlabeled], unlabeled.n_attributes) > 0, classes)


def kept_constraints(constraints: Mapping[str, Any], extractor: FeatureExtractor,
                     fires: NDArray[np.bool_], classes: Sequence[str]
                     ) -> Tuple[NDArray[np.int64], NDArray[np.float64], Dict[str, Any]]:
    """:func:`ge_constraints` from ``fires`` (n_attributes,): whether each attribute is
    present at some unlabeled token (the distributed fit adds the shards' counts)."""
    index = extractor.attribute_index()
    absent = [a for a in constraints if a not in index]
    silent = [a for a in constraints if a in index and not fires[index[a]]]
    for what, dropped in (("not in the vocabulary (never in the training data, or cut by "
                           "min_freq)", absent), ("never present in X_unlabeled", silent)):
        if dropped:
            shown = ", ".join(map(repr, dropped[:10])) + (" ..." if len(dropped) > 10 else "")
            warnings.warn(f"{len(dropped)} constraint attribute(s) {what}; dropped: {shown}",
                          UserWarning, stacklevel=4)
    kept = {a: d for a, d in constraints.items() if a in index and fires[index[a]]}
    if not kept:
        examples = ", ".join(map(repr, (extractor.attributes_ or [])[:3]))
        raise SscrfError("no constraint attribute fires in X_unlabeled (the unlabeled "
                         "sentences); nothing for the ge term. Attributes are named as the "
                         f"features name them, e.g. {examples}")
    attributes, targets = _constraints.target_matrix(kept, classes)
    constraint_of_attribute = np.full(len(fires), -1, dtype=np.int64)
    constraint_of_attribute[[index[a] for a in attributes]] = np.arange(len(attributes))
    return constraint_of_attribute, targets, kept


# -- the stages together ------------------------------------------------------------------


class _Plan(NamedTuple):
    """What the checked inputs ask for: the data, the terms that take part, the labels."""

    X: list
    y: list
    unlabeled: list
    use_entropy: bool
    use_ge: bool
    constraints: dict
    weights: Optional[np.ndarray]
    classes: list
    feature_set: str
    n_threads: int
    semi: bool = False
    use_proportions: bool = False


def fit(params: Params, X: Any, y: Any, X_unlabeled: Any = None, init: Any = None,
        callback: Optional[Callable[..., Any]] = None, sample_weight: Optional[ArrayLike] = None,
        checkpoint: Any = None, checkpoint_every: int = 10, constraints: Any = None,
        X_dev: Any = None, y_dev: Any = None) -> Dict[str, Any]:
    """Train a CRF; returns its fitted attributes as a dict (see :meth:`sscrf.CRF.fit`).

    ``params`` is the estimator's ``get_params()``; ``init`` a fitted CRF or None;
    with ``X_dev`` and ``y_dev`` the iterate of the best dev score is kept.
    """
    check_dev_pair(X_dev, y_dev)
    started = time.perf_counter()
    plan = _plan_fit(params, X, y, X_unlabeled, constraints, sample_weight, checkpoint,
                     checkpoint_every)
    extraction = {name: params.get(name) for name in EXTRACTION_PARAMS}
    sentences = (X, y, X_unlabeled, extraction, plan.n_threads)
    extractor, features = _shared(("features",) + sentences, lambda: _extract(extraction, plan))
    extractor = copy.copy(extractor)  # each model its own (the lookup stays shared)
    token_labels, layout = _layout(params, plan, extractor, features, started)
    x_scale = variable_scale(features, extractor, layout)
    state: Dict[str, Any] = {"classes_": plan.classes, "extractor_": extractor,
             "feature_set_": plan.feature_set, "row_ptr_": layout.row_ptr,
             "label_ids_": layout.label_ids}
    supervised, terms, kept = _terms(params, plan, extractor, features, token_labels, layout)
    if kept is not None:
        state["constraints_"] = kept
    # The terms hold compiled corpora; the numpy matrices are not needed
    # any more and would otherwise stay alive through the optimiser (but for
    # the copy a shared_compilation block keeps for the next fit).
    del features
    theta0 = np.zeros(layout.size)
    if init is not None:
        _warm_start(layout, plan.classes, extractor, init, theta0)
    if checkpoint is not None:
        callback = checkpointing(callback, checkpoint, checkpoint_every, params, state, layout)
    tracker = None
    if X_dev is not None:
        devset = _shared(("dev",) + sentences + (X_dev, y_dev, tuple(plan.classes),
                                                  params["dev_scoring"]),
                         lambda: DevSet(extractor, plan.classes, X_dev, y_dev,
                                        params["dev_scoring"], plan.n_threads))
        tracker = DevTracker(devset, layout.core, params["dev_period"],
                             params.get("dev_patience"))
        callback = tracker.wrap(callback)
    result, stages = _optimise(params, plan, supervised, terms, theta0, callback,
                               warm_start=init is None, x_scale=x_scale, tracker=tracker)
    if result.stop_reason == STOP_INTERRUPTED and result.n_iterations + sum(
            stage.get("iterations", 0) for stage in stages.values()) == 0:
        raise KeyboardInterrupt("training interrupted before its first iteration")
    state["coef_"] = result.theta
    state["training_"] = training_record(result)
    if stages:
        state["training_"]["stages"] = stages
    if tracker is not None:  # the iterations count on across the stages, as the callback's
        done = result.n_iterations + sum(stage["iterations"] for stage in stages.values())
        state["coef_"], state["training_"]["dev"] = tracker.finish(done, result.theta)
        if tracker.stopped:
            state["training_"]["stop_reason"] = STOP_DEV_PATIENCE
    return state


def _plan_fit(params: Params, X: Any, y: Any, X_unlabeled: Any, constraints: Any,
              sample_weight: Optional[ArrayLike], checkpoint: Any,
              checkpoint_every: int) -> _Plan:
    """Every check before any work."""
    n_threads = check_params(params)
    X, y, unlabeled, use_entropy, use_ge, constraints, semi, use_proportions = _plan(
        params, X, y, X_unlabeled, constraints)
    weights = check_sample_weight(sample_weight, len(X))
    if checkpoint is not None:
        check_integer(checkpoint_every, "checkpoint_every", minimum=1)
        check_writable(checkpoint)
    classes = model_labels(params, y, use_ge, constraints)
    feature_set = params["feature_set"]
    if feature_set == "auto" and params["all_possible_states"] is not None:
        feature_set = "dense" if params["all_possible_states"] else "observed"
    if feature_set == "auto":
        feature_set = "dense" if semi else "observed"
    return _Plan(X, y, unlabeled, use_entropy, use_ge, constraints, weights, classes,
                 feature_set, n_threads, semi, use_proportions)


#: The hyperparameters that feature extraction reads (:func:`_extract` is given
#: these alone): fits that differ in others can share one extraction.
EXTRACTION_PARAMS = ("templates", "min_freq", "max_features", "hash_features", "word_vectors")

_SHARED: ContextVar[Optional[Dict[Any, Any]]] = ContextVar("sscrf_shared_compilation",
                                                           default=None)


@contextmanager
def shared_compilation() -> Iterator[None]:
    """Within the block, fits of the same sentences (the same objects, unchanged) under
    the same :data:`EXTRACTION_PARAMS` share one feature extraction, one compiled dev
    set and one label-proportion corpus, each fit getting its own copy of the
    extractor.

    :func:`sscrf.select_hyperparameters` fits a whole grid so (0.45 s saved a fit
    on 350k unlabeled tokens).
    """
    token = _SHARED.set({})
    try:
        yield
    finally:
        _SHARED.reset(token)


def _identity(value: Any) -> Any:
    """A hashable stand-in for a value in a :func:`_shared` key: plain values as they
    are, any other object (a sentence list, a Templates) by identity."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, tuple):
        return tuple(_identity(v) for v in value)
    if isinstance(value, dict):
        return tuple((k, _identity(v)) for k, v in value.items())
    return ("id", id(value))


def _shared(key: Tuple[Any, ...], make: Callable[[], Any]) -> Any:
    """``make()``, or, inside :func:`shared_compilation`, what it gave for ``key``
    before."""
    cache = _SHARED.get()
    if cache is None:
        return make()
    k = _identity(key)
    if k not in cache:
        # the key's objects are kept alive with the value, so that their ids
        # cannot be taken by new objects while the cache holds it
        cache[k] = (key, make())
    return cache[k][1]


def _extract(params: Mapping[str, Any], plan: _Plan
             ) -> Tuple[FeatureExtractor, List[Features]]:
    """The vocabulary and the feature rows of the labeled (and unlabeled) sentences,
    under ``params``: the :data:`EXTRACTION_PARAMS` alone."""
    templates = params["templates"]
    compiled = any(isinstance(c, CompiledCorpus) for c in (plan.X, plan.unlabeled))
    if isinstance(templates, str) and templates.strip() == "default" and not compiled:
        templates = default_templates(n_columns(plan.X or plan.unlabeled))
    hashing = params.get("hash_features")
    # at fit, not in check_params, which loading runs too: a model file holding both loads
    if hashing is not None and (params["min_freq"] != 1 or params.get("max_features") is not None):
        raise SscrfError("hash_features has no vocabulary: min_freq and max_features go "
                         "without it (bound the model by hash_features or max_features, not "
                         "both)")
    for corpus in (plan.X, plan.unlabeled):
        if isinstance(corpus, CompiledCorpus) and corpus.hash_features != hashing:
            raise SscrfError(f"{corpus.path}: compiled with hash_features="
                             f"{corpus.hash_features}, the estimator has hash_features="
                             f"{hashing}: they must be the same")
    if params.get("word_vectors") is not None and any(
            isinstance(corpus, CompiledCorpus) for corpus in (plan.X, plan.unlabeled)):
        raise SscrfError("a compiled corpus holds its template features only; word_vectors "
                         "take sentences")
    # min_freq still cuts what a list X adds to a compiled X_unlabeled's vocabulary
    if isinstance(plan.X, CompiledCorpus):
        refuse_vocabulary_cuts(plan.X.path, params["min_freq"], params.get("max_features"))
    elif isinstance(plan.unlabeled, CompiledCorpus):
        refuse_vocabulary_cuts(plan.unlabeled.path, 1, params.get("max_features"))
    if isinstance(plan.X, CompiledCorpus):  # its vocabulary, as compiled
        extractor = plan.X.extractor()
        features = [plan.X.features()]
        if isinstance(plan.unlabeled, CompiledCorpus):
            features.append(plan.unlabeled.features_for(extractor))
        elif plan.unlabeled:
            features.append(extractor.transform(plan.unlabeled))
    elif isinstance(plan.unlabeled, CompiledCorpus) and hashing is not None:
        extractor, features = hashed_with(plan.unlabeled, plan.X, params["templates"],
                                          plan.n_threads)
    elif isinstance(plan.unlabeled, CompiledCorpus):  # its vocabulary first, as compiled
        extractor, features = vocabulary_with(plan.unlabeled, plan.X, params["templates"],
                                              params["min_freq"])
    else:
        extractor = FeatureExtractor(templates, params["min_freq"], n_threads=plan.n_threads,
                                     hash_features=params.get("hash_features"),
                                     word_vectors=params.get("word_vectors"))
        # the unlabeled sentences join the vocabulary at a zero weight too, so that
        # the zero-weight model is the one the semi-supervised fits start from
        corpora = [plan.X] + ([plan.unlabeled] if plan.unlabeled else [])
        features = extractor.fit_transform(*corpora)
    if params.get("max_features") is not None:
        attributes, features = limit_features(extractor.attributes_ or [], features,
                                              params["max_features"])
        extractor.set_vocabulary(Vocabulary(attributes, extractor.n_columns_))
    return extractor, features


def _layout(params: Params, plan: _Plan, extractor: FeatureExtractor,
            features: List[Features], started: float
            ) -> Tuple[NDArray[Any], ParameterLayout]:
    """The tokens' label ids and the parameter layout."""
    label_index = {label: i for i, label in enumerate(plan.classes)}
    token_labels = encode_labels(plan.y, label_index)
    S = len(plan.classes)
    # Checked before the layout and θ are allocated: a small file with many
    # labels asks for S² transitions, a dense one for A·S weights.
    layout = None
    if plan.feature_set == "dense":
        n_pairs = features[0].n_attributes * S
    else:  # the observed pairs: no more than the labeled data's attribute occurrences
        layout = ParameterLayout.for_feature_set(features[0], token_labels, S, plan.feature_set)
        n_pairs = layout.n_pairs
    need = training_bytes(n_pairs, S, params["max_iterations"], features)
    check_memory(need, "training")
    if layout is None:
        layout = ParameterLayout.for_feature_set(features[0], token_labels, S, plan.feature_set)
    # before the first evaluation: what the model will hold
    Progress(params["verbose"]).note(
        f"features: {len(extractor.attributes_ or []):,} attributes, "
        f"{len(plan.classes)} labels, {layout.core.n_parameters:,} parameters "
        f"({plan.feature_set} feature set), training needs about {size_text(need)}, "
        f"{time.perf_counter() - started:.1f} s")
    return token_labels, layout


def training_bytes(n_pairs: int, n_labels: int, max_iterations: int,
                   corpora: Sequence[Features]) -> int:
    """About how many bytes a fit allocates from its layout on.

    The parameters ``P = n_pairs + S² + 2S`` times what each takes: θ₀ (8),
    the optimiser's ``8m + 40`` with its float32 history of
    ``m = min(memory, max_iterations)`` pairs (:mod:`sscrf.optim`'s "Memory"),
    and a pair's label id in the layout and its core copy (8 per pair); the
    compiled copy of each corpus (``corpora``: :class:`sscrf.features.Features`),
    8 bytes per token and 20 per attribute occurrence with its attribute
    index; and the kernels' scratch, four ``(tokens, S)`` float64 blocks of a
    chunk per corpus (emissions, residuals and the lattices' work).
    """
    m = max(1, min(HISTORY_PAIRS, max_iterations))
    n_parameters = n_pairs + n_labels * n_labels + 2 * n_labels
    chunk = _core.chunk_tokens_for(n_labels)
    compiled = sum(8 * len(c.indptr) + 20 * len(c.indices)
                   + 32 * min(chunk, len(c.indptr) - 1) * n_labels for c in corpora)
    return n_parameters * (8 * m + 48) + 8 * n_pairs + compiled


def _terms(params: Params, plan: _Plan, extractor: FeatureExtractor, features: List[Features],
           token_labels: NDArray[Any], layout: ParameterLayout
           ) -> Tuple[List[Term], List[Term], Optional[Dict[str, Any]]]:
    """The supervised terms, all the terms, and the GE constraints kept (or None)."""
    core, n_threads = layout.core, plan.n_threads
    label_index = {label: i for i, label in enumerate(plan.classes)}
    supervised: List[Term] = []
    partial_terms: List[Term] = []
    if plan.X:  # complete sentences: likelihood; sets, None, alternatives: marginalised
        supervised, partial_terms = labeled_terms(features[0], plan.y, label_index, plan.weights,
                                                  core, n_threads, token_labels)
    terms = list(supervised) + partial_terms
    kept = None
    ge_term: Optional[GE] = None
    proportions: Optional[GE] = None
    if plan.use_ge:
        constraint_of_attribute, targets, kept = ge_constraints(
            plan.constraints, extractor, features[1], plan.classes)
        ge_term = GE(compile_corpus(features[1], n_labels=core.n_labels), core, n_threads,
                     weight=params["ge_weight"], constraint_of_attribute=constraint_of_attribute,
                     targets=targets, penalty=params["ge_penalty"])
    if plan.use_proportions:  # expectation regularisation: GE on an always-on feature
        corpus = _shared(("always on", features[1], core.n_labels),
                         lambda: always_on_corpus(features[1], core.n_labels))
        proportions = proportion_term(features[1], core, n_threads, params["proportion_weight"],
                                      target_proportions(params["label_proportions"], plan.y,
                                                         plan.classes), params["ge_penalty"],
                                      corpus)
    # The fast entropy joins a GE term over the same sentences (label proportions
    # first, on their copy of the corpus): one pass then scores the corpus for both.
    partner = proportions if proportions is not None else ge_term
    if plan.use_entropy and params["entropy_method"] == "fast" and partner is not None:
        terms += [t for t in (ge_term, proportions) if t is not None and t is not partner]
        terms.append(EntropyAndGE(partner, params["entropy_weight"]))
        return supervised, terms, kept
    if plan.use_entropy:
        corpus = (ge_term.corpus if ge_term is not None
                  else compile_corpus(features[1], n_labels=core.n_labels))
        terms.append(Entropy(corpus, core, n_threads, weight=params["entropy_weight"],
                             method=params["entropy_method"]))
    terms += [t for t in (ge_term, proportions) if t is not None]
    return supervised, terms, kept


def _optimise(params: Params, plan: _Plan, supervised: List[Term], terms: List[Term],
              theta0: NDArray[np.float64], callback: Optional[Callable[..., Any]],
              warm_start: bool, x_scale: Optional[NDArray[np.float64]] = None,
              tracker: Optional[DevTracker] = None) -> Tuple[TrainResult, Dict[str, Any]]:
    """The optimiser's result and the records of the stages before it. A non-concave
    objective starts from the supervised optimum when ``warm_start`` (no ``init``);
    ``tracker``'s patience then counts in the second stage only."""
    verbose, n_threads = params["verbose"], plan.n_threads
    options = dict(max_iterations=params["max_iterations"], epsilon=params["epsilon"],
                   period=params["period"], delta=params["delta"], callback=callback,
                   verbose=verbose, c1=params["c1"], n_threads=n_threads, x_scale=x_scale,
                   memory=params["num_memories"])
    stages: Dict[str, Any] = {}
    if len(terms) > len(supervised) and supervised and warm_start:
        Progress(verbose).note("stage 1/2: supervised warm start")
        if tracker is not None:
            tracker.counting = False
        warm = minimize(Objective(supervised, params["c2"], n_threads, reuse_gradient=True),
                        theta0, **options)
        stages["supervised"] = training_record(warm)
        if warm.stop_reason in _STOPPED:
            return warm, stages  # Ctrl-C or the callback ended training: no second stage
        theta0 = warm.theta
        _announce_second_stage(Progress(verbose), terms[len(supervised):], params,
                               plan.use_entropy, plan.X, plan.unlabeled)
        if callback is not None:  # iterations count on across the stages
            options["callback"] = shifted_callback(callback, warm.n_iterations)
        if tracker is not None:
            tracker.count_from_here()
    result = minimize(Objective(terms, params["c2"], n_threads, reuse_gradient=True), theta0,
                      **options)
    return result, stages


def variable_scale(features: Sequence[Features], extractor: FeatureExtractor,
                   layout: ParameterLayout, bound: float = RESCALE_ABOVE,
                   warn_above: float = WARN_ABOVE) -> Optional[NDArray[np.float64]]:
    """``x_scale`` for :func:`sscrf.optim.lbfgs`, or None when every feature value is
    at most ``bound`` in magnitude; warns naming the largest attribute when one
    exceeds ``warn_above``.

    The weights of an attribute whose values reach ``m > bound`` get the scale
    ``2^-e``, ``m·2^-e`` in ``[1/2, 1)``: the optimiser then sees that
    attribute at unit scale, while the loss, the L2 prior and the stopping
    rules stay those of θ. ``features``: the corpora's :class:`Features`.
    """
    largest: Dict[int, float] = {}
    for corpus in features:
        for a, m in zip(*(v.tolist() for v in large_values(corpus, bound))):
            largest[a] = max(m, largest.get(a, 0.0))
    if not largest:
        return None
    ids = np.array(sorted(largest), dtype=np.int64)
    top = max(largest, key=largest.__getitem__)
    if largest[top] > warn_above:
        n = sum(m > warn_above for m in largest.values()) - 1
        more = f" ({n} more attribute{'s' if n > 1 else ''} above it)" if n else ""
        name = cast(List[str], extractor.attributes_)[top]
        warnings.warn(f"attribute {name!r} has values up to "
                      f"{largest[top]:.3g}, far from unit scale (above {warn_above:g}){more}: "
                      "the L2 prior hardly constrains such weights. Training copes, but "
                      "dividing the values by a constant, or taking their log, gives the "
                      "model you would expect", FeatureScaleWarning, stacklevel=4)
    exponents = np.array([math.frexp(largest[a])[1] for a in ids.tolist()], dtype=np.int64)
    starts, counts = layout.row_ptr[ids], layout.row_ptr[ids + 1] - layout.row_ptr[ids]
    x_scale = np.ones(layout.size)
    positions = np.arange(counts.sum()) + np.repeat(starts - np.cumsum(counts) + counts, counts)
    x_scale[positions] = np.repeat(np.ldexp(1.0, -exponents), counts)
    return x_scale


def _warm_start(layout: ParameterLayout, classes: Sequence[str], extractor: FeatureExtractor,
                init: Any, theta: NDArray[np.float64]) -> None:
    """Start θ from ``init``'s weights of the attributes and labels both models have."""
    new_index = extractor.attribute_index()
    old_to_new_attr = np.array([new_index.get(a, -1) for a in init.extractor_.attributes_],
                               dtype=np.int64)
    label_map = {label: i for i, label in enumerate(classes)}
    old_to_new_label = np.array([label_map.get(l, -1) for l in init.classes_], dtype=np.int64)
    layout.warm_start(theta, init.layout_, init.coef_, old_to_new_attr, old_to_new_label)


def _announce_second_stage(report: Progress, added_terms: Sequence[Term], params: Params,
                           use_entropy: bool, X: Any, unlabeled: Any) -> None:
    added = ", ".join(dict.fromkeys(str(t.name) for t in added_terms))
    pull = ""
    if use_entropy:  # the term's weight grows with the unlabeled data
        ratio = params["entropy_weight"] * n_tokens_of(unlabeled) / n_tokens_of(X)
        pull = f" (entropy_weight x unlabeled tokens = {ratio:.3g} x the labeled)"
    several = "," in added or "+" in added  # an EntropyAndGE term is two terms
    report.note(f"stage 2/2: adding the {added} term{'s' if several else ''}{pull}")


def training_record(result: TrainResult) -> Dict[str, Any]:
    """``training_`` of a fitted model (one stage's): iterations, evaluations, loss, stop
    reason, seconds, the loss history, and ``stalled`` when training stopped short."""
    record = {"iterations": result.n_iterations, "evaluations": result.n_evaluations,
              "loss": result.loss, "stop_reason": result.stop_reason,
              "seconds": result.seconds, "history": list(result.history)}
    if result.stalled is not None:  # only then, so that other records keep their bytes
        record["stalled"] = result.stalled
    return record
