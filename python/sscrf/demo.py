"""A self-contained demo: a built-in chunking HMM, a CRF trained on its output, scores.

Nothing is downloaded. :func:`generate_hmm_corpus` samples CoNLL-2000-like
``word POS chunk`` data from a small first-order hidden Markov model, and
:func:`run_demo` trains ``CRF(templates="default")`` on one sample and scores
it on another, then shows side by side what word representations, active
learning, partial labels and labeled words (GE) add to a few labeled
sentences.

The HMM
-------
Hidden states are the IOB2 chunk labels ``B-NP I-NP B-VP I-VP O``. A
sentence's length is drawn uniformly from ``[min_length, max_length]``; its
first label from ``START`` and each next label from ``TRANSITIONS[previous]``.
Both give ``I-X`` probability 0 except after ``B-X`` or ``I-X``, so every
sample is valid IOB2 (no sentence starts with ``I-X``, no ``O I-X``,
``B-NP I-VP``, ...). Some transitions are deliberately ambiguous: ``B-NP``
may follow ``I-NP`` (two adjacent noun phrases), ``B-VP`` may follow
``I-VP``.

Each label emits a token of two columns, ``[word, pos]``, in two steps: a
part-of-speech tag from ``EMISSIONS[label]``, then a word from ``WORDS[pos]``
(weights ``1, 1/2, 1/3, ...`` in list order, a Zipf-like vocabulary). Several
tags are shared between labels (``NN`` in ``B-NP`` and ``I-NP``, ``RB`` in
``I-VP`` and ``O``, ``JJ`` in both NP labels), and several words between
tags (``run`` NN/VB/VBN, ``cuts`` NNS/VBZ, ``that`` DT/IN, ``said``
VBD/VBN, ...), so neither column alone determines the label: the tagger has
to use context. Finally, with probability ``POS_NOISE`` the tag column is
replaced by a tag drawn uniformly from all tags (a tagger's mistake), while
the word stays that of the original tag.

Sampling uses one ``numpy.random.Generator`` seeded with ``seed``, so a seed
always gives the same corpus.
"""

from __future__ import annotations

import sys
import time
from bisect import bisect_right
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Optional, TextIO, Union

import numpy as np

from .active import select
from .constraints import majority_constraints
from .errors import SscrfError
from .inputs import check_integer, random_generator
from .metrics import chunk_scores, format_chunk_report, token_accuracy
from .features import default_templates
from .model import CRF
from .representations import WordRepresentations

if TYPE_CHECKING:
    from numpy.typing import NDArray

__all__ = [
    "LABELS",
    "START",
    "TRANSITIONS",
    "EMISSIONS",
    "WORDS",
    "POS_NOISE",
    "PROTOTYPES",
    "generate_hmm_corpus",
    "run_demo",
]

#: Hidden states, IOB2 chunk labels.
LABELS = ("B-NP", "I-NP", "B-VP", "I-VP", "O")

#: p(first label).
START = {"B-NP": 0.6, "B-VP": 0.1, "O": 0.3}

#: p(next label | previous label); I-X only after B-X or I-X.
TRANSITIONS = {
    "B-NP": {"I-NP": 0.55, "B-VP": 0.2, "O": 0.17, "B-NP": 0.08},
    "I-NP": {"I-NP": 0.3, "B-VP": 0.3, "O": 0.32, "B-NP": 0.08},
    "B-VP": {"I-VP": 0.45, "B-NP": 0.35, "O": 0.2},
    "I-VP": {"I-VP": 0.2, "B-NP": 0.45, "O": 0.3, "B-VP": 0.05},
    "O": {"B-NP": 0.6, "B-VP": 0.2, "O": 0.2},
}

#: p(POS | label).
EMISSIONS = {
    "B-NP": {"DT": 0.45, "PRP": 0.15, "NN": 0.15, "NNS": 0.1, "JJ": 0.1, "CD": 0.05},
    "I-NP": {"NN": 0.5, "NNS": 0.2, "JJ": 0.2, "CD": 0.1},
    "B-VP": {"VBZ": 0.3, "VBD": 0.25, "MD": 0.2, "VB": 0.1, "TO": 0.15},
    "I-VP": {"VB": 0.5, "VBN": 0.2, "VBG": 0.2, "RB": 0.1},
    "O": {"IN": 0.35, "CC": 0.15, ",": 0.2, ".": 0.2, "RB": 0.1},
}

#: Words of each POS, most frequent first (p ∝ 1/rank).
WORDS = {
    "DT": ["the", "a", "this", "that", "some", "every", "an"],
    "PRP": ["it", "he", "they", "she", "we", "you"],
    "NN": ["market", "company", "report", "plan", "cut", "run", "time", "share", "rise", "man"],
    "NNS": ["shares", "prices", "plans", "cuts", "runs", "reports", "markets", "rises"],
    "JJ": ["new", "big", "last", "small", "recent", "old", "good", "like"],
    "CD": ["two", "one", "1990", "three", "100", "million"],
    "VBZ": ["is", "says", "has", "plans", "cuts", "runs", "rises", "reports"],
    "VBD": ["said", "was", "had", "cut", "planned", "rose", "ran", "reported"],
    "MD": ["will", "would", "can", "may", "could"],
    "VB": ["be", "have", "cut", "run", "plan", "rise", "say", "report"],
    "VBN": ["been", "said", "cut", "planned", "risen", "run", "reported"],
    "VBG": ["rising", "running", "planning", "cutting", "saying", "reporting"],
    "TO": ["to"],
    "RB": ["also", "not", "still", "only", "quickly", "up"],
    "IN": ["of", "in", "for", "on", "that", "with", "like", "up"],
    "CC": ["and", "but", "or"],
    ",": [","],
    ".": ["."],
}

#: Probability that the POS column is replaced by a uniformly drawn tag.
POS_NOISE = 0.03

#: Two words a label, each mostly seen with it: the labeled features of the
#: demo's generalized-expectation rows.
PROTOTYPES = {"the": "B-NP", "a": "B-NP", "market": "I-NP", "shares": "I-NP", "is": "B-VP",
              "said": "B-VP", "be": "I-VP", "been": "I-VP", "of": "O", ".": "O"}


def _cumulative(dist: Mapping[str, float], keys: Sequence[str]) -> NDArray[np.float64]:
    """Cumulative probabilities of ``dist`` over ``keys`` (absent keys: 0), last = 1."""
    p = np.array([dist.get(k, 0.0) for k in keys], dtype=np.float64)
    c = np.cumsum(p / p.sum())
    c[-1] = 1.0
    return c


def _zipf_cumulative(n: int) -> NDArray[np.float64]:
    c = np.cumsum(1.0 / np.arange(1, n + 1))
    c /= c[-1]
    c[-1] = 1.0
    return c


def generate_hmm_corpus(n_sentences: int, *, seed: Union[int, np.random.Generator] = 0,
                        min_length: int = 4, max_length: int = 20
                        ) -> tuple[list[list[list[str]]], list[list[str]]]:
    """Sample labeled sentences from the demo HMM (see the module docstring).

    Parameters
    ----------
    n_sentences : int
        Number of sentences, ≥ 0.
    seed : int
        Seed of the ``numpy.random.Generator``; equal seeds give equal corpora.
    min_length, max_length : int
        Sentence lengths are uniform on ``[min_length, max_length]``,
        ``1 ≤ min_length ≤ max_length``.

    Returns
    -------
    tokens : list of list of list of str
        ``tokens[i][j] == [word, pos]``, token ``j`` of sentence ``i``.
    labels : list of list of str
        ``labels[i][j]`` in :data:`LABELS`, valid IOB2.

    Raises
    ------
    ValueError
        For a negative ``n_sentences`` or bad lengths.
    """
    n_sentences = check_integer(n_sentences, "n_sentences", minimum=0)
    min_length = check_integer(min_length, "min_length")
    max_length = check_integer(max_length, "max_length")
    if not 1 <= min_length <= max_length:
        raise SscrfError(f"need 1 ≤ min_length ≤ max_length, got {min_length}, {max_length}")

    rng = random_generator(seed, "seed")
    # Cumulative tables as Python lists: bisect on a list is much faster than
    # np.searchsorted on one scalar, and gives the same index.
    start = _cumulative(START, LABELS).tolist()
    trans = [_cumulative(TRANSITIONS[label], LABELS).tolist() for label in LABELS]
    pos_lists = [list(EMISSIONS[label]) for label in LABELS]
    emit = [_cumulative(EMISSIONS[label], pos_lists[i]).tolist() for i, label in enumerate(LABELS)]
    all_pos = list(WORDS)
    word_cum = {pos: _zipf_cumulative(len(words)).tolist() for pos, words in WORDS.items()}

    tokens, labels = [], []
    lengths = rng.integers(min_length, max_length, endpoint=True, size=n_sentences)
    for n in lengths.tolist():
        # Five uniforms per token: label, POS, word, noise, noisy tag.
        uniforms = rng.random((n, 5)).tolist()
        sent_tokens, sent_labels = [], []
        state = bisect_right(start, uniforms[0][0])
        for t, (u_label, u_pos, u_word, u_noise, u_tag) in enumerate(uniforms):
            if t > 0:
                state = bisect_right(trans[state], u_label)
            pos = pos_lists[state][bisect_right(emit[state], u_pos)]
            word = WORDS[pos][bisect_right(word_cum[pos], u_word)]
            if u_noise < POS_NOISE:
                pos = all_pos[min(int(u_tag * len(all_pos)), len(all_pos) - 1)]
            sent_tokens.append([word, pos])
            sent_labels.append(LABELS[state])
        tokens.append(sent_tokens)
        labels.append(sent_labels)
    return tokens, labels


def _examples(X: Sequence[Any], y: Sequence[Any], predicted: Sequence[Any], n: int = 3,
              max_length: int = 12) -> list[tuple[Any, Any, Any]]:
    """Up to ``n`` short test sentences, the first with an error (if any) among them."""
    short = [(x, g, p) for x, g, p in zip(X, y, predicted) if len(x) <= max_length] or \
        list(zip(X, y, predicted))
    wrong = [k for k, (_, g, p) in enumerate(short) if g != p][:1]
    right = [k for k, (_, g, p) in enumerate(short) if g == p][:n - len(wrong)]
    return [short[k] for k in sorted(wrong + right)]


def run_demo(*, n_train: int = 800, n_test: int = 300, seed: int = 0,
             n_threads: Optional[int] = None, verbose: bool = True,
             out: Optional[TextIO] = sys.stdout, max_iterations: int = 100,
             n_unlabeled: int = 3000, n_few: int = 50) -> dict[str, Any]:
    """Train a CRF on HMM samples and score it on fresh ones; then, side by
    side, what unlabeled text and cheap supervision add to a few labels.

    Generates ``n_train + n_test`` sentences with :func:`generate_hmm_corpus`
    (the first ``n_train`` train, the rest test), trains
    ``CRF(templates="default", max_iterations=max_iterations)``, tags the test set and
    prints a conlleval-style chunk report with token accuracy and a few
    tagged test sentences. Then a table of chunk F1 on the same test set:
    models of the first ``n_few`` training sentences alone, with word
    representations from ``n_unlabeled`` unlabeled sentences, with
    ``n_few`` more sentences of the rest chosen by active learning (least
    confidence) or at random, with ``2 * n_few`` more of which half the
    tokens are labeled (as many labeled tokens as the ``n_few`` random
    ones, in expectation), and with the :data:`PROTOTYPES` words as labeled
    features (generalized expectation on the rest of the training
    sentences, unlabeled); those words alone, without a labeled sentence;
    and the full ``n_train`` with and without the representations.

    Parameters
    ----------
    n_train, n_test : int
        Number of training (≥ 1) and test (≥ 1) sentences.
    seed : int
        Seed of the corpus.
    n_threads : int or None
        Threads for training and tagging; None uses every core.
    verbose : bool
        Show training progress on stderr.
    out : text file or None
        Where the report goes; None prints nothing.
    max_iterations : int
        L-BFGS iteration limit (100; smaller for a quicker, rougher run).
    n_unlabeled : int
        Sentences of unlabeled text (another sample of the HMM) to learn
        :class:`sscrf.WordRepresentations` from; a second model reads their
        cluster ids as extra columns, scored side by side. 0: no such row.
    n_few : int
        The few labeled sentences of the side-by-side table, at most
        ``n_train // 3`` (the rest is the pool); 0: no table.

    Returns
    -------
    dict
        ``precision``, ``recall``, ``f1``, ``accuracy`` (fractions),
        ``chunk_scores`` (the full :func:`sscrf.metrics.chunk_scores` dict),
        ``n_train``, ``n_test``, ``n_train_tokens``, ``n_test_tokens``,
        ``iterations``, ``train_seconds`` and ``seconds`` (the whole demo);
        with ``n_unlabeled``, ``f1_representations``; with ``n_few``,
        ``side_by_side``: chunk F1 by row (``few``, ``few+representations``
        with ``n_unlabeled``, ``few+active``, ``few+random``,
        ``few+partial``, ``few+prototypes``, ``prototypes``).
    """
    if n_train < 1 or n_test < 1:
        raise SscrfError("run_demo needs n_train ≥ 1 and n_test ≥ 1")
    check_integer(n_few, "n_few", minimum=0)
    n_few = min(n_few, n_train // 3)  # the rest of n_train is the pool
    started = time.perf_counter()

    def say(text: str = "") -> None:
        if out is not None:
            print(text, file=out, flush=True)

    tokens, labels = generate_hmm_corpus(n_train + n_test, seed=seed)
    X_train, y_train = tokens[:n_train], labels[:n_train]
    X_test, y_test = tokens[n_train:], labels[n_train:]
    n_train_tokens = sum(map(len, y_train))
    n_test_tokens = sum(map(len, y_test))
    say(f"sscrf demo: {n_train} training sentences ({n_train_tokens} tokens) and {n_test} test "
        f"sentences ({n_test_tokens} tokens) from a chunking HMM, seed {seed}")

    # Any: fit sets training_ and classes_, which CRF does not declare
    model: Any = CRF(templates="default", max_iterations=max_iterations, n_threads=n_threads,
                     verbose=verbose)
    model.fit(X_train, y_train)
    train_seconds = model.training_["seconds"]
    say(f"trained: {len(model.classes_)} labels, {model.n_parameters_} parameters, "
        f"{model.training_['iterations']} iterations, {train_seconds:.2f} s")

    predicted = model.predict(X_test)
    scores = chunk_scores(y_test, predicted)
    accuracy = token_accuracy(y_test, predicted)
    say()
    say(format_chunk_report(scores, accuracy).rstrip("\n"))
    say()
    say("examples (word/POS gold → predicted; * marks an error):")
    for tokens_, gold, pred in _examples(X_test, y_test, predicted):
        cells = [f"{w}/{p} {g}" + ("" if g == q else f"→{q}*")
                 for (w, p), g, q in zip(tokens_, gold, pred)]
        say("  " + "  ".join(cells))
    f1_rep = rep = None
    if n_unlabeled > 0:
        unlabeled, _ = generate_hmm_corpus(n_unlabeled, seed=seed + 1)
        rep = WordRepresentations(n_threads=n_threads).fit([w for w, _ in s] for s in unlabeled)
        f1_rep = _with_representations(rep, X_train, y_train, X_test, y_test, n_threads,
                                       max_iterations)
    side = None
    if n_few > 0:
        side = _side_by_side(n_few, rep, X_train, y_train, X_test, y_test, seed, n_threads,
                             max_iterations)
        rows = [(f"{n_few} labeled sentences", side["few"])]
        if rep is not None:
            rows.append((f"  + word representations from {n_unlabeled} unlabeled sentences",
                         side["few+representations"]))
        rows += [(f"  + {n_few} more, picked by active learning (least confidence)",
                  side["few+active"]),
                 (f"  + {n_few} more, picked at random", side["few+random"]),
                 (f"  + {2 * n_few} more with half their tokens labeled (as many labels)",
                  side["few+partial"]),
                 (f"  + {len(PROTOTYPES)} labeled words (GE on the other "
                  f"{n_train - n_few}, unlabeled)", side["few+prototypes"]),
                 (f"{len(PROTOTYPES)} labeled words alone (GE), no labeled sentence",
                  side["prototypes"]),
                 (f"{n_train} labeled sentences (the model above)", scores["f1"])]
        if f1_rep is not None:
            rows.append(("  + word representations", f1_rep))
        say()
        say(f"side by side, chunk F1 on the {n_test} test sentences:")
        width = max(len(name) for name, _ in rows)
        for name, f1 in rows:
            say(f"  {name:<{width}}  {100 * f1:6.2f}")
    elif f1_rep is not None:
        say()
        say(f"side by side, chunk F1: {100 * scores['f1']:.2f} without, {100 * f1_rep:.2f} with "
            f"representations from {n_unlabeled} unlabeled sentences (cluster ids as columns)")
    seconds = time.perf_counter() - started
    say()
    say(f"total {seconds:.2f} s")
    return {
        "precision": scores["precision"],
        "recall": scores["recall"],
        "f1": scores["f1"],
        "accuracy": accuracy,
        "chunk_scores": scores,
        "n_train": n_train,
        "n_test": n_test,
        "n_train_tokens": n_train_tokens,
        "n_test_tokens": n_test_tokens,
        "iterations": model.training_["iterations"],
        "train_seconds": train_seconds,
        "seconds": seconds,
        **({} if f1_rep is None else {"f1_representations": f1_rep}),
        **({} if side is None else {"side_by_side": side}),
    }


def _rep_columns(rep: WordRepresentations,
                 sentences: list[list[list[str]]]) -> list[list[list[str]]]:
    """Tokens with the cluster ids of their word (and its HMM states) appended as columns."""
    return [[list(t) + c for t, c in zip(s, rep.columns([w for w, _ in s]))]
            for s in sentences]


def _with_representations(rep: WordRepresentations, X_train: list[list[list[str]]],
                          y_train: list[list[str]], X_test: list[list[list[str]]],
                          y_test: list[list[str]], n_threads: Optional[int],
                          max_iterations: int) -> float:
    """Chunk F1 of a model that also reads the cluster ids (and HMM states) of
    ``rep``, at -1, 0 and +1."""
    lines = [line for line in default_templates(2).lines if line != "B"]
    lines += [f"Urep{j}{d:+d}:%x[{d},{2 + j}]"
              for j in range(len(rep.clusters) + len(rep.hmms_)) for d in (-1, 0, 1)]
    model = CRF(templates=lines + ["B"], max_iterations=max_iterations, n_threads=n_threads)
    model.fit(_rep_columns(rep, X_train), y_train)
    return chunk_scores(y_test, model.predict(_rep_columns(rep, X_test)))["f1"]


def _side_by_side(n_few: int, rep: Optional[WordRepresentations],
                  X_train: list[list[list[str]]], y_train: list[list[str]],
                  X_test: list[list[list[str]]], y_test: list[list[str]], seed: int,
                  n_threads: Optional[int], max_iterations: int) -> dict[str, float]:
    """Chunk F1 of models of the first ``n_few`` training sentences, alone and
    with each kind of cheap help (see :func:`run_demo`); the rest of the
    training sentences are the pool that active learning and the random and
    partial rows draw from."""
    X_few, y_few = X_train[:n_few], y_train[:n_few]
    X_pool, y_pool = X_train[n_few:], y_train[n_few:]

    def f1(X: list[Any], y: list[Any]) -> float:
        model = CRF(templates="default", max_iterations=max_iterations, n_threads=n_threads)
        return chunk_scores(y_test, model.fit(X, y).predict(X_test))["f1"]

    few = CRF(templates="default", max_iterations=max_iterations, n_threads=n_threads)
    few.fit(X_few, y_few)
    out = {"few": chunk_scores(y_test, few.predict(X_test))["f1"]}
    if rep is not None:
        out["few+representations"] = _with_representations(rep, X_few, y_few, X_test, y_test,
                                                           n_threads, max_iterations)
    rng = np.random.default_rng(seed)
    for name, strategy in (("few+active", "least_confidence"), ("few+random", "random")):
        picked, _ = select(few, X_pool, strategy, n_few, random_state=rng)
        out[name] = f1(X_few + [X_pool[i] for i in picked], y_few + [y_pool[i] for i in picked])
    partial = [[label if rng.random() < 0.5 else None for label in labels]
               for labels in y_pool[:2 * n_few]]
    out["few+partial"] = f1(X_few + X_pool[:2 * n_few], y_few + partial)
    word = next(line.split(":")[0] for line in default_templates(2).lines
                if line.endswith(":%x[0,0]"))  # the template of the token's word
    constraints = majority_constraints({f"{word}:{w}": label for w, label in PROTOTYPES.items()},
                                       list(LABELS))
    for name, X, y in (("few+prototypes", X_few, y_few), ("prototypes", [], [])):
        model = CRF(templates="default", ge_weight=5.0, labels=list(LABELS),
                    max_iterations=max_iterations, n_threads=n_threads)
        model.fit(X, y, X_unlabeled=X_pool, constraints=constraints)
        out[name] = chunk_scores(y_test, model.predict(X_test))["f1"]
    return out
