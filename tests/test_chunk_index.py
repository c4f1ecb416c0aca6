"""The chunk index kept or built per evaluation, and GE's firings found per chunk.

A corpus keeps its chunks' attribute -> token indices only up to
``kept_index_bytes`` (all of them by default when it holds its arrays, 32 MiB
when it views a mapped file); the others are built during each evaluation.
Either way every objective must give the same bits, at 1 and 2 threads.
"""

import numpy as np
import pytest
import scipy.sparse as sp
from reference import zipf_rows

from sscrf import _core
from sscrf.errors import SscrfError
from sscrf.layout import ParameterLayout

A, S = 400, 4


def data(seed=0, n_tokens=6000, with_values=True):
    rng = np.random.default_rng(seed)
    lengths = rng.integers(1, 15, size=n_tokens // 7)
    indptr, indices, offsets = zipf_rows(rng, lengths, A, max_count=5, scale=20)
    values = rng.normal(size=len(indices)) if with_values else np.ones(len(indices))
    labels = rng.integers(0, S, size=int(offsets[-1])).astype(np.int32)
    return dict(indptr=indptr, indices=indices, values=values, offsets=offsets, labels=labels)


def corpus(d, kept=-1, labels=True, mask=None, readonly=False):
    arrays = [d["indptr"], d["indices"], d["values"], d["offsets"]]
    if readonly:  # viewed, as a memory-mapped corpus file's arrays are
        arrays = [a.copy() for a in arrays]
        for a in arrays:
            a.flags.writeable = False
    return _core.Corpus(*arrays, A, d["labels"] if labels else None, None, mask,
                        chunk_tokens=500, kept_index_bytes=kept)


def layouts():
    dense = ParameterLayout.every_pair(A, S)
    rng = np.random.default_rng(5)
    rows = [sorted(rng.choice(S, size=int(rng.integers(0, S + 1)), replace=False).tolist())
            for _ in range(A)]
    row_ptr = np.concatenate([[0], np.cumsum([len(r) for r in rows])]).astype(np.int64)
    label_ids = np.array([x for r in rows for x in r], dtype=np.int32)
    return {"dense": (dense.row_ptr, dense.label_ids),
            "sparse": (row_ptr, label_ids)}


def evaluations(d, kept, row_ptr, label_ids):
    """Every chunked objective's (loss, gradient) at 1 and 2 threads."""
    layout = _core.Layout(row_ptr, label_ids, S)
    theta = np.random.default_rng(9).normal(0.0, 0.5, layout.n_parameters)
    labelled, plain = corpus(d, kept), corpus(d, kept, labels=False)
    rng = np.random.default_rng(4)
    mask = np.ones((len(d["labels"]), S), dtype=bool)
    pinned = rng.random(len(d["labels"])) < 0.5
    mask[pinned] = False
    mask[pinned, d["labels"][pinned]] = True
    partial = corpus(d, kept, labels=False, mask=mask)
    cmap = np.full(A, -1, dtype=np.int64)
    cmap[[0, 3, 7]] = [0, 1, 2]
    firings = _core.ConstraintFirings(plain, cmap, 3)
    viewed = corpus(d, kept, labels=False, readonly=True)  # firings found per chunk
    viewed_firings = _core.ConstraintFirings(viewed, cmap, 3)
    weights = rng.normal(size=(3, S))
    out = {}
    for th in (1, 2):
        out[f"likelihood@{th}"] = _core.likelihood(labelled, layout, theta, th)
        out[f"entropy@{th}"] = _core.entropy_objective(plain, layout, theta, th)
        out[f"partial@{th}"] = _core.partial_likelihood(partial, layout, theta, th)
        out[f"ge_expectations@{th}"] = (0.0, _core.ge_expectations(plain, layout, theta, th,
                                                                   firings))
        out[f"ge_gradient@{th}"] = (0.0, _core.ge_gradient(plain, layout, theta, th, firings,
                                                           weights))
        out[f"ge_expectations_viewed@{th}"] = (0.0, _core.ge_expectations(
            viewed, layout, theta, th, viewed_firings))
        out[f"ge_gradient_viewed@{th}"] = (0.0, _core.ge_gradient(
            viewed, layout, theta, th, viewed_firings, weights))
    return out


@pytest.mark.parametrize("kind", ["dense", "sparse"])
@pytest.mark.parametrize("with_values", [True, False])
def test_built_per_evaluation_gives_the_kept_index_bits(kind, with_values):
    d = data(1, with_values=with_values)
    row_ptr, label_ids = layouts()[kind]
    everything = evaluations(d, -1, row_ptr, label_ids)
    for kept in (0, 3000):  # none kept; the first few chunks kept
        got = evaluations(d, kept, row_ptr, label_ids)
        for name, (loss, grad) in everything.items():
            assert got[name][0] == loss, (kept, name)
            np.testing.assert_array_equal(got[name][1], grad, err_msg=f"{kept} {name}")
    for pass_ in ("ge_expectations", "ge_gradient"):  # firings kept or found per chunk
        np.testing.assert_array_equal(everything[f"{pass_}_viewed@1"][1],
                                      everything[f"{pass_}@1"][1])
    for name in everything:  # and the thread count changes nothing
        if name.endswith("@2"):
            np.testing.assert_array_equal(everything[name][1], everything[name[:-1] + "1"][1])


def test_likelihood_gradient_from_built_index_matches_numpy():
    # Xᵀ·(p − onehot(y)) by scipy from the decoder's marginals (which read no
    # chunk index), against the back-projection over indices built per
    # evaluation.
    d = data(2)
    row_ptr, label_ids = layouts()["sparse"]
    layout = _core.Layout(row_ptr, label_ids, S)
    theta = np.random.default_rng(3).normal(0.0, 0.5, layout.n_parameters)
    built = corpus(d, kept=0)
    _, grad = _core.likelihood(built, layout, theta, 2)
    assert built.kept_index_bytes == 0 and built.n_chunks > 5
    node, _ = _core.marginals_corpus(corpus(d, labels=False), layout, theta, 1)
    X = sp.csr_matrix((d["values"], d["indices"], d["indptr"]), shape=(len(d["labels"]), A))
    residual = node - np.eye(S)[d["labels"]]
    dW = X.T @ residual
    attrs = np.repeat(np.arange(A), np.diff(row_ptr))
    n_weights = len(label_ids)
    np.testing.assert_allclose(grad[:n_weights], dW[attrs, label_ids], rtol=1e-9, atol=1e-9)


def test_kept_index_budget():
    d = data(3)
    everything = corpus(d)
    assert everything.n_chunks > 5 and everything.kept_index_bytes > 0
    viewed = corpus(d, readonly=True)  # a small viewed corpus fits the 32 MiB
    assert viewed.kept_index_bytes == everything.kept_index_bytes
    some = corpus(d, kept=everything.kept_index_bytes // 3)
    assert 0 < some.kept_index_bytes <= everything.kept_index_bytes // 3
    assert corpus(d, kept=0).kept_index_bytes == 0
    # the back-projection's work items are the same, kept or built
    assert corpus(d, kept=0).n_back_projection_blocks == everything.n_back_projection_blocks
    with pytest.raises(SscrfError, match="kept_index_bytes"):
        corpus(d, kept=-2)


def test_ge_firings_refuse_another_corpus():
    d = data(4)
    plain = corpus(d, labels=False)
    cmap = np.full(A, -1, dtype=np.int64)
    cmap[0] = 0
    firings = _core.ConstraintFirings(plain, cmap, 1)
    assert firings.counts[0] == np.count_nonzero(d["indices"] == 0)
    other = data(5)
    layout = ParameterLayout.every_pair(A, S).core
    theta = np.zeros(layout.n_parameters)
    with pytest.raises(SscrfError, match="another corpus"):
        _core.ge_expectations(corpus(other, labels=False), layout, theta, 1, firings)
