"""The CRF estimator: scikit-learn style hyperparameters, fit, predict, save.

A model is an attribute vocabulary (:mod:`sscrf.features`), a label list, a
layout saying which labels each attribute may score, and one flat parameter
vector ``coef_ = [W entries | T (S×S) | start (S) | end (S)]`` that the C++
core reads directly.
"""

import copy
import inspect
import numbers
import os
import sys
import time
import warnings

import numpy as np

from . import _core, serialization
from . import constraints as _constraints
from . import partial as _partial
from .corpus import compile_corpus
from .errors import SscrfError
from .features import FeatureExtractor, default_templates
from .inputs import (MAX_THREADS, check_labeled, check_sample_weight, check_sentences,
                     check_threads, check_unlabeled, encode_labels, is_integer, is_number)
from .layout import SLICE_TOKENS, ParameterLayout
from .objectives import OBJECTIVES, Objective
from .optimize import STOP_CALLBACK, STOP_INTERRUPTED
from .trainer import minimize

FEATURE_SETS = ("auto", "observed", "dense")
_MODEL_KIND = "sscrf.CRF"
_STOPPED = (STOP_INTERRUPTED, STOP_CALLBACK)  # stop reasons that end a fit


class CRF:
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
        GIL); ``fit`` replaces the model's attributes one by one, so fit a
        new model rather than refit one that other threads are using.
    feature_set : {"auto", "observed", "dense"}
        ``observed`` keeps the attribute-label pairs seen in labeled data
        (CRFsuite's default); ``dense`` keeps every pair; ``auto`` is
        ``observed`` for supervised training.
    labels : list of str or None
        The label set; None takes every label seen in ``fit``.
    templates : None, "default", template text or list of lines
        None: tokens are feature dicts. Otherwise tokens are lists of column
        strings and attributes come from CRF++-style templates; ``"default"``
        uses :func:`sscrf.features.default_templates` for the number of
        columns of the training data.
    min_freq : int
        Attributes seen at fewer tokens are dropped.
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
        (``bench/entropy_weight_ewt.py``). The model weighs every attribute
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
        Show training progress on stderr.

    Attributes
    ----------
    classes_ : list of str
        The labels, in the model's internal order.
    coef_ : ndarray
        The flat parameter vector.
    training_ : dict
        Iterations, evaluations, final loss, stop reason, seconds, loss history.
        After a fit in two stages (a supervised warm start, then the
        semi-supervised objective) these are the second stage's, and
        ``training_["stages"]["supervised"]`` holds the first stage's.
        Saved models keep all but the seconds and the history (a loaded
        model's file bytes depend on the data and settings only).
    """

    def __init__(self, c1=0.0, c2=1.0, max_iterations=100, epsilon=1e-5, period=10, delta=1e-5,
                 n_threads=None, feature_set="auto", labels=None, templates=None, min_freq=1,
                 entropy_weight=0.0, entropy_method="fast", ge_weight=0.0, ge_penalty="kl",
                 verbose=True):
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

    # -- scikit-learn protocol ----------------------------------------------

    @classmethod
    def _param_names(cls):
        return [p for p in inspect.signature(cls.__init__).parameters if p != "self"]

    def get_params(self, deep=True):
        """Hyperparameters as a dict (scikit-learn protocol)."""
        return {name: getattr(self, name) for name in self._param_names()}

    def set_params(self, **params):
        """Set hyperparameters (scikit-learn protocol); returns self."""
        valid = set(self._param_names())
        for name, value in params.items():
            if name not in valid:
                raise ValueError(f"invalid parameter {name!r} for CRF; valid: {sorted(valid)}")
            setattr(self, name, value)
        return self

    def __sklearn_tags__(self):
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

    def __repr__(self):
        defaults = {p.name: p.default for p in inspect.signature(CRF.__init__).parameters.values()
                    if p.name != "self"}
        changed = [f"{k}={v!r}" for k, v in self.get_params().items()
                   if not _same_value(v, defaults[k])]
        return f"CRF({', '.join(changed)})"

    # -- training -----------------------------------------------------------

    def fit(self, X, y, X_unlabeled=None, init=None, callback=None, sample_weight=None,
            checkpoint=None, checkpoint_every=10, constraints=None):
        """Train on labeled sentences, and on unlabeled ones through the semi-supervised terms.

        Parameters
        ----------
        X : list of sentences
            A sentence is a list of tokens: feature dicts, or lists of column
            strings when the model has templates. May be empty when unlabeled
            data and a semi-supervised term are given (then ``labels=``, or
            for GE the constraints, name the labels).
        y : list
            Per sentence, one entry per token: a label, a set (``set``,
            ``frozenset`` or ``tuple``) of acceptable labels, or ``None``
            (not annotated); or a :class:`sscrf.partial.Alternatives` of
            whole acceptable labelings. Completely labeled sentences go to
            the likelihood, the others to the marginalised likelihood
            ``−log P(Y_L | x)`` (Tsuboi et al. 2008), which starts from the
            optimum on the complete sentences when there are some.
        X_unlabeled : list of sentences or None
            Data for the ``entropy`` term (``entropy_weight > 0``) and the
            ``ge`` term (``constraints``). Its attributes join the
            vocabulary, and with it the model uses the ``dense`` feature set.
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
            ``fit(..., init=checkpoint)``. Ctrl-C during fit keeps the best
            parameters so far on the model, with a warning (during the
            supervised warm start: its parameters, and the second stage does
            not run).
        constraints : dict or None
            Labeled features for the generalized-expectation term
            (``ge_weight > 0``, needs ``X_unlabeled``): ``{attribute:
            {label: probability}}``, attributes named as the feature
            extractor names them (``w[0]=john``, ``U02:john``), targets
            summing to 1 over known labels (see :mod:`sscrf.constraints`).
            Without labeled data and ``labels=``, the label set is the labels
            the constraints name; with labeled data but no ``labels=``, it is
            the labels of ``y`` and of the constraints. A constraint whose
            attribute is not in the vocabulary (it never occurs in ``X`` or
            ``X_unlabeled``, or ``min_freq`` cut it) or never fires in
            ``X_unlabeled`` is dropped with a ``UserWarning``; the
            constraints kept are ``constraints_``.

        Returns
        -------
        self
        """
        started = time.perf_counter()
        self._check_hyperparameters()
        X, y = check_labeled(X, y, allow_empty_corpus=True, partial=True)
        unlabeled = None if X_unlabeled is None else check_unlabeled(X_unlabeled)
        use_entropy = self.entropy_weight > 0 and bool(unlabeled)
        use_ge = constraints is not None
        if not X and not unlabeled:
            raise SscrfError("the training data is empty")
        # A weight with nothing to act on would train a supervised model unasked
        # (an empty X_unlabeled is data that happens to be empty: supervised).
        if self.entropy_weight > 0 and X_unlabeled is None:
            raise SscrfError(f"entropy_weight={self.entropy_weight!r} needs unlabeled data: give "
                             "X_unlabeled, or set entropy_weight=0 for a supervised fit")
        if self.ge_weight > 0 and not use_ge:
            raise SscrfError(f"ge_weight={self.ge_weight!r} needs constraints (labeled features) "
                             "and X_unlabeled: give constraints=, or set ge_weight=0")
        if use_ge:
            if self.ge_weight <= 0:
                raise SscrfError("constraints are given but ge_weight is 0; set ge_weight > 0")
            if not unlabeled:
                raise SscrfError("constraints need unlabeled data: give X_unlabeled")
            constraints = _constraints.check_constraints(constraints, self.labels)
            if not constraints:
                raise SscrfError("constraints is empty")
        if unlabeled and not (use_entropy or use_ge):
            raise SscrfError("X_unlabeled is given but no term uses it; set entropy_weight > 0, "
                             "or ge_weight > 0 and give constraints")
        weights = check_sample_weight(sample_weight, len(X))
        if isinstance(init, (str, os.PathLike)):
            init = CRF.load(init)
        elif init is self:
            init = copy.copy(self)  # fitting replaces the attributes init is read from
        label_source = _partial.label_view(y, self.labels)
        if use_ge and self.labels is None:  # labels named by constraints join the label set
            named = _constraints.constraint_labels(constraints)
            seen = {label for seq in label_source for label in seq}
            only_named = [label for label in named if label not in seen]
            if seen and only_named:  # with labeled data, most likely a misspelling
                shown = ", ".join(map(repr, only_named[:5]))
                warnings.warn(f"label(s) {shown} are named by the constraints but by no labeled "
                              "token (misspelt?); each becomes a label of its own (give the "
                              "label set, labels= or --labels, to refuse unknown labels)",
                              UserWarning, stacklevel=2)
            label_source = list(label_source) + [named]
        self.classes_ = self._label_set(label_source)
        if len(self.classes_) == 1:  # e.g. a label column of '_' only, or the wrong column
            warnings.warn(f"the label set is the one label {self.classes_[0]!r}: the model will "
                          "give it to every token", UserWarning, stacklevel=2)
        label_index = {label: i for i, label in enumerate(self.classes_)}
        templates = self.templates
        if isinstance(templates, str) and templates.strip() == "default":
            templates = default_templates(_n_columns(X or unlabeled))
        self.extractor_ = FeatureExtractor(templates, self.min_freq)
        corpora = [X] + ([unlabeled] if use_entropy or use_ge else [])
        features = self.extractor_.fit_transform(*corpora)
        token_labels = encode_labels(y, label_index)
        self.feature_set_ = self.feature_set
        if self.feature_set == "auto":
            self.feature_set_ = "dense" if use_entropy or use_ge else "observed"
        elif self.feature_set == "observed" and (use_entropy or use_ge):
            raise SscrfError("feature_set='observed' does not go with the "
                             f"{'ge' if use_ge and not use_entropy else 'entropy'} term: terms "
                             "on unlabeled data train every attribute with every label; use "
                             "'dense' or 'auto'")
        parameters = ParameterLayout.for_feature_set(features[0], token_labels,
                                                     len(self.classes_), self.feature_set_)
        self.row_ptr_, self.label_ids_ = parameters.row_ptr, parameters.label_ids
        layout = self._layout()
        if self.verbose:  # before the first evaluation: what the model will hold
            print(f"features: {len(self.extractor_.attributes_):,} attributes, "
                  f"{len(self.classes_)} labels, {layout.n_parameters:,} parameters "
                  f"({self.feature_set_} feature set), {time.perf_counter() - started:.1f} s",
                  file=sys.stderr)
        n_threads = self._threads()
        supervised, partial_terms = [], []
        if X:  # complete sentences: likelihood; sets, None, alternatives: marginalised
            supervised, partial_terms = _partial.labeled_terms(
                features[0], y, label_index, weights, layout, n_threads, token_labels)
        terms = list(supervised) + partial_terms
        unlabeled_corpus = (compile_corpus(features[1], n_labels=layout.n_labels)
                            if use_entropy or use_ge else None)
        if use_entropy:
            terms.append(OBJECTIVES["entropy"](unlabeled_corpus, layout, n_threads,
                                               weight=self.entropy_weight,
                                               method=self.entropy_method))
        if use_ge:
            constraint_of_attribute, targets, self.constraints_ = _ge_constraints(
                constraints, self.extractor_, features[1], self.classes_)
            terms.append(OBJECTIVES["ge"](unlabeled_corpus, layout, n_threads,
                                          weight=self.ge_weight,
                                          constraint_of_attribute=constraint_of_attribute,
                                          targets=targets, penalty=self.ge_penalty))
        # The terms hold compiled corpora; the numpy matrices are not needed
        # any more and would otherwise stay alive through the optimiser.
        del features, unlabeled_corpus
        theta0 = np.zeros(layout.n_parameters)
        if init is not None:
            self._warm_start(init, theta0)
        if checkpoint is not None:
            callback = self._checkpointing(callback, checkpoint, checkpoint_every)
        options = dict(max_iterations=self.max_iterations, epsilon=self.epsilon,
                       period=self.period, delta=self.delta, callback=callback,
                       verbose=self.verbose, c1=self.c1, n_threads=n_threads)
        stages = {}
        result = None
        if len(terms) > len(supervised) and supervised and init is None:
            # Non-concave objective: start from the supervised optimum.
            if self.verbose:
                print("stage 1/2: supervised warm start", file=sys.stderr)
            warm = minimize(Objective(supervised, self.c2, n_threads, reuse_gradient=True),
                            theta0, **options)
            stages["supervised"] = _training_record(warm)
            theta0 = warm.theta
            if warm.stop_reason in _STOPPED:
                result = warm  # Ctrl-C or the callback ended training: no second stage
            else:
                if self.verbose:
                    added = ", ".join(dict.fromkeys(t.name for t in terms[len(supervised):]))
                    pull = ""
                    if use_entropy:  # the term's weight grows with the unlabeled data
                        ratio = (self.entropy_weight * sum(map(len, unlabeled))
                                 / sum(map(len, X)))
                        pull = f" (entropy_weight x unlabeled tokens = {ratio:.3g} x the labeled)"
                    print(f"stage 2/2: adding the {added} term{'s' if ',' in added else ''}{pull}",
                          file=sys.stderr)
                if callback is not None:  # iterations count on across the stages
                    options["callback"] = _shifted_callback(callback, warm.n_iterations)
        if result is None:
            result = minimize(Objective(terms, self.c2, n_threads, reuse_gradient=True), theta0,
                              **options)
        self.coef_ = result.theta
        self.training_ = _training_record(result)
        if stages:
            self.training_["stages"] = stages
        return self

    def _checkpointing(self, callback, path, every):
        if isinstance(every, bool) or not isinstance(every, (int, np.integer)) or every < 1:
            raise SscrfError(f"checkpoint_every must be a positive integer, not {every!r}")
        serialization.check_writable(path)

        def save_then_call(iteration, loss, theta):
            if iteration % every == 0:
                self.coef_ = np.array(theta, dtype=np.float64)
                self.training_ = {"iterations": iteration, "loss": loss,
                                  "stop_reason": "checkpoint"}
                self.save(path)
            return callback(iteration, loss, theta) if callback is not None else False

        return save_then_call

    def _check_hyperparameters(self):
        for name in ("c1", "c2", "epsilon", "delta", "entropy_weight", "ge_weight"):
            value = getattr(self, name)
            if not (is_number(value) and np.isfinite(value) and value >= 0):
                raise SscrfError(f"{name} must be a finite number ≥ 0, not {value!r}")
        for name, least in (("max_iterations", 0), ("period", 1), ("min_freq", 1)):
            value = getattr(self, name)
            if not (is_integer(value) and value >= least):
                raise SscrfError(f"{name} must be an integer ≥ {least}, not {value!r}")
        if self.entropy_method not in ("fast", "jiao"):
            raise SscrfError(f"entropy_method must be 'fast' or 'jiao', not {self.entropy_method!r}")
        if self.ge_penalty not in ("kl", "l2"):
            raise SscrfError(f"ge_penalty must be 'kl' or 'l2', not {self.ge_penalty!r}")
        if self.feature_set not in FEATURE_SETS:
            raise SscrfError(f"feature_set must be one of {FEATURE_SETS}, not {self.feature_set!r}")
        self._threads()

    def _threads(self):
        return check_threads(self.n_threads)

    def _label_set(self, y):
        if self.labels is not None:
            if isinstance(self.labels, (str, bytes)):
                raise SscrfError("labels= must be a list of label strings, not one string")
            labels = list(self.labels)
            if len(set(labels)) != len(labels) or not all(isinstance(l, str) for l in labels):
                raise SscrfError("labels must be distinct strings")
            known = set(labels)
            for s, seq in enumerate(y):
                for t, label in enumerate(seq):
                    if label not in known:
                        raise SscrfError(f"sentence {s}, token {t}: label {label!r} is not in labels=")
            return labels
        labels = sorted({label for seq in y for label in seq})
        if not labels:
            raise SscrfError("no labels: without labeled data, give the label set with labels=")
        return labels

    def _warm_start(self, init, theta):
        init._check_fitted()
        new_index = self.extractor_.attribute_index()
        old_to_new_attr = np.array([new_index.get(a, -1) for a in init.extractor_.attributes_],
                                   dtype=np.int64)
        label_map = {label: i for i, label in enumerate(self.classes_)}
        old_to_new_label = np.array([label_map.get(l, -1) for l in init.classes_], dtype=np.int64)
        self.layout_.warm_start(theta, init.layout_, init.coef_, old_to_new_attr,
                                old_to_new_label)

    # -- inference ----------------------------------------------------------

    def predict(self, X, allowed=None):
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
        self._check_fitted()
        corpus, offsets, features, inexact = self._decoding_inputs(X, allowed)
        labels, _ = _core.viterbi_corpus(corpus, self._layout(), self.coef_, self._threads())
        for s, (ids, lp) in _partial.exact_alternatives(self, features, inexact).items():
            labels[offsets[s]:offsets[s + 1]] = ids[int(np.argmax(lp))]
        names = np.asarray(self.classes_, dtype=object)[labels]
        return [list(names[offsets[s]:offsets[s + 1]]) for s in range(len(offsets) - 1)]

    def predict_nbest(self, X, k, allowed=None):
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
        self._check_fitted()
        self._threads()  # validated like every other method, though n-best runs serially
        from .nbest import nbest_from_model

        if allowed is not None:
            return _partial.constrained_nbest(self, X, k, allowed)
        return nbest_from_model(self, X, k)

    def predict_single(self, x):
        """Viterbi labeling of one sentence (a list of tokens)."""
        return self.predict([x])[0]

    def predict_marginals(self, X, allowed=None):
        """Per token, a dict label → marginal probability (sklearn-crfsuite's shape).

        With ``allowed`` (as in :meth:`predict`), the marginals of
        ``p(y | x, y allowed)``.
        """
        self._check_fitted()
        corpus, offsets, features, inexact = self._decoding_inputs(X, allowed)
        node, _ = _core.marginals_corpus(corpus, self._layout(), self.coef_, self._threads())
        for s, (ids, lp) in _partial.exact_alternatives(self, features, inexact).items():
            q = np.exp(lp - lp.max())
            rows = np.zeros((ids.shape[1], len(self.classes_)))
            for k in range(len(ids)):
                rows[np.arange(ids.shape[1]), ids[k]] += q[k] / q.sum()
            node[offsets[s]:offsets[s + 1]] = rows
        classes = self.classes_
        out = []
        for s in range(len(offsets) - 1):
            rows = node[offsets[s]:offsets[s + 1]].tolist()
            out.append([dict(zip(classes, row)) for row in rows])
        return out

    def predict_marginals_single(self, x):
        """Per token of one sentence, a dict label → marginal probability."""
        return self.predict_marginals([x])[0]

    def predict_marginals_array(self, X):
        """Node marginals as arrays: a list of (n_s, S) ndarrays, columns in ``classes_`` order."""
        self._check_fitted()
        corpus, offsets = self._compile_inputs(X)
        node, _ = _core.marginals_corpus(corpus, self._layout(), self.coef_, self._threads())
        return [node[offsets[s]:offsets[s + 1]] for s in range(len(offsets) - 1)]

    def sequence_log_probability(self, X, y=None):
        """log p(y | x) of given labelings, or of the Viterbi ones when ``y`` is None.

        Returns
        -------
        ndarray (n_sentences,)
        """
        self._check_fitted()
        if y is None:
            # the Viterbi labels as ids, on the features extracted once (as
            # predict() finds them; active learning's least_confidence)
            features = self.extractor_.transform(check_sentences(X, "X"))
            labels, _ = _core.viterbi_corpus(compile_corpus(features), self._layout(), self.coef_,
                                             self._threads())
            corpus = compile_corpus(features, labels=labels)
            return _core.log_probability_corpus(corpus, self._layout(), self.coef_,
                                                self._threads())
        X, y = check_labeled(X, y, allow_empty_sentences=True)
        label_index = {label: i for i, label in enumerate(self.classes_)}
        features = self.extractor_.transform(X)
        token_labels = encode_labels(y, label_index, unknown="error")
        corpus = compile_corpus(features, labels=token_labels)
        return _core.log_probability_corpus(corpus, self._layout(), self.coef_, self._threads())

    # -- uncertainty (for active learning) ------------------------------------

    def _entropies(self, X):
        self._check_fitted()
        corpus, offsets = self._compile_inputs(X)
        seq, token, transition = _core.entropy_corpus(corpus, self._layout(), self.coef_,
                                                      self._threads())
        return seq, token, transition, offsets

    def sequence_entropy(self, X):
        """Exact H(Y | x) of each sentence (0 for an empty one).

        Returns
        -------
        ndarray (n_sentences,)
        """
        return self._entropies(X)[0]

    def token_entropy(self, X):
        """Per-token marginal entropies H(Y_t | x).

        Returns
        -------
        list of ndarray (n_s,)
        """
        _, token, _, offsets = self._entropies(X)
        return [token[offsets[s]:offsets[s + 1]] for s in range(len(offsets) - 1)]

    def most_uncertain_span(self, X, width):
        """Per sentence, the span of ``width`` tokens whose labels are most uncertain.

        The entropy of the posterior over ``y[begin:stop]`` (Tsuboi et al.
        2008 §5.1, computed as ``H(Y_begin) + Σ H(Y_t | Y_{t-1})``); a
        sentence shorter than ``width`` gives its whole length, the first
        span wins ties.

        Returns
        -------
        list of (begin, stop, entropy)
        """
        if isinstance(width, bool) or not isinstance(width, (int, np.integer)) or width < 1:
            raise SscrfError(f"width must be a positive integer, not {width!r}")
        from .lattice import spans_from_lattices

        _, token, transition, offsets = self._entropies(X)
        out = []
        for s in range(len(offsets) - 1):
            a, b = offsets[s], offsets[s + 1]
            n = b - a
            if n == 0:
                out.append((0, 0, 0.0))
                continue
            w = min(int(width), n)
            spans = spans_from_lattices(token[a:b], transition[a:b], w)
            i = int(np.argmax(spans))
            out.append((i, i + w, float(spans[i])))
        return out

    def score(self, X, y):
        """Token accuracy of ``predict(X)`` against ``y``; unseen gold labels count as errors."""
        X, y = check_labeled(X, y, allow_empty_sentences=True)
        predicted = self.predict(X)
        total = sum(len(s) for s in y)
        if total == 0:
            raise SscrfError("score needs at least one token")
        correct = sum(p == g for ps, gs in zip(predicted, y) for p, g in zip(ps, gs))
        return correct / total

    # -- introspection (sklearn-crfsuite names) -------------------------------

    @property
    def attributes_(self):
        """The attribute names of the model's vocabulary, in id order.

        A feature dict's string value ``{"word": "the"}`` is the attribute
        ``word=the`` (python-crfsuite writes ``word:the``); a number or True
        is the attribute named by its key.
        """
        self._check_fitted()
        return list(self.extractor_.attributes_)

    @property
    def state_features_(self):
        """dict (attribute, label) → weight, non-zero weights only."""
        self._check_fitted()
        attrs = self.layout_.attribute_of_pairs()
        w = self.layout_.split(self.coef_)[0]
        names, classes = self.extractor_.attributes_, self.classes_
        return {(names[a], classes[l]): float(v)
                for a, l, v in zip(attrs.tolist(), self.label_ids_.tolist(), w.tolist()) if v != 0.0}

    @property
    def transition_features_(self):
        """dict (previous label, next label) → weight."""
        self._check_fitted()
        S = len(self.classes_)
        T = self.transitions_
        return {(self.classes_[a], self.classes_[b]): float(T[a, b])
                for a in range(S) for b in range(S)}

    @property
    def transitions_(self):
        """(S, S) transition weights, [previous, next]."""
        self._check_fitted()
        return self.layout_.split(self.coef_)[1]

    @property
    def start_weights_(self):
        """(S,) weights of each label at the first token."""
        self._check_fitted()
        return self.layout_.split(self.coef_)[2]

    @property
    def end_weights_(self):
        """(S,) weights of each label at the last token."""
        self._check_fitted()
        return self.layout_.split(self.coef_)[3]

    @property
    def n_active_features_(self):
        """Number of non-zero state weights (what L1 prunes)."""
        self._check_fitted()
        return int(np.count_nonzero(self.layout_.split(self.coef_)[0]))

    @property
    def n_parameters_(self):
        """Length of ``coef_``."""
        self._check_fitted()
        return len(self.coef_)

    # -- persistence --------------------------------------------------------

    def save(self, path):
        """Write the model to ``path`` (JSON header + arrays, atomic, no pickle).

        A ``dense`` model (every attribute with every label) does not store
        its layout, and one whose weights are mostly zero (L1) stores the
        others by index: 57 instead of 86 MB for 6.4M dense parameters.
        Files with every array, as earlier versions wrote them, still load.
        """
        self._check_fitted()
        # templates are restored from the extractor; numpy scalars as Python ones
        params = {k: _plain(v) for k, v in self.get_params().items() if k != "templates"}
        meta = {
            "kind": _MODEL_KIND,
            "labels": list(self.classes_),
            "features": self.extractor_.to_state(),
            "params": params,
            "feature_set": self.feature_set_,
            "training": _saved_training_record(getattr(self, "training_", {})),
        }
        arrays = {}
        if self.layout_.is_every_pair:
            meta["layout"] = "every pair"  # rebuilt on load: 4 bytes per weight saved
        else:
            arrays["row_ptr"] = self.row_ptr_.astype(np.int64)
            arrays["label_ids"] = self.label_ids_.astype(np.int32)
        coef = self.coef_.astype(np.float64)
        # Weights that are not +0.0 bit for bit (an L1 model's few), by index
        # and value when they are under a third: 16 bytes each against 8 for
        # every weight.
        nonzero = np.flatnonzero(coef.view(np.int64))
        if 3 * len(nonzero) < len(coef):
            meta["n_weights"] = len(coef)
            arrays["coef_index"] = nonzero.astype(np.int64)
            arrays["coef_values"] = coef[nonzero]
        else:
            arrays["coef"] = coef
        serialization.save(path, meta, arrays)

    @classmethod
    def load(cls, path):
        """Read a model written by :meth:`save`, validating it.

        Raises
        ------
        SscrfError
            If the file is not a valid sscrf model.
        """
        meta, arrays = serialization.load(path)
        try:
            if meta.get("kind") != _MODEL_KIND:
                raise SscrfError("not a CRF model")
            labels = meta["labels"]
            if not (isinstance(labels, list) and labels and all(isinstance(l, str) for l in labels)
                    and len(set(labels)) == len(labels)):
                raise SscrfError("bad label list")
            params = {k: v for k, v in meta["params"].items() if k in cls._param_names()}
            model = cls(**params)
            model._check_hyperparameters()
            if model.labels is not None and not (isinstance(model.labels, list)
                                                 and set(model.labels) <= set(labels)):
                raise SscrfError("the labels= setting names labels the model does not have")
            model.extractor_ = FeatureExtractor.from_state(meta["features"])
            model.templates = (None if model.extractor_.templates is None
                               else list(model.extractor_.templates.lines))
            model.classes_ = labels
            model.feature_set_ = meta["feature_set"]
            model.training_ = dict(meta.get("training", {}))
            n_attr = len(model.extractor_.attributes_ or [])
            S = len(labels)
            model.row_ptr_, model.label_ids_, model.coef_ = _stored_weights(meta, arrays,
                                                                            n_attr, S)
            if model.row_ptr_.ndim != 1 or len(model.row_ptr_) != n_attr + 1:
                raise SscrfError("array sizes do not match the vocabulary and labels")
            if not np.all(np.isfinite(model.coef_)):
                raise SscrfError("non-finite weights")
            if not np.all(np.abs(model.coef_) <= _core.MAX_SCORE):
                raise SscrfError(f"weights above {_core.MAX_SCORE:g}, which the core refuses")
            model._layout()  # validates row_ptr and label ids
        except SscrfError as e:
            raise SscrfError(f"{os.fspath(path)}: invalid model file: {e}") from None
        except MemoryError:
            raise SscrfError(f"{os.fspath(path)}: not enough memory to load this model "
                             f"({_n_weights(meta, arrays):,} weights)") from None
        except (KeyError, TypeError, ValueError, AttributeError) as e:
            raise SscrfError(f"{os.fspath(path)}: invalid model file: {e!r}") from None
        return model

    # -- internals ----------------------------------------------------------

    def _check_fitted(self):
        if not hasattr(self, "coef_"):
            raise SscrfError("this CRF is not fitted yet; call fit or load a model")

    @property
    def layout_(self):
        """The :class:`sscrf.layout.ParameterLayout` of ``coef_`` (fitted models only)."""
        if not hasattr(self, "row_ptr_"):
            self._check_fitted()
        cached = getattr(self, "_layout_cache", None)
        key = (id(self.row_ptr_), id(self.label_ids_))
        if cached is None or cached[0] != key:
            self._layout_cache = (key, ParameterLayout(self.row_ptr_, self.label_ids_,
                                                       len(self.classes_)))
        return self._layout_cache[1]

    def _layout(self):
        """The compiled layout the kernels read."""
        return self.layout_.core

    def _decoding_inputs(self, X, allowed):
        """Corpus and offsets to decode, with the masks of ``allowed``; also the
        features and the sentences whose alternatives masks cannot represent
        (decoded exactly by :func:`sscrf.partial.exact_alternatives`)."""
        if allowed is None:
            corpus, offsets = self._compile_inputs(X)
            return corpus, offsets, None, {}
        corpus, features, _, inexact = _partial.constrained_inputs(self, X, allowed)
        return corpus, features.offsets, features, inexact

    def _compile_inputs(self, X):
        X = check_sentences(X, "X")
        features = self.extractor_.transform(X)
        return compile_corpus(features), features.offsets

    def __getstate__(self):
        state = dict(self.__dict__)
        state.pop("_layout_cache", None)
        return state


# -- helpers ------------------------------------------------------------------


def _shifted_callback(callback, offset):
    """``callback`` with iteration numbers that go on from ``offset``."""
    return lambda iteration, loss, theta: callback(iteration + offset, loss, theta)




def _same_value(value, default):
    """Whether a hyperparameter is at its default (an array never is)."""
    if value is default:
        return True
    try:
        return bool(value == default)
    except (TypeError, ValueError):  # an array compared elementwise
        return False


def _plain(value):
    """A hyperparameter as JSON can hold it: numpy scalars and arrays as Python values."""
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, (list, tuple, np.ndarray)):
        return [_plain(v) for v in value]
    return value


def _saved_training_record(record):
    """``training_`` as saved: without the loss history and wall-clock seconds,
    so that the same data, settings and thread count give the same file bytes."""
    saved = {k: v for k, v in record.items() if k not in ("history", "seconds")}
    if "stages" in saved:
        saved["stages"] = {name: _saved_training_record(stage)
                           for name, stage in saved["stages"].items()}
    return saved


def _training_record(result):
    return {"iterations": result.n_iterations, "evaluations": result.n_evaluations,
            "loss": result.loss, "stop_reason": result.stop_reason,
            "seconds": result.seconds, "history": list(result.history)}


def _ge_constraints(constraints, extractor, unlabeled, classes):
    """Constraint map (A,), targets (M, S) and the constraints kept, for the ``ge`` term.

    Drops, with a warning, constraints whose attribute is not in the
    vocabulary or never fires in the unlabeled data.
    """
    index = extractor.attribute_index()
    fires = np.bincount(unlabeled.indices, minlength=unlabeled.n_attributes) > 0
    absent = [a for a in constraints if a not in index]
    silent = [a for a in constraints if a in index and not fires[index[a]]]
    for what, dropped in (("not in the vocabulary (never in the training data, or cut by "
                           "min_freq)", absent), ("never present in X_unlabeled", silent)):
        if dropped:
            shown = ", ".join(map(repr, dropped[:10])) + (" ..." if len(dropped) > 10 else "")
            warnings.warn(f"{len(dropped)} constraint attribute(s) {what}; dropped: {shown}",
                          UserWarning, stacklevel=3)
    kept = {a: d for a, d in constraints.items() if a in index and fires[index[a]]}
    if not kept:
        examples = ", ".join(map(repr, extractor.attributes_[:3]))
        raise SscrfError("no constraint attribute fires in X_unlabeled (the unlabeled "
                         "sentences); nothing for the ge term. Attributes are named as the "
                         f"features name them, e.g. {examples}")
    attributes, targets = _constraints.target_matrix(kept, classes)
    constraint_of_attribute = np.full(unlabeled.n_attributes, -1, dtype=np.int64)
    constraint_of_attribute[[index[a] for a in attributes]] = np.arange(len(attributes))
    return constraint_of_attribute, targets, kept





def _n_columns(X):
    """Columns of the first token (1 without tokens), for templates="default"."""
    for s, sentence in enumerate(X):
        for t, token in enumerate(sentence):
            if isinstance(token, (list, tuple)) and len(token) == 0:
                raise SscrfError(f"sentence {s}, token {t}: templates='default' needs tokens "
                                 "of at least one column, not an empty list")
            return len(token)
    return 1






def _n_weights(meta, arrays):
    """The weight count a model file gives, for messages."""
    if "coef" in arrays:
        return arrays["coef"].size
    n = meta.get("n_weights")
    return n if is_integer(n) else 0


def _stored_weights(meta, arrays, n_attr, S):
    """``row_ptr``, ``label_ids`` and the weights of a model file: every array
    (as before compact files), or a layout of every pair (``dense``) rebuilt
    and / or the non-zero weights by index. The sizes are checked before
    anything is allocated; a file holds one form of each, not two."""
    every_pair = meta.get("layout") == "every pair"
    if "layout" in meta and not every_pair:
        raise SscrfError(f"unknown layout {meta['layout']!r}")
    if every_pair == ("row_ptr" in arrays or "label_ids" in arrays):
        raise SscrfError("the layout must be stored as arrays or named 'every pair', "
                         "one of the two")
    listed = "coef_index" in arrays or "coef_values" in arrays or "n_weights" in meta
    if listed == ("coef" in arrays):
        raise SscrfError("the weights must be stored as 'coef' or as 'coef_index' and "
                         "'coef_values' with 'n_weights', one of the two")
    n_pairs = n_attr * S if every_pair else len(arrays["label_ids"])
    expected = n_pairs + S * S + 2 * S
    if listed:
        n = meta.get("n_weights")
        if not is_integer(n) or n != expected:
            raise SscrfError(f"weight count {n!r}, but the layout and labels give {expected}")
    elif arrays["coef"].ndim != 1 or len(arrays["coef"]) != expected:
        raise SscrfError("array sizes do not match the vocabulary and labels")
    if every_pair:
        every = ParameterLayout.every_pair(n_attr, S)
        row_ptr, label_ids = every.row_ptr, every.label_ids
    else:
        row_ptr, label_ids = arrays["row_ptr"], arrays["label_ids"]
    if not listed:
        return row_ptr, label_ids, arrays["coef"]
    return row_ptr, label_ids, _weights_from_nonzero(expected, arrays["coef_index"],
                                                     arrays["coef_values"])


def _weights_from_nonzero(n, index, values):
    """The ``n`` weights of a model file that lists its non-zero ones."""
    if (index.ndim != 1 or values.ndim != 1 or len(index) != len(values)
            or index.dtype != np.int64 or values.dtype != np.float64):
        raise SscrfError("coef_index and coef_values must be 1-D int64 and float64 arrays "
                         "of one length")
    if len(index) and not (index[0] >= 0 and index[-1] < n and (np.diff(index) > 0).all()):
        raise SscrfError("coef_index must increase strictly within the weight count")
    coef = np.zeros(n)
    coef[index] = values
    return coef


# Old private names that tests outside this module's brief still import; use
# sscrf.corpus.compile_corpus, sscrf.inputs.encode_labels and
# sscrf.layout.ParameterLayout.for_feature_set instead.
_compile = compile_corpus
_encode_labels = encode_labels


_LAYOUT_SLICE_TOKENS = SLICE_TOKENS


def _layout_arrays(features, token_labels, S, feature_set):
    layout = ParameterLayout.for_feature_set(features, token_labels, S, feature_set,
                                             _LAYOUT_SLICE_TOKENS)
    return layout.row_ptr, layout.label_ids

