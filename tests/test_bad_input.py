"""Bad input through every public entry point, table by table.

Each row names an entry point, a bad input, and a regular expression the
``ValueError`` (``SscrfError`` is one) must match: a word naming the problem
(the argument, the sentence and token, the file and line). Valid edge cases
that must stay valid sit next to the bad ones.

What other files already pin is not repeated here: reader format errors
(test_io), feature-dict and template errors (test_features), lattice shapes,
NaN/inf and impossible masks (test_lattice, test_nbest, test_entropy), the
C++ corpus/layout/theta checks (test_objectives), fit's n_threads 0/-1/1.5,
empty training data and sentences, ragged X/y and NaN features at fit and
predict (test_model), model-file damage (test_serialization), checkpoints
(test_checkpoint), CLI usage errors (test_cli), partial annotations
(test_partial) and GE (test_ge). This file adds the same families of bad
input at the entry points those files do not reach, and the cases that
could take the interpreter down run in a subprocess whose exit status is
checked.
"""

import contextlib
import copy
import os
import re
import signal
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from sscrf import CRF, SscrfError, lattice
from sscrf import _core
from sscrf.cli import main
from sscrf.corpus import compile_corpus
from sscrf.features import FeatureExtractor
from sscrf.io import read_conll, read_conllu
from sscrf.objectives import OBJECTIVES

#: A message that says the numbers left the float range (what a huge but
#: finite input must produce when it cannot give a finite, correct answer).
OVERFLOW = r"(?i)overflow|too large|huge|non-finite|infinite|out of (the float )?range"


class TimeLimitExceeded(BaseException):
    """Raised by :func:`time_limit`; a BaseException so that no ``except Exception`` eats it."""


@contextlib.contextmanager
def time_limit(seconds, what):
    """Fail the test (instead of hanging it) when the block runs longer than ``seconds``."""

    def on_alarm(signum, frame):
        raise TimeLimitExceeded(f"{what} took more than {seconds} s")

    previous = signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    except TimeLimitExceeded as e:
        pytest.fail(str(e))
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def run_python(code, timeout=120, env=None):
    """Run ``code`` in a fresh interpreter; (return code, stdout, stderr)."""
    env = dict(os.environ if env is None else env)
    env.setdefault("OPENBLAS_NUM_THREADS", "1")
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                          text=True, timeout=timeout, env=env)
    return proc.returncode, proc.stdout, proc.stderr


# ---------------------------------------------------------------------------
# Data and models
# ---------------------------------------------------------------------------

WORDS = {"A": ["the", "a"], "B": ["dog", "cat", "man"], "C": ["runs", "sees"]}
SHAPES = [["A", "B", "C"], ["B", "C"], ["A", "B", "C", "A", "B"], ["C"]]


def token(word, i):
    return {"w": word, "suf": word[-2:], "x": 1.0 + 0.5 * (i % 2)}


def make_data(n=24, seed=0):
    rng = np.random.default_rng(seed)
    X, y = [], []
    for _ in range(n):
        shape = SHAPES[int(rng.integers(len(SHAPES)))]
        X.append([token(str(rng.choice(WORDS[label])), i) for i, label in enumerate(shape)])
        y.append(list(shape))
    return X, y


@pytest.fixture(scope="module")
def data():
    return make_data()


FIT_ARGUMENTS = ("X_unlabeled", "sample_weight", "init", "callback")


def fit(X, y, **params):
    """CRF(**params).fit(X, y, **fit arguments), small and quiet by default."""
    fit_args = {k: params.pop(k) for k in FIT_ARGUMENTS if k in params}
    params = {"c2": 0.1, "max_iterations": 15, "verbose": False, "n_threads": 1, **params}
    return CRF(**params).fit(X, y, **fit_args)


@pytest.fixture(scope="module")
def model(data):
    return fit(*data)


@pytest.fixture(scope="module")
def dense_model(data):
    return fit(*data, feature_set="dense")


def with_x_weights(m, top):
    """A copy of dense model ``m`` where attribute ``x`` weighs ``top`` … ``-top`` on the labels."""
    m = copy.copy(m)
    m.coef_ = m.coef_.copy()
    a = m.extractor_.attributes_.index("x")
    S = len(m.classes_)
    assert m.row_ptr_[a + 1] - m.row_ptr_[a] == S
    m.coef_[m.row_ptr_[a]:m.row_ptr_[a] + S] = np.linspace(top, -top, S)
    return m


def gold_like(X, label="A"):
    """A labeling shaped like X (for score), or X itself when X has no shape."""
    if isinstance(X, (str, dict)) or not hasattr(X, "__iter__"):
        return X
    return [[label] * len(s) if hasattr(s, "__len__") else [label] for s in X]


#: Every CRF method that reads sentences, as f(model, X).
INFERENCE = {
    "predict": lambda m, X: m.predict(X),
    "predict_marginals": lambda m, X: m.predict_marginals(X),
    "predict_nbest": lambda m, X: m.predict_nbest(X, 3),
    "sequence_log_probability": lambda m, X: m.sequence_log_probability(X),
    "sequence_log_probability_y": lambda m, X: m.sequence_log_probability(X, gold_like(X)),
    "sequence_entropy": lambda m, X: m.sequence_entropy(X),
    "token_entropy": lambda m, X: m.token_entropy(X),
    "most_uncertain_span": lambda m, X: m.most_uncertain_span(X, 2),
    "score": lambda m, X: m.score(X, gold_like(X)),
}


# ---------------------------------------------------------------------------
# CRF inference methods
# ---------------------------------------------------------------------------

BAD_X = {
    "None": (None, r"\bX must be a list"),
    "a string": ("the dog runs", r"\bX must be a list"),
    "a dict": ({"w": "dog"}, r"\bX must be a list"),
    "a 2-D array": (np.zeros((2, 3)), r"sentence 0\b"),
    "a sentence that is None": ([None], r"sentence 0\b"),
    "a token that is an int": ([[token("dog", 0), 3]], r"sentence 0, token 1\b"),
    "words as tokens for a dict model": ([["dog", "NN"]], r"sentence 0, token 0\b.*feature "
                                         r"dict or a list of attribute strings.*not str"),
    "a list token holding a number": ([[["w=dog", 3]]], r"sentence 0, token 0\b.*attribute "
                                      r"strings.*not int"),
    "NaN value": ([[token("the", 0), dict(token("dog", 1), x=float("nan"))]],
                  r"sentence 0, token 1\b.*\bx\b.*non-finite"),
    "-inf value": ([[], [dict(token("dog", 0), x=-np.inf)]],
                   r"sentence 1, token 0\b.*\bx\b.*non-finite"),
    "numpy float32 inf value": ([[dict(token("dog", 0), x=np.float32("inf"))]],
                                r"sentence 0, token 0\b.*\bx\b.*non-finite"),
    "complex value": ([[dict(token("dog", 0), x=1 + 2j)]],
                      r"sentence 0, token 0\b.*\bx\b.*complex"),
    "bytes value": ([[dict(token("dog", 0), w=b"dog")]], r"sentence 0, token 0\b.*\bw\b.*bytes"),
}


@pytest.mark.parametrize("method", list(INFERENCE))
@pytest.mark.parametrize("case", list(BAD_X))
def test_inference_rejects_bad_sentences(model, method, case):
    X, message = BAD_X[case]
    with pytest.raises(ValueError, match=message):
        INFERENCE[method](model, X)


@pytest.mark.parametrize("method", list(INFERENCE))
@pytest.mark.parametrize("n_threads", [0, -1, 2**40, 1.5, "2", True])
def test_inference_rejects_bad_thread_counts(model, method, n_threads):
    m = copy.copy(model)
    m.n_threads = n_threads
    with pytest.raises(ValueError, match="n_threads"):
        INFERENCE[method](m, [[token("the", 0), token("dog", 1)]])


@pytest.mark.parametrize("method", list(INFERENCE))
@pytest.mark.parametrize("weight, value", [(3.0, 1e308), (1e200, 1e100), (1e200, 1e200)],
                         ids=["value 1e308", "E = 1e300", "E = inf"])
def test_inference_where_emissions_overflow_raises(dense_model, method, weight, value):
    # Finite feature values and weights whose product E = X·W leaves the range
    # the lattices can sum (or the float range): the answer must be an error
    # naming the overflow, not a labeling computed from inf (predict, score),
    # NaN marginals, nor "no labeling" from masks that were never given.
    X = [[dict(token("the", 0), x=value), dict(token("dog", 1), x=value)], [token("cat", 0)]]
    with pytest.raises(ValueError, match=OVERFLOW):
        INFERENCE[method](with_x_weights(dense_model, weight), X)


@pytest.mark.parametrize("method", list(INFERENCE))
def test_inference_on_empty_and_length_one_sentences(model, method):
    X = [[], [token("dog", 0)], []]
    got = INFERENCE[method](model, X)
    if method == "score":
        assert 0.0 <= got <= 1.0
        return
    assert len(got) == 3
    empty, one = got[0], got[1]
    if method == "predict":
        assert empty == [] and len(one) == 1 and one[0] in model.classes_
    elif method == "predict_marginals":
        assert empty == [] and sum(one[0].values()) == pytest.approx(1.0)
    elif method == "predict_nbest":
        assert empty == [([], 0.0)]
        assert len(one) == 3 and sum(np.exp(lp) for _, lp in one) == pytest.approx(1.0)
    elif method.startswith("sequence_log_probability"):
        assert empty == 0.0 and one <= 0.0
    elif method == "sequence_entropy":
        assert empty == 0.0 and 0.0 <= one <= np.log(len(model.classes_)) + 1e-12
        # one token: the sequence entropy is that token's entropy
        assert one == pytest.approx(model.token_entropy([X[1]])[0][0], abs=1e-12)
    elif method == "token_entropy":
        assert empty.shape == (0,) and one.shape == (1,)
    elif method == "most_uncertain_span":
        assert tuple(got[0]) == (0, 0, 0.0)
        begin, stop, h = got[1]
        assert (int(begin), int(stop)) == (0, 1) and h >= 0.0


@pytest.mark.parametrize("method", list(INFERENCE))
def test_inference_with_more_threads_than_cores_gives_the_same_answer(model, data, method):
    X = data[0][:6] + [[token("the", 0)], []]
    many = copy.copy(model)
    many.n_threads = 64
    a, b = INFERENCE[method](model, X), INFERENCE[method](many, X)
    if method == "token_entropy":
        assert all(np.array_equal(u, v) for u, v in zip(a, b))
    elif isinstance(a, np.ndarray):
        assert np.array_equal(a, b)
    else:
        assert a == b


def test_score_with_only_unseen_gold_labels_is_zero(model):
    X = [[token("the", 0), token("dog", 1)], [token("cat", 0)]]
    assert model.score(X, [["NEVER", "SEEN"], ["NOPE"]]) == 0.0
    # a mix: one unseen label in a one-token sentence counts as one error
    predicted = model.predict(X)
    assert model.score(X, [predicted[0], ["NOPE"]]) == pytest.approx(2 / 3)


INFERENCE_ARGUMENTS = {
    "score: ragged gold": (lambda m: m.score([[token("a", 0), token("dog", 1)]], [["A"]]),
                           r"sentence 0: 2 tokens but 1 labels"),
    "score: gold label set": (lambda m: m.score([[token("a", 0)]], [[{"A", "B"}]]),
                              r"sentence 0, token 0\b"),
    "score: no token at all": (lambda m: m.score([[]], [[]]), r"token"),
    "sequence_log_probability: unknown label in a set": (
        lambda m: m.sequence_log_probability([[token("a", 0)]], [[frozenset({"A", "ZZ"})]]),
        r"sentence 0, token 0\b"),
    "sequence_log_probability: y shorter": (
        lambda m: m.sequence_log_probability([[token("a", 0)], [token("b", 0)]], [["A"]]),
        r"\b2\b.*\b1\b"),
    "predict: allowed label outside the model": (
        lambda m: m.predict([[token("a", 0)]], allowed=[["ZZ"]]), r"'ZZ'"),
    "predict: allowed set that allows nothing": (
        lambda m: m.predict([[token("a", 0)]], allowed=[[set()]]), r"token 0\b.*empty"),
    "predict: allowed is a string": (
        lambda m: m.predict([[token("a", 0)]], allowed="A"), r"allowed"),
    "predict_nbest: allowed label outside the model": (
        lambda m: m.predict_nbest([[token("a", 0)]], 2, allowed=[["ZZ"]]), r"'ZZ'"),
    "predict_marginals: allowed ragged": (
        lambda m: m.predict_marginals([[token("a", 0), token("b", 1)]], allowed=[["A"]]),
        r"sentence 0: 2 tokens but 1"),
    "predict_nbest: k = 0": (lambda m: m.predict_nbest([[token("a", 0)]], 0), r"\bk\b"),
    "most_uncertain_span: width = 0": (
        lambda m: m.most_uncertain_span([[token("a", 0)]], 0), r"width"),
    "most_uncertain_span: width = True": (
        lambda m: m.most_uncertain_span([[token("a", 0)]], True), r"width"),
}


@pytest.mark.parametrize("case", list(INFERENCE_ARGUMENTS))
def test_inference_argument_errors(model, case):
    call, message = INFERENCE_ARGUMENTS[case]
    with pytest.raises(ValueError, match=message):
        call(model)


def test_not_fitted_model_refuses_every_method():
    for name, call in INFERENCE.items():
        with pytest.raises(ValueError, match="not fitted"):
            call(CRF(), [[token("a", 0)]])


# ---------------------------------------------------------------------------
# CRF.fit
# ---------------------------------------------------------------------------

ENTROPY = dict(entropy_weight=0.1, max_iterations=3)

FIT_CASES = {
    # empty corpora: an error only when every data source is empty
    "labeled and unlabeled both empty": (
        lambda X, y: fit([], [], X_unlabeled=[], **ENTROPY), r"empty"),
    "only an empty unlabeled sentence": (
        lambda X, y: fit([], [], X_unlabeled=[[]], labels=["A", "B"], **ENTROPY),
        r"unlabeled sentence 0\b.*empty"),
    "unlabeled only, no label set": (
        lambda X, y: fit([], [], X_unlabeled=X, **ENTROPY), r"labels="),
    # a semi-supervised weight with nothing to act on (it used to train a
    # supervised model without a word)
    "entropy_weight without X_unlabeled": (
        lambda X, y: fit(X, y, **ENTROPY), r"entropy_weight=0\.1 needs unlabeled data"),
    "ge_weight without constraints": (
        lambda X, y: fit(X, y, ge_weight=2.0), r"ge_weight=2\.0 needs constraints"),
    "ge_weight and X_unlabeled without constraints": (
        lambda X, y: fit(X, y, X_unlabeled=X, ge_weight=2.0), r"ge_weight=2\.0 needs constraints"),
    # ragged or mistyped y
    "y is None": (lambda X, y: fit(X, None), r"\by must be a list"),
    "y is a string": (lambda X, y: fit(X[:3], "ABC"), r"\by must be a list"),
    "y[1] is a string": (lambda X, y: fit(X[:2], [y[0], "".join(y[1])]), r"y\[1\]"),
    "y[1] is None": (lambda X, y: fit(X[:2], [y[0], None]), r"y\[1\]"),
    "a label that is bytes": (
        lambda X, y: fit(X[:2], [y[0], [b"A"] + y[1][1:]]), r"sentence 1, token 0\b"),
    "labels= is one string": (
        lambda X, y: fit(X, y, labels="ABC"), r"labels"),
    # unlabeled data
    "X_unlabeled is a string": (
        lambda X, y: fit(X, y, X_unlabeled="the dog", **ENTROPY), r"X_unlabeled"),
    "X_unlabeled sentence is a dict": (
        lambda X, y: fit(X, y, X_unlabeled=[token("a", 0)], **ENTROPY), r"X_unlabeled\[0\]"),
    "X_unlabeled with words as tokens": (
        lambda X, y: fit(X, y, X_unlabeled=[["the", "DT"]], **ENTROPY),
        r"corpus 1, sentence 0, token 0\b"),
    "X_unlabeled with a NaN value": (
        lambda X, y: fit(X, y, X_unlabeled=[[dict(token("a", 0), x=float("nan"))]], **ENTROPY),
        r"corpus 1, sentence 0, token 0\b.*non-finite"),
    # sample weights
    "negative sample weight": (
        lambda X, y: fit(X, y, sample_weight=[1.0] * (len(X) - 1) + [-1.0]), r"sample_weight"),
    "NaN sample weight": (
        lambda X, y: fit(X, y, sample_weight=[np.nan] + [1.0] * (len(X) - 1)), r"sample_weight"),
    "infinite sample weight": (
        lambda X, y: fit(X, y, sample_weight=[np.inf] * len(X)), r"sample_weight"),
    "too few sample weights": (
        lambda X, y: fit(X, y, sample_weight=[1.0] * (len(X) - 1)), r"sample_weight"),
    "2-D sample weights": (
        lambda X, y: fit(X, y, sample_weight=[[1.0] * len(X)]), r"sample_weight"),
    "string sample weights": (
        lambda X, y: fit(X, y, sample_weight=["heavy"] * len(X)), r"sample_weight"),
    "ragged sample weights": (
        lambda X, y: fit(X, y, sample_weight=[[1.0]] * (len(X) - 1) + [[1.0, 2.0]]),
        r"sample_weight"),
    "sample weights in a dict": (
        lambda X, y: fit(X, y, sample_weight={"all": 1.0}), r"sample_weight"),
    # threads
    "absurd thread count": (lambda X, y: fit(X, y, n_threads=2**40), r"n_threads"),
    "absurd thread count, entropy": (
        lambda X, y: fit(X, y, X_unlabeled=X, n_threads=2**40, **ENTROPY), r"n_threads"),
    "zero threads, entropy": (
        lambda X, y: fit(X, y, X_unlabeled=X, n_threads=0, **ENTROPY), r"n_threads"),
    # huge but finite feature values: E = X·W leaves the float range as soon
    # as a weight moves, so training cannot be right (today it silently
    # stays at θ = 0 and reports convergence)
    "1e308 feature value": (
        lambda X, y: fit(X + [[dict(token("dog", 0), x=1e308)]], y + [["B"]]), OVERFLOW),
    "-1e308 feature value in unlabeled data": (
        lambda X, y: fit(X, y, X_unlabeled=[[dict(token("dog", 0), x=-1e308)]], **ENTROPY),
        OVERFLOW),
}


@pytest.mark.parametrize("case", list(FIT_CASES))
def test_fit_rejects(data, case):
    call, message = FIT_CASES[case]
    X, y = data
    with pytest.raises(ValueError, match=message):
        call(list(X), list(y))


def test_fit_with_an_empty_source_next_to_a_non_empty_one(data):
    X, y = data
    # empty unlabeled data next to labeled data: plain supervised training
    m = fit(X, y, X_unlabeled=[], **ENTROPY)
    assert m.feature_set_ == "observed"
    # no labeled data, unlabeled data and the label set: entropy training alone
    m = fit([], [], X_unlabeled=X[:5], labels=["A", "B", "C"], **ENTROPY)
    assert m.classes_ == ["A", "B", "C"] and np.all(np.isfinite(m.coef_))
    # an all-zero weight vector is valid (nothing to learn but the prior)
    m = fit(X, y, sample_weight=np.zeros(len(X)), max_iterations=3)
    assert np.all(m.coef_ == 0.0)


def test_fit_with_length_one_sentences_and_many_threads_in_every_term(data):
    X = [s[:1] for s in data[0]]
    y = [s[:1] for s in data[1]]
    kwargs = dict(X_unlabeled=X[:8], **ENTROPY)
    one = fit(X, y, n_threads=1, **kwargs)
    many = fit(X, y, n_threads=64, **kwargs)
    assert np.array_equal(one.coef_, many.coef_)
    assert one.training_["history"] == many.training_["history"]


def test_save_to_a_directory_names_it_and_leaves_nothing(model, tmp_path):
    target = tmp_path / "models"
    target.mkdir()
    with pytest.raises((ValueError, OSError), match=re.escape(str(target))):
        model.save(target)
    assert os.listdir(target) == [] and sorted(os.listdir(tmp_path)) == ["models"]


# ---------------------------------------------------------------------------
# sscrf.lattice
# ---------------------------------------------------------------------------

H = 1e308

#: Finite inputs whose scores leave the float range.
HUGE_CHAINS = {
    "emissions and transitions": dict(emissions=np.array([[H, 0.0], [H, 0.0]]),
                                      transitions=np.array([[H, 0.0], [0.0, 0.0]])),
    "mixed signs": dict(emissions=np.array([[H, -H], [-H, H]]),
                        transitions=np.array([[-H, H], [H, -H]])),
    "all very negative": dict(emissions=np.full((2, 2), -H), transitions=np.zeros((2, 2))),
    "start and end": dict(emissions=np.zeros((2, 2)), transitions=np.zeros((2, 2)),
                          start=np.array([H, 0.0]), end=np.array([H, 0.0])),
}


def _expectation(**chain):
    n, S = chain["emissions"].shape
    return lattice.expectation_gradient(node_scores=np.ones((n, S)),
                                        edge_scores=np.ones((n - 1, S, S)), **chain)


LATTICE_FUNCTIONS = {
    "log_partition": lattice.log_partition,
    "marginals": lattice.marginals,
    "viterbi": lattice.viterbi,
    "nbest": lambda **c: lattice.nbest(k=3, **c),
    "sequence_entropy": lattice.sequence_entropy,
    "entropy_lattices": lattice.entropy_lattices,
    "entropy_gradient": lattice.entropy_gradient,
    "entropy_gradient_jiao": lambda **c: lattice.entropy_gradient(method="jiao", **c),
    "expectation_gradient": _expectation,
    "span_entropies": lambda **c: lattice.span_entropies(width=1, **c),
    "constrained_entropy": lambda **c: lattice.constrained_entropy(begin=0, labels=[0], **c),
}


def _all_finite(result):
    if isinstance(result, (tuple, list)):
        return all(_all_finite(r) for r in result)
    return bool(np.all(np.isfinite(np.asarray(result, dtype=np.float64))))


@pytest.mark.parametrize("fn", list(LATTICE_FUNCTIONS))
@pytest.mark.parametrize("chain", list(HUGE_CHAINS))
def test_lattice_huge_finite_scores_give_finite_results_or_an_overflow_error(fn, chain):
    # Either a finite (and then, for these chains, exact) answer, or a
    # ValueError saying the scores overflow; never inf or NaN returned, nor
    # an error about masks that were not given.
    try:
        result = LATTICE_FUNCTIONS[fn](**HUGE_CHAINS[chain])
    except ValueError as e:
        if fn == "entropy_gradient_jiao" and "underflow" in str(e):
            return  # the reference method's documented refusal
        assert re.search(OVERFLOW, str(e)), f"{fn}: unhelpful message {str(e)!r}"
        return
    assert _all_finite(result), f"{fn} returned non-finite values: {result!r}"


ABOVE_LIMIT = float(np.nextafter(1e250, np.inf))


@pytest.mark.parametrize("bad", [ABOVE_LIMIT, -ABOVE_LIMIT, np.inf, -np.inf, np.nan,
                                 np.copysign(np.nan, -1.0)],
                         ids=["above 1e250", "below -1e250", "inf", "-inf", "nan", "-nan"])
def test_score_check_finds_one_bad_entry_at_any_position(bad):
    # The check is vectorised: one bad entry must be found in any lane of a
    # vector and in the scalar tail, for a magnitude just past the limit as
    # for inf and NaN (either sign bit); the limit itself is allowed.
    S = 3
    T = np.zeros((S, S))
    for n in (1, 2, 3, 7):
        for i in range(n * S):
            E = np.zeros((n, S))
            E.flat[i] = bad
            with pytest.raises(ValueError, match=OVERFLOW):
                lattice.log_partition(E, T)
    E = np.full((7, S), 1e250)
    E[3, 1] = -1e250
    assert np.isfinite(lattice.log_partition(E, T))


def test_lattice_string_mask_is_refused():
    # "False" is a non-empty string, so a cast to bool makes it True: a
    # string mask would silently allow everything. In a child process: a
    # refused dtype is where reference counting at the boundary goes wrong.
    code, out, err = run_python("""
        import numpy as np
        from sscrf import lattice
        mask = np.array([["True", "False"], ["False", "True"]])
        E, T = np.zeros((2, 2)), np.zeros((2, 2))
        calls = {"log_partition": lambda: lattice.log_partition(E, T, mask=mask),
                 "marginals": lambda: lattice.marginals(E, T, mask=mask),
                 "viterbi": lambda: lattice.viterbi(E, T, mask=mask),
                 "nbest": lambda: lattice.nbest(E, T, 2, mask=mask),
                 "edge_mask": lambda: lattice.log_partition(
                     E, T, edge_mask=np.array([[["1", "0"], ["0", "1"]]]))}
        for name, call in calls.items():
            try:
                call()
                print(name, "accepted")
            except ValueError as e:
                print(name, "ValueError", e)
    """)
    assert code == 0, f"exit status {code}\nstdout: {out}\nstderr: {err[-2000:]}"
    lines = out.splitlines()
    assert len(lines) == 5, out
    for line in lines:
        assert re.match(r"\w+ ValueError .*mask", line), line


def test_lattice_valid_edges():
    # more labelings asked for than exist, and an absurd k, on a short chain
    paths, scores = lattice.nbest(np.zeros((2, 2)), np.zeros((2, 2)), 2**40)
    assert paths.shape == (4, 2) and np.all(scores == 0.0)
    # length-1 chains through every entropy function
    E, T = np.array([[0.0, np.log(3.0)]]), np.zeros((2, 2))
    h = lattice.sequence_entropy(E, T)
    assert h == pytest.approx(-(0.25 * np.log(0.25) + 0.75 * np.log(0.75)), rel=1e-12)
    assert lattice.span_entropy(E, T, 0, 1) == pytest.approx(h, rel=1e-12)
    assert lattice.span_entropies(E, T, 1) == pytest.approx([h], rel=1e-12)
    assert lattice.constrained_entropy(E, T, 0, [1]) == 0.0
    assert lattice.span_entropies(E, T, 2).shape == (0,)


# ---------------------------------------------------------------------------
# Objective terms (sscrf.objectives.OBJECTIVES)
# ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def term_inputs(model, data):
    X, y = data
    features = model.extractor_.transform(X[:6])
    index = {label: i for i, label in enumerate(model.classes_)}
    labels = np.array([index[label] for s in y[:6] for label in s], dtype=np.int32)
    S = len(model.classes_)
    mask = np.zeros((features.n_tokens, S), dtype=bool)
    mask[np.arange(features.n_tokens), labels] = True
    mask[::2] = True  # every other token unannotated
    nothing = mask.copy()
    nothing[1] = False  # token 1 allows no label
    return dict(labeled=compile_corpus(features, labels=labels),
                unlabeled=compile_corpus(features), masked=compile_corpus(features, mask=mask),
                nothing=compile_corpus(features, mask=nothing),
                layout=model.layout_.core, theta=model.coef_, features=features, S=S,
                A=len(model.extractor_.attributes_))


def make_term(name, inputs, n_threads):
    layout = inputs["layout"]
    if name == "likelihood":
        return OBJECTIVES[name](inputs["labeled"], layout, n_threads)
    if name == "entropy":
        return OBJECTIVES[name](inputs["unlabeled"], layout, n_threads)
    if name == "partial_likelihood":
        return OBJECTIVES[name](inputs["masked"], layout, n_threads)
    if name == "ge":
        constraint_of_attribute = np.full(inputs["A"], -1, dtype=np.int64)
        constraint_of_attribute[0] = 0
        targets = np.full((1, inputs["S"]), 1.0 / inputs["S"])
        return OBJECTIVES[name](inputs["unlabeled"], layout, n_threads,
                                constraint_of_attribute=constraint_of_attribute, targets=targets)
    raise AssertionError(name)


TERMS = [t for t in ("likelihood", "entropy", "partial_likelihood", "ge") if t in OBJECTIVES]
# likelihood with 0 and -1 is pinned in test_objectives
THREAD_CASES = [(t, n) for t in TERMS for n in (0, -1, 2**40) if (t, n) not in
                {("likelihood", 0), ("likelihood", -1)}]


@pytest.mark.parametrize("term, n_threads", THREAD_CASES)
def test_terms_reject_bad_thread_counts(term_inputs, term, n_threads):
    with pytest.raises(ValueError, match="n_threads"):
        make_term(term, term_inputs, n_threads).value_and_gradient(term_inputs["theta"])


@pytest.mark.parametrize("term", TERMS)
def test_terms_accept_more_threads_than_cores(term_inputs, term):
    theta = term_inputs["theta"]
    v1, g1 = make_term(term, term_inputs, 1).value_and_gradient(theta)
    v64, g64 = make_term(term, term_inputs, 64).value_and_gradient(theta)
    assert v1 == v64 and np.array_equal(g1, g64)


def test_partial_likelihood_mask_allowing_nothing(term_inputs):
    term = OBJECTIVES["partial_likelihood"](term_inputs["nothing"], term_inputs["layout"], 1)
    with pytest.raises(ValueError, match=r"no labeling|allow"):
        term.value_and_gradient(term_inputs["theta"])


# ---------------------------------------------------------------------------
# Readers and the feature extractor
# ---------------------------------------------------------------------------


def _at_line(path, line):
    return rf"{re.escape(str(path))}(:{line}\b|.*\bline {line}\b)"


def test_read_conll_undecodable_byte_names_its_line(tmp_path):
    path = tmp_path / "latin1.txt"
    path.write_bytes(b"a O\nb O\n\nc O\n" + b"caf\xe9 O\n")
    with pytest.raises(ValueError, match=_at_line(path, 5)) as info:
        read_conll(path)
    assert not isinstance(info.value, UnicodeError)


def test_read_conllu_undecodable_byte_names_its_line(tmp_path):
    good = "1\tx\tx\tX\t_\t_\t0\troot\t_\t_\n"
    path = tmp_path / "latin1.conllu"
    path.write_bytes((good * 4).encode() + b"1\tcaf\xe9\tx\tX\t_\t_\t0\troot\t_\t_\n")
    with pytest.raises(ValueError, match=_at_line(path, 5)) as info:
        read_conllu(path)
    assert not isinstance(info.value, UnicodeError)


@pytest.mark.parametrize("offset", [-10**9, 10**9, -2**62])
def test_template_offset_costs_nothing_out_of_proportion(offset):
    # A 20-byte template must not make extraction from a 2-token sentence
    # allocate or loop over |offset| padding strings: either refuse the
    # offset (naming it) or extract in time proportional to the input.
    line = f"U00:%x[{offset},0]"
    with time_limit(5, f"extracting {line!r}"):
        try:
            fx = FeatureExtractor([line])
        except ValueError as e:
            assert str(offset) in str(e) or "offset" in str(e)
            return
        (features,) = fx.fit_transform([[["a"], ["b"]]])
    assert features.n_tokens == 2 and features.nnz == 2


# ---------------------------------------------------------------------------
# The command line
# ---------------------------------------------------------------------------

TRAIN = "He PRP B-NP\nreckons VBZ B-VP\nthe DT B-NP\ncurrent JJ I-NP\n\n" \
        "The DT B-NP\ncat NN I-NP\nsat VBD B-VP\n\nYes UH O\n\n"


@pytest.fixture(scope="module")
def cli_files(tmp_path_factory):
    root = tmp_path_factory.mktemp("bad_cli")
    files = {"root": root, "train": root / "train.txt", "model": root / "m.model"}
    files["train"].write_text(TRAIN * 3)
    code = main(["train", str(files["train"]), "-m", str(files["model"]), "--max-iterations",
                 "3", "--threads", "1", "-q"])
    assert code == 0
    return files


def cli(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def assert_usage_error(code, err, pattern):
    assert code == 2, err
    assert "Traceback" not in err
    assert re.search(pattern, err), err


def test_cli_train_undecodable_byte_names_file_and_line(capsys, cli_files, tmp_path):
    path = tmp_path / "latin1.txt"
    path.write_bytes(TRAIN.encode() + b"caf\xe9 NN I-NP\n")
    code, _, err = cli(capsys, "train", path, "-m", tmp_path / "x.model", "-q")
    assert_usage_error(code, err, _at_line(path, TRAIN.count("\n") + 1))


def test_cli_train_absurd_thread_count(capsys, cli_files, tmp_path):
    code, _, err = cli(capsys, "train", cli_files["train"], "-m", tmp_path / "x.model", "-q",
                       "--threads", 2**40)
    assert_usage_error(code, err, r"threads")


def test_cli_train_file_without_sentences(capsys, tmp_path):
    path = tmp_path / "blank.txt"
    path.write_text("\n-DOCSTART- -X- O\n\n   \n")
    code, _, err = cli(capsys, "train", path, "-m", tmp_path / "x.model", "-q")
    assert_usage_error(code, err, re.escape(str(path)) + r".*no sentences")


def test_cli_train_unlabeled_file_with_too_few_columns(capsys, cli_files, tmp_path):
    path = tmp_path / "unlabeled.txt"
    path.write_text("the\ncat\n\n")
    code, _, err = cli(capsys, "train", cli_files["train"], "-m", tmp_path / "x.model", "-q",
                       "--unlabeled", path, "--entropy-weight", "0.1")
    assert_usage_error(code, err, re.escape(str(path)))


def test_cli_train_template_with_a_huge_offset(capsys, cli_files, tmp_path):
    template = tmp_path / "huge.tpl"
    template.write_text("U00:%x[-1000000000,0]\nB\n")
    with time_limit(10, "sscrf train with a template offset of -10^9"):
        code, _, err = cli(capsys, "train", cli_files["train"], "-m", tmp_path / "x.model",
                           "-q", "--template", template, "--max-iterations", "2")
    if code != 0:
        assert_usage_error(code, err, re.escape(str(template)) + r".*(offset|1000000000)")


@pytest.mark.parametrize("cell, pattern", [
    ("ZZ", r"unknown label 'ZZ'"),
    ("B-NP|", r"empty label"),
])
def test_cli_tag_bad_constraints_name_file_and_line(capsys, cli_files, tmp_path, cell, pattern):
    tagme = tmp_path / "tagme.txt"
    tagme.write_text("the DT\ncat NN\n\n")
    constraints = tmp_path / "allowed.txt"
    constraints.write_text(f"the DT *\ncat NN {cell}\n\n")
    code, _, err = cli(capsys, "tag", "-m", cli_files["model"], tagme, "--constraints",
                       constraints)
    assert_usage_error(code, err, re.escape(f"{constraints}:2:") + ".*" + pattern)


def test_cli_valid_edges(capsys, cli_files, tmp_path):
    # tagging an empty file: no output, success
    empty = tmp_path / "empty.txt"
    empty.write_text("")
    code, out, err = cli(capsys, "tag", "-m", cli_files["model"], empty)
    assert (code, out) == (0, ""), err
    # a one-token sentence
    one = tmp_path / "one.txt"
    one.write_text("Yes UH\n")
    code, out, err = cli(capsys, "tag", "-m", cli_files["model"], one)
    assert code == 0, err
    assert len(out.split("\n")[0].split()) == 3
    # an empty unlabeled file next to a labeled one, with more threads than cores
    code, _, err = cli(capsys, "train", cli_files["train"], "-m", tmp_path / "y.model", "-q",
                       "--unlabeled", empty, "--entropy-weight", "0.1", "--max-iterations", "2",
                       "--threads", "64")
    assert code == 0, err


# ---------------------------------------------------------------------------
# Inputs that could crash the interpreter: in a subprocess
# ---------------------------------------------------------------------------

_THREADS_CHILD = """
    import resource, sys
    # 4 GiB of address space: room for a few hundred 8 MiB thread stacks, as
    # on a cluster node with `ulimit -v` or a container that cannot give
    # a thousand threads.
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    limit = 4 << 30 if hard == resource.RLIM_INFINITY else min(4 << 30, hard)
    resource.setrlimit(resource.RLIMIT_AS, (limit, hard))
    from sscrf import CRF
    from sscrf.inputs import MAX_THREADS
    n_threads = %s
    if n_threads == "max":  # the largest count the model accepts
        n_threads = MAX_THREADS
    X = [[{"w": "a"}, {"w": "b"}], [{"w": "b"}], [{"w": "c"}, {"w": "a"}]] * 20
    y = [["A", "B"], ["B"], ["C", "A"]] * 20
    try:
        m = CRF(n_threads=n_threads, max_iterations=2, verbose=False).fit(X, y)
        print(m.predict(X[:2]), m.sequence_entropy(X[:2]))
    except ValueError as e:
        print("ValueError:", e)
        sys.exit(3)
"""


@pytest.mark.parametrize("n_threads", ["'max'", "65536"])
def test_thread_count_the_machine_cannot_supply_does_not_crash(n_threads):
    # A thread count the model accepts must give a result even where the
    # threads cannot all be created (60 sentences are a handful of work
    # items: there is no use for hundreds of threads), and one it refuses a
    # ValueError; never libgomp aborting ("Thread creation failed") or
    # segfaulting the interpreter.
    code, out, err = run_python(_THREADS_CHILD % n_threads, timeout=300)
    assert code in (0, 3), f"exit status {code}\nstdout: {out[-500:]}\nstderr: {err[-2000:]}"
    if code == 3:
        assert n_threads != "'max'", out
        assert "n_threads" in out


def test_core_boundary_bad_ids_do_not_crash():
    # Ids and shapes validated before any loop runs, also through the
    # private core: run in a child so that a missed check shows as a crash
    # rather than taking the test process down.
    code, out, err = run_python("""
        import numpy as np
        from sscrf import _core
        layout = _core.Layout(np.array([0, 2, 4], np.int64), np.array([0, 1, 0, 1], np.int32), 2)
        theta = np.zeros(layout.n_parameters)
        cases = {
            "corpus with more attributes than the layout": lambda: _core.likelihood(
                _core.Corpus(np.array([0, 1]), np.array([5]), np.array([1.0]), np.array([0, 1]),
                             6, np.array([0])), layout, theta, 1),
            "label id beyond the layout": lambda: _core.likelihood(
                _core.Corpus(np.array([0, 1]), np.array([1]), np.array([1.0]), np.array([0, 1]),
                             2, np.array([7])), layout, theta, 1),
            "mask with the wrong number of labels": lambda: _core.partial_likelihood(
                _core.Corpus(np.array([0, 1]), np.array([1]), np.array([1.0]), np.array([0, 1]),
                             2, None, None, np.ones((1, 3), bool)), layout, theta, 1),
            "edge mask of the wrong length": lambda: _core.Corpus(
                np.array([0, 1, 2]), np.array([1, 0]), np.array([1.0, 1.0]), np.array([0, 2]),
                2, None, None, None, np.ones((1, 2, 2), bool)),
            "offsets past the tokens": lambda: _core.Corpus(
                np.array([0, 1]), np.array([1]), np.array([1.0]), np.array([0, 5]), 2),
        }
        for name, call in cases.items():
            try:
                call()
                print(name, "accepted")
            except ValueError as e:
                print(name, "ValueError", e)
    """)
    assert code == 0, f"exit status {code}\nstderr: {err[-2000:]}"
    assert "accepted" not in out, out


def test_nbest_k_past_the_lattice_state_bound_is_refused_at_once():
    # 200,000 labelings of 40 tokens and 22 labels exist and would fit in a
    # large memory (2.3 GB of lattice state, 15 s), but pass the 1e8 bound on
    # k·n·S; on 3 tokens the same k asks for the 22³ labelings there are.
    from sscrf import lattice

    with pytest.raises(ValueError, match=r"k = 200000 is too large .* 40 tokens and 22 labels"):
        lattice.nbest(np.zeros((40, 22)), np.zeros((22, 22)), 200_000)
    paths, _ = lattice.nbest(np.zeros((3, 22)), np.zeros((22, 22)), 200_000)
    assert paths.shape == (22 ** 3, 3)  # k above the number of labelings: all of them


def test_absurd_nbest_k_on_a_long_sentence_is_refused_not_allocated(cli_files, tmp_path):
    # k = 2^40 labelings of 40 tokens cannot exist in memory (2^40 × 40 ids):
    # a ValueError naming k (exit status 2 from the command line), not
    # std::bad_alloc, an OOM kill, or a traceback. In a child with 4 GiB of
    # address space, so that a huge allocation fails fast instead of paging.
    tokens = tmp_path / "long.txt"
    tokens.write_text("".join(f"w{i} NN\n" for i in range(40)) + "\n")
    code, out, err = run_python(f"""
        import contextlib, io, resource
        soft, hard = resource.getrlimit(resource.RLIMIT_AS)
        limit = 4 << 30 if hard == resource.RLIM_INFINITY else min(4 << 30, hard)
        resource.setrlimit(resource.RLIMIT_AS, (limit, hard))
        import numpy as np
        from sscrf import CRF, lattice
        from sscrf.cli import main
        k = 2 ** 40
        model = CRF.load({str(cli_files["model"])!r})
        sentence = [[f"w{{i}}", "NN"] for i in range(40)]
        calls = {{
            "lattice.nbest": lambda: lattice.nbest(np.zeros((40, 2)), np.zeros((2, 2)), k),
            "CRF.predict_nbest": lambda: model.predict_nbest([sentence], k),
        }}
        for name, call in calls.items():
            try:
                call()
                print(name, "returned")
            except ValueError as e:
                print(name, "ValueError", e)
            except MemoryError as e:
                print(name, "MemoryError", e)
        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            status = main(["tag", "-m", {str(cli_files["model"])!r}, {str(tokens)!r}, "-n",
                           str(k), "-o", {str(tmp_path / "out.txt")!r}])
        print("cli", status, err.getvalue().strip().replace("\\n", " | "))
    """)
    assert code == 0, f"exit status {code}\nstdout: {out}\nstderr: {err[-2000:]}"
    lines = out.splitlines()
    assert len(lines) == 3, out
    for line in lines[:2]:
        assert re.match(r"\S+ ValueError .*\bk\b", line), line
    assert re.match(r"cli 2 sscrf: error: .*(\bk\b|-n|nbest)", lines[2]), lines[2]


def test_str_subclass_key_whose_plus_returns_another_type_is_refused_by_name():
    # the joined feature name is not a str; the core reads names as str bytes
    code = """
        from sscrf import CRF, SscrfError
        class K(str):
            def __radd__(self, other):
                return [1, 2, 3]
            def __add__(self, other):
                return [1, 2, 3]
        X = [[{K("w"): 2.0, "b": 1.0}, {"w": "b"}]] * 3
        try:
            CRF(max_iterations=2, verbose=False).fit(X, [["A", "B"]] * 3)
        except SscrfError as e:
            print("refused:", e)
    """
    rc, out, err = run_python(code)
    assert rc == 0, err[-2000:]
    assert "refused:" in out and "token 0" in out and "list" in out


class _OutOfMemoryArray:
    """An argument whose conversion to an array runs out of memory."""

    def __array__(self, dtype=None, copy=None):
        raise MemoryError("simulated: no memory for the conversion")


def test_a_conversion_that_runs_out_of_memory_is_a_memory_error_not_a_type_mismatch():
    with pytest.raises(MemoryError, match="simulated"):
        _core.Layout(np.array([0, 2, 4], np.int64), _OutOfMemoryArray(), 2)
    with pytest.raises(MemoryError, match="simulated"):
        _core.log_partition(_OutOfMemoryArray(), np.zeros((2, 2)), None, None, None, None)
    # a real type mismatch keeps its message
    with pytest.raises(SscrfError, match="label_ids must be a 1-D int array"):
        _core.Layout(np.array([0, 2, 4], np.int64), "not an array", 2)


def test_a_real_out_of_memory_conversion_says_so():
    code = """
        import resource
        import numpy as np
        from sscrf import _core
        ids = np.zeros(300_000_000, np.int32)   # 1.2 GB; as int64 it needs 2.4 GB more
        soft, hard = resource.getrlimit(resource.RLIMIT_AS)
        with open("/proc/self/statm") as f:
            used = int(f.read().split()[0]) * resource.getpagesize()
        resource.setrlimit(resource.RLIMIT_AS, (used + (1 << 30), hard))
        try:
            _core.Layout(np.array([0, 300_000_000], np.int64), ids, 2)
        except MemoryError as e:
            print("memory error:", type(e).__name__)
        except Exception as e:
            print("other:", type(e).__name__, e)
    """
    # Under AddressSanitizer (CI's sanitized build) its allocator would abort
    # where malloc returns NULL; this option makes it return NULL too.
    asan = ":".join(filter(None, [os.environ.get("ASAN_OPTIONS"), "allocator_may_return_null=1"]))
    rc, out, err = run_python(code, env=dict(os.environ, ASAN_OPTIONS=asan))
    assert rc == 0, err[-2000:]
    assert "memory error:" in out, out
