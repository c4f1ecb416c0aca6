"""sscrf.WordRepresentations: counts, PPMI, SVD, nested clusters, features, files.

References are brute-force counts, a numpy PPMI and scipy/numpy's dense SVD.
"""

import collections
import hashlib
import json
import os
import re
import warnings

import numpy as np
import pytest
import scipy.sparse as sp

import sscrf
from sscrf import _core, serialization
from sscrf.cli import main
from sscrf.demo import run_demo
from sscrf.errors import SscrfError, SscrfTypeError
from sscrf.features import FeatureExtractor
from sscrf.representations import (WordRepresentations, _randomized_svd_vectors,
                                   word_shape_class)

CLASSES = {
    "DET": ["the", "a", "this", "every"],
    "NOUN": ["cat", "dog", "gene", "protein", "house", "kinase", "cell", "tree"],
    "VERB": ["sees", "binds", "likes", "activates", "finds", "blocks"],
    "ADJ": ["big", "small", "red", "active"],
}


def make_corpus(n, seed=0):
    """Sentences of a small grammar: words of a class share their contexts."""
    rng = np.random.default_rng(seed)
    pick = lambda c: CLASSES[c][rng.integers(len(CLASSES[c]))]  # noqa: E731
    out = []
    for _ in range(n):
        s = [pick("DET")]
        if rng.random() < 0.5:
            s.append(pick("ADJ"))
        s += [pick("NOUN"), pick("VERB"), pick("DET"), pick("NOUN")]
        out.append(s)
    return out


@pytest.fixture(scope="module")
def corpus():
    return make_corpus(1500)


@pytest.fixture(scope="module")
def fitted(corpus):
    # without the HMMs, which tests/test_hidden_states.py covers
    return WordRepresentations(dim=8, clusters=(2, 4, 8), n_threads=1, hmm_states=0).fit(corpus)


def brute_counts(sentences, window):
    c = collections.Counter()
    for s in sentences:
        for t, w in enumerate(s):
            for u in range(max(0, t - window), min(len(s), t + window + 1)):
                if u != t and w >= 0 and s[u] >= 0:
                    c[(w, int(u > t), s[u])] += 1
    return c


def test_counts_match_brute_force():
    rng = np.random.default_rng(1)
    sentences = [rng.integers(-1, 7, size=rng.integers(0, 9)).tolist() for _ in range(60)]
    ids = np.array([w for s in sentences for w in s], dtype=np.int32)
    offsets = np.concatenate([[0], np.cumsum([len(s) for s in sentences])]).astype(np.int64)
    for window in (1, 2, 3):
        for threads in (1, 2, 3):
            keys, counts = _core.cooccurrence_counts(ids, offsets, window, 7, threads)
            assert (np.diff(keys) > 0).all()
            got = {(int(k >> 32), int((k >> 31) & 1), int(k & 0x7FFFFFFF)): int(n)
                   for k, n in zip(keys, counts)}
            assert got == dict(brute_counts(sentences, window))
    with pytest.raises(SscrfError, match="below n_words"):
        _core.cooccurrence_counts(ids, offsets, 2, 3, 1)


def test_merge_counts():
    k, c = _core.merge_counts(np.array([1, 5, 9]), np.array([1, 2, 3]),
                              np.array([2, 5]), np.array([10, 20]))
    assert k.tolist() == [1, 2, 5, 9] and c.tolist() == [1, 10, 22, 3]


def test_ppmi_matches_numpy(corpus):
    rep = WordRepresentations(min_count=1)
    words, counts, keys, pair_counts, _ = rep._count(iter(corpus), 1, sscrf.progress.Progress(False))
    keep = rep._kept_words(counts)
    got = rep._ppmi(keep, len(counts), keys, pair_counts).toarray()
    # dense reference from a brute-force count
    ids = {w: i for i, w in enumerate(words)}
    row_of = {int(w): r for r, w in enumerate(keep)}
    V = len(keep)
    M = np.zeros((V, 2 * V))
    for (w, side, c), n in brute_counts([[ids[x] for x in s] for s in corpus], 2).items():
        M[row_of[w], side * V + row_of[c]] += n
    pc = M.sum(0) ** 0.75
    with np.errstate(divide="ignore", invalid="ignore"):
        pmi = np.log(M / M.sum()) - np.log(M.sum(1, keepdims=True) / M.sum()) \
            - np.log(pc / pc.sum())[None, :]
        ref = np.where(M > 0, np.maximum(pmi, 0), 0)
    np.testing.assert_allclose(got, ref, atol=1e-12)


def test_randomized_svd_spans_the_top_singular_subspace():
    rng = np.random.default_rng(0)
    U, _ = np.linalg.qr(rng.standard_normal((60, 60)))
    W, _ = np.linalg.qr(rng.standard_normal((90, 60)))
    s = 2.0 ** -np.arange(60)
    A = sp.csr_matrix((U * s) @ W.T)
    got = _randomized_svd_vectors(A, 5, np.random.default_rng(3), 2)
    Ur, sr, _ = np.linalg.svd(A.toarray())
    # U Σ up to the sign of each column
    ref = Ur[:, :5] * sr[:5]
    np.testing.assert_allclose(np.abs(got), np.abs(ref), atol=1e-8)
    # subspace agreement: the principal angles are 0
    Qg = np.linalg.qr(got)[0]
    np.testing.assert_allclose(np.linalg.svd(Qg.T @ Ur[:, :5])[1], 1.0, atol=1e-10)


def test_dense_products_against_numpy():
    rng = np.random.default_rng(2)
    A = sp.random(40, 30, density=0.2, random_state=3, format="csr")
    B = rng.standard_normal((30, 7))
    got = _core.csr_times_dense(A.indptr.astype(np.int64), A.indices.astype(np.int32),
                                A.data, B, 2)
    np.testing.assert_allclose(got, A @ B, rtol=1e-12, atol=1e-12)
    Y = rng.standard_normal((5000, 6))
    np.testing.assert_allclose(_core.gram_matrix(Y, 2), Y.T @ Y, rtol=1e-10)
    M = rng.standard_normal((6, 4))
    np.testing.assert_allclose(_core.times_small(Y, M, 2), Y @ M, rtol=1e-10, atol=1e-12)
    C = rng.standard_normal((5, 6))
    group = np.array([0] * 2500 + [1] * 2500, dtype=np.int64)
    near = _core.nearest_centroids(Y, C, group, np.array([0, 2, 5]), 2)
    dots = Y @ C.T
    ref = np.where(group == 0, dots[:, :2].argmax(1), 2 + dots[:, 2:].argmax(1))
    assert near.tolist() == ref.tolist()


def test_clusters_nest_and_group_the_classes(fitted):
    ids = fitted.clusters_
    for fine in range(ids.shape[1] - 1, 0, -1):
        for c in np.unique(ids[:, fine]):
            assert len(np.unique(ids[ids[:, fine] == c, fine - 1])) == 1
    assert ids[:, 0].max() < 2 and ids[:, 2].max() < 8
    # the nouns and the determiners are told apart at the coarsest level
    row = fitted.row
    assert ids[row("cat"), 1] == ids[row("dog"), 1] == ids[row("gene"), 1]
    assert ids[row("cat"), 1] != ids[row("the"), 1]
    np.testing.assert_allclose(np.linalg.norm(fitted.vectors_, axis=1), 1.0)


def test_deterministic_at_any_thread_count(corpus, fitted):
    runs = [WordRepresentations(dim=8, clusters=(2, 4, 8), n_threads=threads).fit(corpus)
            for threads in (1, 2, 4)]
    for other in runs:
        assert np.array_equal(other.vectors_, fitted.vectors_)
        assert np.array_equal(other.clusters_, fitted.clusters_)
        assert other.vocabulary_ == fitted.vocabulary_
        # the HMMs of the default settings too
        assert len(other.hmms_) == 3
        for a, b in zip(other.hmms_, runs[0].hmms_):
            assert all(np.array_equal(x, y) for x, y in zip(a, b))


def test_clusters_in_more_dimensions_than_the_vectors(corpus):
    # one SVD serves both: the vectors are its leading dim columns, the clusters are
    # found among its leading cluster_dim columns (each made unit length)
    both = WordRepresentations(dim=8, clusters=(2, 4, 8), n_threads=1).fit(corpus)
    short = WordRepresentations(dim=4, cluster_dim=8, clusters=(2, 4, 8), n_threads=1).fit(corpus)
    lead = both.vectors_[:, :4]
    np.testing.assert_allclose(short.vectors_, lead / np.linalg.norm(lead, axis=1)[:, None],
                               rtol=0, atol=1e-12)
    assert np.array_equal(short.clusters_, both.clusters_)
    # clusters among fewer dimensions than the vectors: those of the leading ones
    few = WordRepresentations(dim=8, cluster_dim=2, clusters=(2, 4, 8), n_threads=1).fit(corpus)
    assert np.array_equal(few.vectors_, both.vectors_)
    assert not np.array_equal(few.clusters_, both.clusters_)
    for bad in (0, 2.5, "8"):
        with pytest.raises(SscrfError, match="cluster_dim"):
            WordRepresentations(cluster_dim=bad).fit(corpus)


def test_one_shot_generator_and_types(corpus, fitted):
    rep = WordRepresentations(dim=8, clusters=(2, 4, 8), n_threads=1)
    rep.fit(s for s in corpus)
    assert np.array_equal(rep.vectors_, fitted.vectors_)
    with pytest.raises(SscrfTypeError, match="sentence 1"):
        WordRepresentations().fit([["a"], "b c"])
    with pytest.raises(SscrfError, match="increase"):
        WordRepresentations(clusters=(8, 4)).fit(corpus)
    with pytest.raises(SscrfError, match="min_count"):
        WordRepresentations(min_count=10**6).fit(corpus)
    with pytest.raises(SscrfError, match="no word has a context"):  # nothing for the SVD
        WordRepresentations(dim=2, clusters=(2,)).fit([w] for s in corpus for w in s)
    with pytest.raises(SscrfError, match="not fitted"):
        WordRepresentations().features(["a"])


def test_repr_shows_the_settings_changed_and_what_was_fitted(fitted, corpus):
    assert repr(WordRepresentations()) == "<WordRepresentations()>"
    n_tokens = sum(map(len, corpus))
    assert repr(fitted) == (f"<WordRepresentations(dim=8, clusters=(2, 4, 8), n_threads=1, "
                            f"hmm_states=0): "
                            f"{len(fitted.vocabulary_):,} words from {n_tokens:,} tokens>")


def test_prototypes_without_a_vector_are_warned_of_once(fitted):
    prototypes = {"N": ["dog", "Qzzx"], "X": ["zzqq"]}
    with pytest.warns(UserWarning, match=r"2 word\(s\) without a vector are left out "
                      r"\('Qzzx', 'zzqq'\); no prototype of 'X' is left"):
        f = fitted.features(["the", "dog"], prototypes=prototypes)
    assert f[1]["rep.proto[N]"] == 1.0 and not any("rep.proto[X]" in t for t in f)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        fitted.features(["the", "dog"], prototypes=prototypes)  # said once
    with pytest.warns(UserWarning, match=r"^prototypes: no prototype of 'X' is left"):
        fitted.features(["the"], prototypes={"N": ["dog"], "X": []})
    assert "clusters=array([2, 4])" in repr(WordRepresentations(clusters=np.array([2, 4])))


def test_features_keys_and_fallback(fitted):
    f = fitted.features(["The", "cat", "Zq9"], prototypes={"N": ["dog"], "D": ["a"]})
    ks = (2, 4, 8)
    cat = fitted.clusters_[fitted.row("cat")]
    assert f[1]["rep.c8[0]"] == str(cat[2]) and f[0]["rep.c2[+1]"] == str(cat[0])
    # "The" falls back to "the"; "Zq9" to its shape class, without vector features
    assert f[0]["rep.c4[0]"] == str(fitted.clusters_[fitted.row("the"), 1])
    assert f[2]["rep.c4[0]"] == word_shape_class("Zq9") == "~Xxd"
    assert f[0]["rep.c2[-1]"] == "<s>" and f[2]["rep.c8[+1]"] == "</s>"
    assert "rep.v" in f[1] and "rep.v" not in f[2]
    v = f[1]["rep.v"]
    assert v.dtype == np.float64 and v.shape == (fitted.vectors_.shape[1],)
    assert not v.flags.writeable  # one array shared by every token of the word
    np.testing.assert_allclose(np.linalg.norm(v), 6.0)  # the default scale
    # the extractor makes it one attribute per dimension, as a key per dimension would
    fx = FeatureExtractor()
    (got,) = fx.fit_transform([f])
    spelled = []
    for token in f:
        d = {}
        for k, x in token.items():
            if k == "rep.v":
                d.update({f"rep.v{j}": float(e) for j, e in enumerate(x)})
            else:
                d[k] = x
        spelled.append(d)
    fy = FeatureExtractor()
    (want,) = fy.fit_transform([spelled])
    assert fx.attributes_ == fy.attributes_ and "rep.v0" in fx.attributes_
    for name in ("indptr", "indices", "values"):
        assert np.array_equal(np.asarray(getattr(got, name)), np.asarray(getattr(want, name)))
    assert f[1].get("rep.proto[N]") == 1.0 and "rep.proto[D]" not in f[1]
    assert fitted.columns(["cat", "Zq9"]) == [[str(c) for c in cat], ["~Xxd"] * len(ks)]
    assert set(fitted.features(["cat"], context=0, vectors=False)[0]) == {
        "rep.c2[0]", "rep.c4[0]", "rep.c8[0]"}
    # into= updates the caller's dicts; the cached dict of a word is not shared
    mine = [{"w": "cat"}, {"w": "cat"}]
    got = fitted.features(["cat", "cat"], into=mine)
    assert got is mine and got[0]["w"] == "cat" and got[0]["rep.c8[+1]"] == str(cat[2])
    assert got[0] is not got[1]
    alone = {k: v for k, v in f[1].items() if k.endswith("[0]")}
    for k in ks:
        alone[f"rep.c{k}[-1]"], alone[f"rep.c{k}[+1]"] = "<s>", "</s>"
    single = fitted.features(["cat"])[0]
    assert np.array_equal(single.pop("rep.v"), f[1]["rep.v"]) and single == alone


def test_save_load_round_trip_and_refusals(fitted, tmp_path):
    path = tmp_path / "x.rep"
    fitted.save(path)
    back = WordRepresentations.load(path)
    assert back.vocabulary_ == fitted.vocabulary_
    assert back.cluster_dim is fitted.cluster_dim is None and back.dim == 8
    # a file from before cluster_dim: its clusters were found among its vectors
    meta, arrays = serialization.load(path)
    del meta["params"]["cluster_dim"]
    serialization.save(tmp_path / "old.rep", meta, arrays)
    assert WordRepresentations.load(tmp_path / "old.rep").cluster_dim is None
    other = WordRepresentations(dim=4, cluster_dim=6, clusters=(2, 4), n_threads=1)
    other.fit([["a", "b", "c", "a", "b"]] * 30 + [["c", "d", "a", "e"]] * 30)
    other.save(tmp_path / "six.rep")
    assert WordRepresentations.load(tmp_path / "six.rep").cluster_dim == 6
    assert np.array_equal(back.vectors_, fitted.vectors_)
    for a, b in zip(back.features(["a", "cat"]), fitted.features(["a", "cat"])):
        assert a.keys() == b.keys()
        assert all(np.array_equal(a[k], b[k]) if k == "rep.v" else a[k] == b[k] for k in a)
    data = path.read_bytes()
    bad = tmp_path / "bad.rep"
    bad.write_bytes(data[:-100])
    with pytest.raises(SscrfError, match="bad.rep"):
        WordRepresentations.load(bad)
    flipped = bytearray(data)
    flipped[len(data) // 2] ^= 1
    bad.write_bytes(bytes(flipped))
    with pytest.raises(SscrfError, match="corrupted"):
        WordRepresentations.load(bad)
    bad.write_text("the cat sees a dog\n")
    with pytest.raises(SscrfError, match="not an sscrf"):
        WordRepresentations.load(bad)
    model = sscrf.CRF(max_iterations=2).fit([[{"w": "a"}, {"w": "b"}]], [["X", "Y"]])
    model.save(bad)
    with pytest.raises(SscrfError, match="not a word-representations file"):
        WordRepresentations.load(bad)


def test_exported():
    assert sscrf.WordRepresentations is WordRepresentations


def _write_labeled(path, sentences):
    noun = set(CLASSES["NOUN"])
    with open(path, "w") as f:
        for s in sentences:
            f.write("".join(f"{w} {'B-N' if w in noun else 'O'}\n" for w in s) + "\n")


def test_cli_represent_train_tag_round_trip(tmp_path, capsys):
    raw, rep, model = tmp_path / "raw.txt", tmp_path / "x.rep", tmp_path / "m.model"
    raw.write_text("\n".join(" ".join(s) for s in make_corpus(800, 4)) + "\n")
    _write_labeled(tmp_path / "train.txt", make_corpus(20, 5))
    _write_labeled(tmp_path / "test.txt", make_corpus(20, 6))
    assert main(["represent", str(raw), "-o", str(rep), "--dim", "6", "--clusters", "2,4",
                 "--cluster-dim", "5", "-q", "--threads", "2"]) == 0
    # the file is what the Python API learns from the same text
    direct = WordRepresentations(dim=6, clusters=(2, 4), cluster_dim=5, n_threads=1).fit(
        line.split() for line in raw.read_text().splitlines())
    assert np.array_equal(WordRepresentations.load(rep).vectors_, direct.vectors_)
    assert np.array_equal(WordRepresentations.load(rep).clusters_, direct.clusters_)
    for a, b in zip(WordRepresentations.load(rep).hmms_, direct.hmms_):
        assert all(np.array_equal(x, y) for x, y in zip(a, b))
    assert WordRepresentations.load(rep).cluster_dim == 5
    for features in ("words", "columns"):
        assert main(["train", str(tmp_path / "train.txt"), "--features", features,
                     "--representations", str(rep), "-m", str(model), "-q",
                     "--max-iterations", "30"]) == 0
        loaded = sscrf.CRF.load(model)
        assert loaded.representations_["columns"] == 5  # 2 of cluster ids, 3 of HMM states
        assert any("rep" in t for t in loaded.templates)
        capsys.readouterr()
        assert main(["tag", "-m", str(model), str(tmp_path / "test.txt")]) == 0
        lines = [ln.split() for ln in capsys.readouterr().out.splitlines() if ln]
        assert len(lines[0]) == 3 and sum(a[1] == a[2] for a in lines) == len(lines)
    # sscrf compile adds no cluster columns: such a model is refused as its vocabulary
    capsys.readouterr()
    assert main(["compile", str(tmp_path / "train.txt"), "-o", str(tmp_path / "x.corpus"),
                 "--vocabulary", str(model), "-q"]) == 2
    assert "trained with --representations" in capsys.readouterr().err
    # --dev gets the cluster columns too: its score is the saved model's on it
    assert main(["train", str(tmp_path / "train.txt"), "--features", "words",
                 "--representations", str(rep), "-m", str(model), "-q", "--max-iterations",
                 "10", "--dev", str(tmp_path / "test.txt"), "--dev-period", "1"]) == 0
    best = sscrf.CRF.load(model).training_["dev"]["best_score"]
    capsys.readouterr()
    assert main(["eval", "-m", str(model), str(tmp_path / "test.txt")]) == 0
    fb1 = float(re.search(r"FB1:\s*([\d.]+)", capsys.readouterr().out).group(1))
    assert abs(fb1 - 100 * best) < 0.01
    # the next round of active learning: --init's model brings its representations
    again = tmp_path / "m2.model"
    assert main(["train", str(tmp_path / "test.txt"), "--init", str(model), "-m", str(again),
                 "-q", "--max-iterations", "10"]) == 0
    assert sscrf.CRF.load(again).representations_ == sscrf.CRF.load(model).representations_
    # sscrf dump names the file the model looks up, and the vectors it adds
    digest = hashlib.sha256(rep.read_bytes()).hexdigest()
    capsys.readouterr()
    assert main(["dump", str(model)]) == 0
    out = capsys.readouterr().out
    assert f"representations: {rep} (sha256 {digest[:16]}...): 5 column(s) of cluster ids (and HMM states)" in out
    assert "word vectors: 6 dimensions scaled by 6, as rep.v0 to rep.v5" in out
    assert main(["dump", str(model), "--json"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert document["representations"]["sha256"] == digest
    assert document["word_vectors"]["dim"] == 6
    # other representations at the recorded path: refused, and where the old ones went
    moved = tmp_path / "old.rep"
    rep.rename(moved)
    assert main(["represent", str(raw), "-o", str(rep), "--dim", "5", "-q"]) == 0
    capsys.readouterr()
    assert main(["tag", "-m", str(model), str(tmp_path / "test.txt")]) == 2
    assert "checksum differs" in capsys.readouterr().err
    assert main(["tag", "-m", str(model), str(tmp_path / "test.txt"),
                 "--representations", str(moved)]) == 0
    # a file given by hand is named as given, and checked as the recorded one is
    capsys.readouterr()
    for given, message in ((tmp_path / "none.rep", "none.rep: cannot read word-representations "
                            "file: No such file or directory"),
                           (tmp_path, "cannot read word-representations file: not a regular "
                            "file"),
                           (tmp_path / "test.txt", "checksum differs")):
        assert main(["tag", "-m", str(model), str(tmp_path / "test.txt"),
                     "--representations", str(given)]) == 2
        assert message in capsys.readouterr().err, given
    assert main(["train", str(tmp_path / "train.txt"), "-m", str(tmp_path / "m3.model"),
                 "--representations", str(tmp_path / "test.txt"), "-q"]) == 2
    assert "test.txt: not an sscrf word-representations file" in capsys.readouterr().err
    assert main(["tag", "-m", str(moved), str(tmp_path / "test.txt")]) == 2
    assert "not a CRF model but word representations" in capsys.readouterr().err
    # a pipe cannot be read again at tagging, nor its checksum taken after the read
    r, w = os.pipe()
    try:
        os.write(w, moved.read_bytes()[:4096])
        os.close(w)
        assert main(["train", str(tmp_path / "train.txt"), "-m", str(tmp_path / "p.model"),
                     "--representations", f"/dev/fd/{r}", "-q"]) == 2
    finally:
        os.close(r)
    assert "not a regular file: the model records" in capsys.readouterr().err


def test_symmetric_eigen_against_numpy():
    rng = np.random.default_rng(4)
    B = rng.standard_normal((30, 30))
    A = B @ B.T
    A = (A + A.T) / 2
    values, V = _core.symmetric_eigen(A)
    np.testing.assert_allclose(values, np.linalg.eigvalsh(A)[::-1], rtol=1e-10)
    np.testing.assert_allclose(V @ np.diag(values) @ V.T, A, atol=1e-9)
    np.testing.assert_allclose(V.T @ V, np.eye(30), atol=1e-12)
    with pytest.raises(SscrfError, match="symmetric"):
        _core.symmetric_eigen(B)


def test_demo_scores_representations_side_by_side():
    from_demo = run_demo(n_train=60, n_test=30, n_unlabeled=300, out=None,
                                    verbose=False, max_iterations=20, n_threads=1)
    assert 0 < from_demo["f1_representations"] <= 1
    assert "f1_representations" not in run_demo(
        n_train=20, n_test=10, n_unlabeled=0, out=None, verbose=False, max_iterations=5)


def test_cli_represent_reads_conll_and_refuses_what_does_not_fit(tmp_path, capsys):
    sentences = make_corpus(300, 7)
    conll = tmp_path / "raw.conll"
    conll.write_text("".join("".join(f"{w} X\n" for w in s) + "\n" for s in sentences))
    raw = tmp_path / "raw.txt"
    raw.write_text("\n".join(" ".join(s) for s in sentences) + "\n")
    a, b = tmp_path / "a.rep", tmp_path / "b.rep"
    assert main(["represent", str(conll), "--conll", "-o", str(a), "--dim", "4",
                 "--clusters", "2,4", "-q"]) == 0
    assert main(["represent", str(raw), "-o", str(b), "--dim", "4", "--clusters", "2,4",
                 "-q"]) == 0
    assert a.read_bytes() == b.read_bytes()
    conllu = tmp_path / "raw.conllu"  # a comment, a multiword token line, FORM in column 2
    conllu.write_text("".join(
        "# sent_id = %d\n1-2\tx\t_\t_\t_\t_\t_\t_\t_\t_\n" % k
        + "".join(f"{i}\t{w}\t{w.lower()}\tX\t_\t_\t0\tdep\t_\t_\n"
                  for i, w in enumerate(sent, 1)) + "\n"
        for k, sent in enumerate(sentences)))
    c = tmp_path / "c.rep"
    assert main(["represent", str(conllu), "--conllu", "-o", str(c), "--dim", "4",
                 "--clusters", "2,4", "-q"]) == 0
    assert c.read_bytes() == b.read_bytes()
    capsys.readouterr()
    assert main(["represent", str(raw), "-o", str(raw), "-q"]) == 2
    # a CoNLL file read as text: one word a line has no context; word + tag is warned of
    one = tmp_path / "one.conll"
    one.write_text("".join("".join(f"{w}\n" for w in s) + "\n" for s in sentences))
    assert main(["represent", str(one), "-o", str(b), "-q"]) == 2
    assert "no word has a context" in capsys.readouterr().err
    assert main(["represent", str(conll), "-o", str(b), "--dim", "4", "--clusters", "2,4",
                 "-q"]) == 0
    err = capsys.readouterr().err
    assert "warning" in err and "lines hold 2 word(s)" in err and "needs --conll" in err
    assert main(["represent", str(raw), "-o", str(b), "--dim", "4", "--clusters", "2,4",
                 "-q"]) == 0
    assert capsys.readouterr().err == ""
    assert main(["represent", str(raw), "-o", str(b), "--clusters", "4,2"]) == 2
    # the library's "sentences" are the file here; clusters past the words are said capped
    empty = tmp_path / "empty.txt"
    empty.write_text("")
    capsys.readouterr()
    assert main(["represent", str(empty), "-o", str(b), "-q"]) == 2
    assert f"error: {empty}: no word occurs min_count=2 times" in capsys.readouterr().err
    tiny = tmp_path / "tiny.txt"
    tiny.write_text("a b c\na b c\n")
    assert main(["represent", str(tiny), "-o", str(b), "-q"]) == 0
    assert "3 words from 6 tokens, 3 dimensions, clusters at 32, 128, 512, 2048 (each at " \
        "most 3, the words)" in capsys.readouterr().out
    _write_labeled(tmp_path / "train.txt", make_corpus(10, 8))
    model = tmp_path / "m.model"
    assert main(["train", str(tmp_path / "train.txt"), "-m", str(model), "-q",
                 "--max-iterations", "5"]) == 0
    capsys.readouterr()
    assert main(["tag", "-m", str(model), str(tmp_path / "train.txt"),
                 "--representations", str(a)]) == 2
    assert "trained without --representations" in capsys.readouterr().err
