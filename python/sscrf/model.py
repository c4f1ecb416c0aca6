"""The CRF estimator: scikit-learn style hyperparameters, fit, predict, save.

A model is an attribute vocabulary (:mod:`sscrf.features`), a label list, a
layout saying which labels each attribute may score
(:class:`sscrf.layout.ParameterLayout`), and one flat parameter vector
``coef_ = [W entries | T (S×S) | start (S) | end (S)]`` that the C++ core
reads directly. This module is the estimator's face: fitting is
:mod:`sscrf.training`, decoding :mod:`sscrf.decoding`, the file format
:mod:`sscrf.model_file`.
"""

from __future__ import annotations

import copy
import inspect
import os
import threading
from typing import TYPE_CHECKING, Any, Callable, Optional, Sequence, Union

from . import training
from .corpus_file import CompiledCorpus, labeled_input
from .decoding import Decoder
from .errors import SscrfError, SscrfTypeError
from .fit_callbacks import saved_scoring
from .inspection import FittedModelView
from .inputs import check_label_list, check_labeled, check_threads
from .layout import ParameterLayout
from .model_file import read_model, write_model
from .optim import STOP_INTERRUPTED

if TYPE_CHECKING:
    import os as _os

    import numpy as np
    from numpy.typing import ArrayLike, NDArray

    PathLike = Union[str, "_os.PathLike[str]"]

# The attributes a fit sets, all at once (see _commit).
_FITTED = ("classes_", "extractor_", "feature_set_", "row_ptr_", "label_ids_", "coef_",
           "training_", "constraints_")


class CRF(FittedModelView):
    """Linear-chain conditional random field.

    Parameters
    ----------
    c1 : float
        L1 coefficient: the loss gains ``c1·‖θ‖₁`` (CRFsuite's convention),
        trained by OWL-QN; zero weights stay exactly zero, so the model is
        sparse (``n_active_features_``).
    c2 : float
        L2 coefficient: the loss is ``−log-likelihood + c2·‖θ‖²`` (CRFsuite's
        convention), over every weight including transitions.
    max_iterations : int
        L-BFGS iteration limit.
    epsilon, period, delta : float, int, float
        Convergence tests (CRFsuite's): gradient norm below
        ``epsilon·max(1, ‖θ‖)``, or relative improvement over the last
        ``period`` iterations below ``delta``.
    n_threads : int or None
        Threads for training and decoding; None uses every core. More threads
        than cores is allowed; results do not depend on the count. In a
        process forked after sscrf ran threads (a multiprocessing worker
        under the ``fork`` start method) OpenMP cannot start threads, so
        sscrf runs on one thread there and warns once; use ``spawn`` or
        ``forkserver`` for threads in workers. A fitted model may predict
        from several Python threads at once (the compiled core releases the
        GIL). ``fit`` builds the new model aside and replaces the fitted
        attributes only when it has succeeded (a fit that raises leaves the
        model exactly as it was), under a lock that the predictions take to
        read the model, so a prediction in another thread uses the old model
        or the new one, never a mix. Two threads calling ``fit`` on one
        model are serialised by a lock of the model (the second fit waits
        for the first); the locks are not pickled or copied.
    feature_set : {"auto", "observed", "dense"}
        ``observed`` keeps the attribute-label pairs seen in labeled data
        (CRFsuite's default); ``dense`` keeps every pair; ``auto`` is
        ``observed`` for supervised training and ``dense`` with unlabeled
        data. With entropy or GE, ``observed`` trains the labeled data's
        pairs on the unlabeled sentences too: a model whose size does not
        grow with the unlabeled vocabulary.
    labels : list of str or None
        The label set; None takes every label seen in ``fit``.
    templates : None, "default", template text or list of lines
        None: tokens are feature dicts or lists of attribute strings, as
        python-crfsuite takes them (``{"w": "the"}`` is the attribute
        ``w:the``; see :class:`sscrf.features.FeatureExtractor`). Otherwise
        tokens are lists of column
        strings and attributes come from CRF++-style templates; ``"default"``
        uses :func:`sscrf.features.default_templates` for the number of
        columns of the training data.
    min_freq : int
        Attributes seen at fewer tokens are dropped: an attribute is kept
        when the number of tokens it fires at, with any label, over every
        corpus given to ``fit`` (unlabeled ones too), is ≥ ``min_freq``.
        CRFsuite's ``feature.minfreq`` (sklearn-crfsuite's ``min_freq``)
        also keeps ≥, but counts each (attribute, label) pair of the
        labeled data apart and sums the attribute's values: with values of
        1 and each attribute seen with one label the two agree; an attribute
        seen with several labels is kept here by its total count where
        CRFsuite may drop its rarer pairs.
    hash_features : int or None
        ``2**k``: attributes go to ``2**k`` buckets by FNV-1a 64 of their
        UTF-8 string (see :class:`~sscrf.features.FeatureExtractor`), with no
        vocabulary (``min_freq`` and ``max_features`` are refused with it);
        the model records it and tags with it.
    word_vectors : sscrf.representations.WordVectors or None
        With templates: real-valued word-vector features for each token
        (:meth:`sscrf.WordRepresentations.word_vectors`, the ``rep.v``
        attributes that :meth:`~sscrf.WordRepresentations.features` gives
        feature-dict users). A saved model records their setting and checksum,
        not the vectors: after :meth:`load`, :meth:`bind_word_vectors`.
    max_features : int or None
        Keep at most this many attributes, the most frequent (after
        ``min_freq``; an attribute tied at the cut is kept if it occurred
        first): a bound on the model's size that does not depend on how often
        a corpus repeats itself, as ``min_freq`` does.
    entropy_weight : float
        γ of the entropy-regularisation term ``γ·Σ_{x unlabeled} H(Y | x)``
        (Jiao et al. 2006); a γ > 0 needs ``X_unlabeled`` in ``fit``. Jiao
        et al.'s prior ``‖θ‖²/2`` is ``c2 = 0.5`` here. The term sums over
        the unlabeled sentences, so its pull grows with their number: start
        where γ times the unlabeled tokens is at most the labeled tokens
        (say γ = 0.1·labeled/unlabeled tokens) and choose γ on held-out
        data, against a supervised model with ``feature_set="dense"`` (the
        features this training uses). Too large a γ drives the model to
        confident wrong labelings: on EWT UPOS with 100 labeled and 3,000
        unlabeled sentences, γ = 0.5 took accuracy from 79% to 47%
        (``bench/papers/entropy_weight_ewt.py``). The model weighs every attribute
        of the labeled and unlabeled sentences with every label, so it
        grows with the unlabeled vocabulary; ``min_freq`` bounds it.
    entropy_method : {"fast", "jiao"}
        Gradient of the entropy term: the O(n S²) covariance kernel, or Jiao
        et al.'s O(n² S³) nested programme (a reference; same values).
    ge_weight : float
        λ of the generalized-expectation term ``λ·Σ_m D(p̃_m ‖ p̂_m)`` (Mann &
        McCallum 2008); a λ > 0 needs ``constraints`` (labeled features) and
        ``X_unlabeled`` in ``fit``: ``p̂_m`` is the model's label
        distribution averaged over the unlabeled tokens where attribute
        ``m`` fires. See :mod:`sscrf.constraints` and the ``ge`` term of
        :mod:`sscrf.objectives` (smoothing of ``p̂``).
    ge_penalty : {"kl", "l2"}
        ``D``: ``KL(p̃ ‖ p̂)`` (the paper's) or the squared distance
        ``‖p̃ − p̂‖²`` (MALLET's L2 variant).
    verbose : bool
        Show training progress on stderr (off by default, as in scikit-learn;
        the command line shows it).
    algorithm : {"lbfgs"}
        sklearn-crfsuite's argument: sscrf trains by L-BFGS (OWL-QN when
        ``c1 > 0``); CRFsuite's ``l2sgd``, ``ap``, ``pa`` and ``arow`` are
        refused with a message.
    num_memories : int
        L-BFGS history pairs (CRFsuite's ``num_memories``, default 6).
    linesearch : {"MoreThuente"}
        sscrf's line search finds a step meeting the strong Wolfe
        conditions, as CRFsuite's default ``MoreThuente`` does; CRFsuite's
        ``Backtracking`` and ``StrongBacktracking`` are refused.
    all_possible_states : bool or None
        sklearn-crfsuite's name for the feature set: True is
        ``feature_set="dense"``, False ``"observed"``, None leaves
        ``feature_set`` as given; a value that contradicts an explicit
        ``feature_set`` is refused.
    all_possible_transitions : bool or None
        Accepted for sklearn-crfsuite code. sscrf always trains every one of
        the S² label transitions (and start and end weights), which is what
        CRFsuite does with True; with False or None CRFsuite keeps only the
        transitions seen in labeled data, sscrf still trains all S² (an
        unseen transition's weight is pushed negative by the data instead of
        being absent).
    dev_scoring : None, "chunk_f1", "accuracy" or callable
        The score of ``fit(..., X_dev=, y_dev=)`` (higher is better): None is
        entity F1 (``sscrf.metrics.chunk_scores``, IOB2) when some dev label
        starts with ``B-`` or ``I-`` and token accuracy otherwise; a callable
        is called as ``dev_scoring(y_true, y_pred) -> float``. A saved model
        keeps a named score and None for a callable.
    dev_period : int
        With ``X_dev``, score the iterate every ``dev_period`` L-BFGS
        iterations (and the final one).
    dev_patience : int or None
        With ``X_dev``, stop once ``dev_patience`` dev scores in a row have
        not beaten the best so far (early stopping: scikit-learn's
        ``n_iter_no_change``); ``training_["stop_reason"]`` then says so.
        None runs to ``max_iterations`` or convergence. In a fit that starts
        with a supervised warm start, the count begins with the
        semi-supervised stage. The model keeps the best iterate either way.
    proportion_weight : float
        λ of the label-proportion term ``λ·KL(p̃ ‖ p̂)`` (expectation
        regularisation, Mann & McCallum 2007), ``p̂`` being the model's label
        distribution averaged over every token of ``X_unlabeled`` (a λ > 0
        needs it). With ``entropy_weight`` it keeps entropy minimisation from
        labeling every uncertain token with the majority label. See
        :mod:`sscrf.proportions`; ``ge_penalty`` chooses KL or L2.
    label_proportions : "labeled" or dict
        ``p̃``: the label frequencies of the completely labeled sentences,
        or ``{label: share}`` summing to 1.

    Attributes
    ----------
    classes_ : list of str
        The labels, in the model's internal order.
    coef_ : ndarray
        The flat parameter vector.
    training_ : dict
        Iterations, evaluations, final loss, stop reason, seconds, loss history;
        ``"stalled"`` (present only then) says why training stopped short of a
        minimum, as the ``ConvergenceWarning`` did. After a fit in two stages (a supervised warm start, then the
        semi-supervised objective) these are the second stage's, and
        ``training_["stages"]["supervised"]`` holds the first stage's.
        Saved models keep all but the seconds and the history (a loaded
        model's file bytes depend on the data and settings only). After a
        fit with ``X_dev``, ``training_["dev"]`` holds ``curve`` (a list of
        ``[iteration, dev score]``), ``best_iteration``, ``best_score``,
        ``scoring`` and ``period``; ``coef_`` is then the best iterate's.
    """

    if TYPE_CHECKING:  # set by fit or load (see _FITTED)
        feature_set_: str
        constraints_: dict[str, Any]
        representations_: Any

    def __init__(self, c1: float = 0.0, c2: float = 1.0, max_iterations: int = 100,
                 epsilon: float = 1e-5, period: int = 10, delta: float = 1e-5,
                 n_threads: Optional[int] = None, feature_set: str = "auto",
                 labels: Optional[Sequence[str]] = None, templates: Any = None,
                 min_freq: int = 1, entropy_weight: float = 0.0, entropy_method: str = "fast",
                 ge_weight: float = 0.0, ge_penalty: str = "kl", verbose: bool = False,
                 algorithm: str = "lbfgs", num_memories: int = 6,
                 linesearch: str = "MoreThuente", all_possible_states: Optional[bool] = None,
                 all_possible_transitions: Optional[bool] = None,
                 max_features: Optional[int] = None, dev_scoring: Any = None,
                 dev_period: int = 5, proportion_weight: float = 0.0,
                 label_proportions: Any = "labeled",
                 hash_features: Optional[int] = None, word_vectors: Any = None,
                 dev_patience: Optional[int] = None) -> None:
        self.c1 = c1
        self.c2 = c2
        self.max_iterations = max_iterations
        self.epsilon = epsilon
        self.period = period
        self.delta = delta
        self.n_threads = n_threads
        self.feature_set = feature_set
        self.labels = labels
        self.templates = templates
        self.min_freq = min_freq
        self.entropy_weight = entropy_weight
        self.entropy_method = entropy_method
        self.ge_weight = ge_weight
        self.ge_penalty = ge_penalty
        self.verbose = verbose
        self.algorithm = algorithm
        self.num_memories = num_memories
        self.linesearch = linesearch
        self.all_possible_states = all_possible_states
        self.all_possible_transitions = all_possible_transitions
        self.max_features = max_features
        self.dev_scoring = dev_scoring
        self.dev_period = dev_period
        self.proportion_weight = proportion_weight
        self.label_proportions = label_proportions
        self.hash_features = hash_features
        self.word_vectors = word_vectors
        self.dev_patience = dev_patience

    # -- scikit-learn protocol ----------------------------------------------

    @classmethod
    def _param_names(cls) -> list[str]:
        return [p for p in inspect.signature(cls.__init__).parameters if p != "self"]

    def get_params(self, deep: bool = True) -> dict[str, Any]:
        """Hyperparameters as a dict (scikit-learn protocol)."""
        return {name: getattr(self, name) for name in self._param_names()}

    def set_params(self, **params: Any) -> CRF:
        """Set hyperparameters (scikit-learn protocol); returns self."""
        valid = set(self._param_names())
        for name in params:  # all checked before any is set
            if name not in valid:
                raise ValueError(f"invalid parameter {name!r} for CRF; valid: {sorted(valid)}")
        for name, value in params.items():
            setattr(self, name, value)
        return self

    def __sklearn_tags__(self) -> Any:
        """Estimator tags, which scikit-learn 1.6 and later ask of every
        estimator (``cross_val_score`` and ``GridSearchCV`` fail without
        them): a supervised estimator, neither classifier nor regressor (its
        ``y`` is a list of label sequences, so folds are plain ``KFold``),
        whose inputs are lists of sentences rather than 2-D arrays. Only
        scikit-learn calls this, so it imports scikit-learn here."""
        from sklearn.utils import InputTags, Tags, TargetTags

        return Tags(estimator_type=None, target_tags=TargetTags(required=True),
                    transformer_tags=None, regressor_tags=None, classifier_tags=None,
                    input_tags=InputTags(two_d_array=False))

    def __repr__(self) -> str:
        defaults = {p.name: p.default for p in inspect.signature(CRF.__init__).parameters.values()
                    if p.name != "self"}
        changed = [f"{k}={v!r}" for k, v in self.get_params().items()
                   if not _same_value(v, defaults[k])]
        return f"CRF({', '.join(changed)})"

    # -- training -----------------------------------------------------------

    def fit(self, X: Any, y: Any, X_unlabeled: Any = None, init: Optional[CRF] = None,
            callback: Optional[Callable[..., Any]] = None,
            sample_weight: Optional[ArrayLike] = None, checkpoint: Optional[PathLike] = None,
            checkpoint_every: int = 10, constraints: Any = None, *, X_dev: Any = None,
            y_dev: Any = None) -> CRF:
        """Train on labeled sentences, and on unlabeled ones through the semi-supervised terms.

        Parameters
        ----------
        X : list of sentences
            A sentence is a list of tokens: feature dicts or lists of
            attribute strings, or lists of column strings when the model has
            templates. May be empty when unlabeled
            data and a semi-supervised term are given (then ``labels=``, or
            for GE the constraints, name the labels). Or a
            :class:`sscrf.CompiledCorpus` compiled with its labels
            (``has_labels=True``), with ``y=None``: the model takes its
            vocabulary and labels (``min_freq`` and ``max_features`` are
            refused: cut the vocabulary when compiling).
        y : list or None
            Per sentence, one entry per token: a label, a set (``set``,
            ``frozenset`` or ``tuple``) of acceptable labels, or ``None``
            (not annotated); or a :class:`sscrf.partial.Alternatives` of
            whole acceptable labelings. Completely labeled sentences go to
            the likelihood, the others to the marginalised likelihood
            ``−log P(Y_L | x)`` (Tsuboi et al. 2008), which starts from the
            optimum on the complete sentences when there are some.
        X_unlabeled : list of sentences or None
            Data for the ``entropy`` term (``entropy_weight > 0``), the
            ``ge`` term (``constraints``) and the label-proportion term
            (``proportion_weight > 0``). Its attributes join the vocabulary,
            and with it ``feature_set="auto"`` is ``dense``. When every one
            of these weights is 0 (the baseline of a grid over them), it and
            ``constraints`` take no part in the objective: a supervised fit
            on the same features, with a ``UserWarning``. Or a
            :class:`sscrf.CompiledCorpus`: its vocabulary comes first,
            unchanged, then the attributes of ``X`` it lacks (those at
            ``min_freq`` tokens of ``X`` or more); ``max_features`` is
            refused, as for a compiled ``X``, whose vocabulary is the
            model's: cut it when compiling.
        init : CRF, path or None
            Warm start: weights of attributes and labels this model shares
            with ``init`` start from ``init``'s values, the rest from 0.
            Without it, training with a (non-concave) semi-supervised term
            starts from the supervised optimum, as Jiao et al. do.
        callback : callable or None
            ``callback(iteration, loss, theta)`` after each L-BFGS iteration;
            returning True stops training. In a fit of two stages (the
            supervised warm start, then the semi-supervised objective) the
            iterations count on from the first stage into the second, and
            ``loss`` is the current stage's objective.
        sample_weight : array-like (len(X),) or None
            Per-sentence weights of the labeled terms (scikit-learn
            semantics: a weight of 2 counts a sentence twice).
        checkpoint : path or None
            Save the model to this path (atomically) every
            ``checkpoint_every`` iterations; resume an interrupted run with
            ``fit(..., init=checkpoint)``.
        constraints : dict or None
            Labeled features for the generalized-expectation term
            (``ge_weight > 0``, needs ``X_unlabeled``): ``{attribute:
            {label: probability}}``, attributes named as the feature
            extractor names them (``w[0]:john``, ``U02:john``), targets
            summing to 1 over known labels (see :mod:`sscrf.constraints`).
            Without labeled data and ``labels=``, the label set is the labels
            the constraints name; with labeled data but no ``labels=``, it is
            the labels of ``y`` and of the constraints. A constraint whose
            attribute is not in the vocabulary (it never occurs in ``X`` or
            ``X_unlabeled``, or ``min_freq`` cut it) or never fires in
            ``X_unlabeled`` is dropped with a ``UserWarning``; the
            constraints kept are ``constraints_``.
        X_dev, y_dev : list of sentences, list of label sequences, or None
            Held-out, completely labeled sentences (keyword only, both or
            neither): every ``dev_period`` iterations, and at the end, the
            iterate is scored on them (``dev_scoring``; one Viterbi pass of
            the dev set, compiled once) and the model keeps the iterate of
            the best score, not the last one (ties go to the later
            iterate); the curve is ``training_["dev"]``. In a fit of two
            stages the supervised warm start's iterates take part too.
            ``X_dev`` may be a :class:`sscrf.CompiledCorpus` compiled with
            its labels (``y_dev=None``) under the vocabulary of the
            compiled training corpus (``sscrf compile DEV --labeled
            --vocabulary TRAIN.corpus``).

        Returns
        -------
        self

        Raises
        ------
        KeyboardInterrupt
            On Ctrl-C during optimisation, after the model has taken the best
            parameters so far (``training_["stop_reason"]`` is
            ``"interrupted"``; during the supervised warm start of a fit in
            two stages, its parameters, and the second stage does not run),
            so that a loop of fits or a notebook cell stops. Before the first
            iteration, or outside optimisation, the model stays as it was.
        SscrfError, SscrfTypeError
            Bad data or settings; the model stays as it was, as after any
            other exception.
        """
        with self._lock("_fit_lock"):
            if isinstance(init, (str, os.PathLike)):
                init = CRF.load(init)
            elif isinstance(init, CRF):
                with init._lock("_state_lock"):  # its parts of one fit, not two
                    init._check_fitted()
                    init = copy.copy(init)
            elif init is not None:
                raise SscrfTypeError("init must be a fitted CRF, the path of a model file or "
                                     f"None, not {type(init).__name__}")
            if callback is not None and not callable(callback):  # else found at iteration 1
                raise SscrfTypeError("callback must be callable as callback(iteration, loss, "
                                     f"theta), not {type(callback).__name__}")
            state = training.fit(self.get_params(), X, y, X_unlabeled=X_unlabeled, init=init,
                                 callback=callback, sample_weight=sample_weight,
                                 checkpoint=checkpoint, checkpoint_every=checkpoint_every,
                                 constraints=constraints, X_dev=X_dev, y_dev=y_dev)
            self._commit(state)
        record = state["training_"]
        if record["stop_reason"] == STOP_INTERRUPTED:
            raise KeyboardInterrupt(f"training interrupted after {record['iterations']} "
                                    "iterations; the model keeps the best parameters so far")
        return self

    def _lock(self, name: str) -> Any:
        """The object's lock ``name``, made on first use. ``dict.setdefault`` is atomic,
        so two threads asking at once get the same lock; locks are not pickled (see
        ``__getstate__``), so a copy or a clone gets its own."""
        lock = self.__dict__.get(name)
        return lock if lock is not None else self.__dict__.setdefault(name, threading.RLock())

    def _commit(self, state: dict[str, Any]) -> None:
        """Replace the fitted attributes by those of ``state`` (a fit's result), under
        the lock that :meth:`decoder` takes, so that a prediction in another thread
        reads the old model or the new one, never a mix."""
        with self._lock("_state_lock"):
            for name in _FITTED:
                self.__dict__.pop(name, None)
            self.__dict__.pop("_layout_cache", None)
            self.__dict__.update(state)

    def set_fitted_state(self, state: dict[str, Any]) -> CRF:
        """Install a model trained outside :meth:`fit`, e.g. by :func:`sscrf.distributed.fit`.

        ``state`` is what :func:`sscrf.training.fit` returns: ``classes_``,
        ``extractor_``, ``feature_set_``, ``row_ptr_``, ``label_ids_``,
        ``coef_`` and ``training_`` (and ``constraints_`` with GE). The
        fitted attributes are replaced at once, as :meth:`fit` replaces them.
        Returns self.
        """
        required = [name for name in _FITTED if name != "constraints_"]
        missing = [name for name in required if name not in state]
        unknown = [name for name in state if name not in _FITTED]
        if missing or unknown:
            raise SscrfError(f"a fitted state needs {', '.join(required)}; missing: "
                             f"{missing or 'none'}, unknown: {unknown or 'none'}")
        with self._lock("_fit_lock"):
            self._commit(dict(state))
        return self

    def _check_hyperparameters(self) -> None:
        training.check_params(self.get_params())

    def _threads(self) -> int:
        return check_threads(self.n_threads)

    def decoder(self) -> Decoder:
        """The :class:`sscrf.decoding.Decoder` of this fitted model: the kernels behind
        ``predict``, the marginals, probabilities and entropies (e.g. the token and
        transition entropies that active learning's span selection reads)."""
        with self._lock("_state_lock"):
            self._check_fitted()
            return Decoder(self.extractor_, self.classes_, self.layout_, self.coef_,
                           self._threads())

    _decoder = decoder

    # -- inference ----------------------------------------------------------

    def predict(self, X: Any, allowed: Any = None) -> list[list[Any]]:
        """Viterbi labeling of each sentence.

        Parameters
        ----------
        X : list of sentences
        allowed : list or None
            Constrained (forced) decoding: per sentence, None (no constraint)
            or one entry per token: a label, a set of labels, or None (any
            label); or a :class:`sscrf.partial.Alternatives` of whole
            labelings. The best labeling among those allowed is returned.

        Returns
        -------
        list of list of str
            An empty sentence gets an empty labeling.
        """
        return self._decoder().viterbi(X, allowed)

    def predict_nbest(self, X: Any, k: int, allowed: Any = None
                      ) -> list[list[tuple[list[Any], float]]]:
        """The k most probable labelings of each sentence, exactly.

        ``allowed`` restricts the labelings as in :meth:`predict`; the
        log-probabilities stay those of the unconstrained model. A k whose
        lattice state would pass about 1.3 GB for some sentence
        (min(k, S^n)·n·S above 1e8, see :func:`sscrf.lattice.nbest`) is
        refused with a ValueError.

        Returns
        -------
        list of list of (list of str, float)
            Per sentence, up to k pairs ``(labels, log p(labels | x))``, best
            first; exact ties go to the lexicographically smaller labeling.
        """
        return self._decoder().nbest(X, k, allowed)

    def predict_single(self, x: Any) -> list[Any]:
        """Viterbi labeling of one sentence (a list of tokens)."""
        return self.predict([x])[0]

    def predict_marginals(self, X: Any, allowed: Any = None) -> list[list[dict[str, float]]]:
        """Per token, a dict label → marginal probability (sklearn-crfsuite's shape).

        With ``allowed`` (as in :meth:`predict`), the marginals of
        ``p(y | x, y allowed)``.
        """
        node, offsets = self._decoder().marginals(X, allowed)
        classes = self.classes_
        out = []
        for s in range(len(offsets) - 1):
            rows = node[offsets[s]:offsets[s + 1]].tolist()
            out.append([dict(zip(classes, row)) for row in rows])
        return out

    def predict_marginals_single(self, x: Any) -> list[dict[str, float]]:
        """Per token of one sentence, a dict label → marginal probability."""
        return self.predict_marginals([x])[0]

    def predict_marginals_array(self, X: Any) -> list[NDArray[np.float64]]:
        """Node marginals as arrays: a list of (n_s, S) ndarrays, columns in ``classes_`` order."""
        node, offsets = self._decoder().marginals(X)
        return [node[offsets[s]:offsets[s + 1]] for s in range(len(offsets) - 1)]

    def sequence_log_probability(self, X: Any, y: Any = None) -> NDArray[np.float64]:
        """log p(y | x) of given labelings, or of the Viterbi ones when ``y`` is None.

        Returns
        -------
        ndarray (n_sentences,)
        """
        return self._decoder().log_probability(X, y)

    # -- uncertainty (for active learning) ------------------------------------

    def sequence_entropy(self, X: Any) -> NDArray[np.float64]:
        """Exact H(Y | x) of each sentence (0 for an empty one).

        Returns
        -------
        ndarray (n_sentences,)
        """
        return self._decoder().entropies(X)[0]

    def token_entropy(self, X: Any) -> list[NDArray[np.float64]]:
        """Per-token marginal entropies H(Y_t | x).

        Returns
        -------
        list of ndarray (n_s,)
        """
        _, token, _, offsets = self._decoder().entropies(X)
        return [token[offsets[s]:offsets[s + 1]] for s in range(len(offsets) - 1)]

    def most_uncertain_span(self, X: Any, width: int) -> list[tuple[int, int, float]]:
        """Per sentence, the span of ``width`` tokens whose labels are most uncertain.

        The entropy of the posterior over ``y[begin:stop]`` (Tsuboi et al.
        2008 §5.1, computed as ``H(Y_begin) + Σ H(Y_t | Y_{t-1})``); a
        sentence shorter than ``width`` gives its whole length, the first
        span wins ties.

        Returns
        -------
        list of (begin, stop, entropy)
        """
        return self._decoder().most_uncertain_span(X, width)

    def score(self, X: Any, y: Any = None) -> float:
        """Token accuracy of ``predict(X)`` against ``y``; unseen gold labels count as errors.

        ``X`` may be a :class:`sscrf.CompiledCorpus` compiled with its labels
        (``has_labels=True``) under the model's vocabulary, with ``y=None``:
        its stored labels are ``y``.
        """
        if isinstance(X, CompiledCorpus):
            y = labeled_input(X, y, "to score it")
        else:
            X, y = check_labeled(X, y, allow_empty_sentences=True)
        predicted = self.predict(X)
        total = sum(len(s) for s in y)
        if total == 0:
            raise SscrfError("score needs at least one token")
        correct = sum(p == g for ps, gs in zip(predicted, y) for p, g in zip(ps, gs))
        return correct / total

    # -- persistence --------------------------------------------------------

    def save(self, path: PathLike) -> None:
        """Write the model to ``path`` (JSON header + arrays, atomic, no pickle).

        A ``dense`` model (every attribute with every label) does not store
        its layout, and one whose weights are mostly zero (L1) stores the
        others by index (16 bytes each, against 8 for every weight).
        Files with every array, as earlier versions wrote them, still load.
        A model that would not load back (its labels, vocabulary, layout and
        ``coef_`` do not fit together, or a hyperparameter is invalid) raises
        SscrfError naming what is wrong, and nothing is written.
        """
        with self._lock("_state_lock"):  # not a model that a fit in another thread replaces
            self._save(path)

    def _save(self, path: PathLike) -> None:
        self._check_fitted()
        try:
            self._check_hyperparameters()
            if self.labels is not None and not set(check_label_list(self.labels)) <= set(
                    self.classes_):
                raise SscrfError("labels= names labels the model (classes_) does not have")
        except SscrfError as e:
            raise type(e)(f"{os.fsdecode(os.fspath(path))}: not saved: {e}") from None
        params = dict(self.get_params(), dev_scoring=saved_scoring(self.dev_scoring))
        write_model(path, params=params, classes=self.classes_,
                    extractor=self.extractor_, feature_set=self.feature_set_,
                    training=getattr(self, "training_", {}), layout=self.layout_,
                    coef=self.coef_, representations=getattr(self, "representations_", None))

    def bind_word_vectors(self, word_vectors: Any) -> CRF:
        """Give a loaded model the word vectors it was trained with
        (:class:`~sscrf.representations.WordVectors`, ``word_vectors=``), which
        must have the recorded setting and checksum; returns self."""
        self._check_fitted()
        self.extractor_.bind_word_vectors(word_vectors)
        self.word_vectors = word_vectors
        return self

    @classmethod
    def load(cls, path: PathLike) -> CRF:
        """Read a model written by :meth:`save`, validating it.

        Raises
        ------
        SscrfError
            If the file is not a valid sscrf model.
        """
        def new_model(saved: dict[str, Any], labels: Sequence[str]) -> CRF:
            model = cls(**{k: v for k, v in saved.items() if k in cls._param_names()})
            model._check_hyperparameters()
            if model.labels is not None and not (isinstance(model.labels, list)
                                                 and set(model.labels) <= set(labels)):
                raise SscrfError("the labels= setting names labels the model does not have")
            return model

        return read_model(path, new_model)

    # -- internals ----------------------------------------------------------

    def _check_fitted(self) -> None:
        if not hasattr(self, "coef_"):
            raise SscrfError("this CRF is not fitted yet; call fit or load a model")

    @property
    def layout_(self) -> ParameterLayout:
        """The :class:`sscrf.layout.ParameterLayout` of ``coef_`` (fitted models only)."""
        if not hasattr(self, "row_ptr_"):
            self._check_fitted()
        cached = getattr(self, "_layout_cache", None)
        key = (id(self.row_ptr_), id(self.label_ids_))
        if cached is None or cached[0] != key:
            self._layout_cache = (key, ParameterLayout(self.row_ptr_, self.label_ids_,
                                                       len(self.classes_)))
        return self._layout_cache[1]

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        for name in ("_layout_cache", "_fit_lock", "_state_lock"):
            state.pop(name, None)
        return state


def _same_value(value: Any, default: Any) -> bool:
    """Whether a hyperparameter is at its default (an array never is)."""
    if value is default:
        return True
    try:
        return bool(value == default)
    except (TypeError, ValueError):  # an array compared elementwise
        return False
