"""Scratch memory. Large blocks are kept from one evaluation to the next
(cpp/runtime/block_cache.hpp): reusing them must not change a result, and training
gives them back when it ends. Corpora for models of many labels take
smaller chunks, so that a chunk's residual rows stay bounded."""

import numpy as np
import pytest

import sscrf
from sscrf import _core
from sscrf.objectives import OBJECTIVES
from test_objectives import big_corpus, dense_layout


def sparse_layout(rng, A, S):
    keep = rng.random((A, S)) < 0.4
    keep[::5] = False  # empty rows
    row_ptr = np.zeros(A + 1, dtype=np.int64)
    row_ptr[1:] = np.cumsum(keep.sum(axis=1))
    return row_ptr, np.nonzero(keep)[1].astype(np.int32)


def corpus_of(big, labeled=True):
    return _core.Corpus(big["indptr"], big["indices"], big["values"], big["offsets"], big["A"],
                        big["labels"] if labeled else None, big["weights"], None)


@pytest.mark.parametrize("kind", ["dense", "sparse"])
def test_reused_scratch_gives_the_same_bits(kind):
    # S = 7: a chunk's residual rows (32k tokens x 7) and, for the sparse
    # layout, the copy of the weight rows (3000 x 8 lanes) are large
    # enough to be cached.
    A, S = 3000, 7
    first, other = big_corpus(seed=4, n_tokens=50_000, A=A, S=S), big_corpus(seed=5, A=A, S=S)
    rng = np.random.default_rng(6)
    row_ptr, label_ids = dense_layout(A, S) if kind == "dense" else sparse_layout(rng, A, S)
    layout = _core.Layout(row_ptr, label_ids, S)
    theta = rng.normal(0.0, 0.5, size=layout.n_parameters)
    other_theta = rng.normal(0.0, 2.0, size=layout.n_parameters)
    corpus = corpus_of(first)

    _core.release_scratch()
    assert _core.cached_scratch_bytes() == 0
    loss, grad = _core.likelihood(corpus, layout, theta, 2)
    assert _core.cached_scratch_bytes() > 0
    # Other corpora, weights and kernels fill the cached blocks with other numbers.
    _core.likelihood(corpus_of(other), layout, other_theta, 1)
    OBJECTIVES["entropy"](corpus_of(other, labeled=False), layout, 2).value_and_gradient(
        other_theta)
    for n_threads in (2, 1):
        again, again_grad = _core.likelihood(corpus, layout, theta, n_threads)
        assert again == loss, n_threads
        assert np.array_equal(again_grad, grad), n_threads

    held = _core.cached_scratch_bytes()
    assert _core.release_scratch() == held > 0
    assert _core.cached_scratch_bytes() == 0
    after, after_grad = _core.likelihood(corpus, layout, theta, 2)
    assert after == loss and np.array_equal(after_grad, grad)


def test_training_gives_its_scratch_back():
    rng = np.random.default_rng(7)
    X = [[{f"w={rng.integers(500)}": 1.0, f"s={rng.integers(50)}": 1.0} for _ in range(20)]
         for _ in range(300)]
    y = [[f"L{rng.integers(4)}" for _ in range(20)] for _ in range(300)]
    held = []
    model = sscrf.CRF(max_iterations=3, verbose=False, n_threads=2)
    model.fit(X, y, callback=lambda *args: held.append(_core.cached_scratch_bytes()))
    assert held and max(held) > 0  # 6000 tokens x 4 labels: cached while training
    assert _core.cached_scratch_bytes() == 0


def test_concurrent_evaluations_share_the_cache_safely():
    # Calls release the GIL: two Python threads take and give back blocks at
    # the same time, each must still get its own result.
    import threading

    A, S = 3000, 7
    rng = np.random.default_rng(8)
    layout = _core.Layout(*dense_layout(A, S), S)
    jobs = []
    for seed in (9, 10):
        corpus = corpus_of(big_corpus(seed=seed, n_tokens=40_000, A=A, S=S))
        theta = rng.normal(0.0, 0.5, size=layout.n_parameters)
        jobs.append((corpus, theta, _core.likelihood(corpus, layout, theta, 1)))
    failures = []

    def work(corpus, theta, expected):
        for _ in range(6):
            loss, grad = _core.likelihood(corpus, layout, theta, 2)
            if loss != expected[0] or not np.array_equal(grad, expected[1]):
                failures.append(loss)

    threads = [threading.Thread(target=work, args=job) for job in jobs]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not failures


def test_training_corpora_take_smaller_chunks_past_128_labels():
    # A chunk's residual rows are tokens x labels doubles: with 300 labels
    # the training corpora take chunks of 2**22 / 300 tokens, not 32k.
    from sscrf import partial
    from sscrf.features import FeatureExtractor

    assert _core.chunk_tokens_for(22) == _core.chunk_tokens_for(128) == 32768
    assert _core.chunk_tokens_for(300) == 2**22 // 300
    with pytest.raises(ValueError, match="n_labels"):
        _core.chunk_tokens_for(0)
    rng = np.random.default_rng(16)
    S = 300
    X = [[{f"w={rng.integers(100)}": 1.0} for _ in range(50)] for _ in range(600)]
    ids = rng.integers(S, size=(600, 50))
    y = [[f"L{v}" for v in row] for row in ids.tolist()]
    (features,) = FeatureExtractor(None).fit_transform(X)
    row_ptr, label_ids = dense_layout(features.n_attributes, S)
    layout = _core.Layout(row_ptr, label_ids, S)
    labels = {f"L{i}": i for i in range(S)}
    token_labels = ids.ravel().astype(np.int32)
    (term,), _ = partial.labeled_terms(features, y, labels, None, layout, 1, token_labels)
    budget = _core.chunk_tokens_for(S)
    assert term.corpus.n_chunks == -(-features.n_tokens // budget) > 1
