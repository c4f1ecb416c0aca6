"""Several compiled corpus files (shards) opened as one corpus."""

import os

import numpy as np
import pytest

from sscrf.corpus_file import CompiledCorpus, compile_corpus_file
from sscrf.errors import SscrfError

WORDS = "the cat sat on a mat while dogs ran far".split()


def sentences(seed, n):
    rng = np.random.default_rng(seed)
    return [[[WORDS[i]] for i in rng.integers(0, len(WORDS), size=int(rng.integers(1, 8)))]
            for _ in range(n)]


def write_conll(path, sents, labels):
    with open(path, "w", encoding="utf-8") as f:
        for s, ls in zip(sents, labels):
            f.writelines(f"{tok[0]} {label}\n" for tok, label in zip(s, ls))
            f.write("\n")


def arrays(corpus):
    f = corpus.features()
    return [np.asarray(a) for a in (f.indptr, f.indices, f.offsets)]


def test_shards_open_as_the_corpus_of_their_sentences(tmp_path):
    a, b, c = sentences(1, 30), sentences(2, 20), sentences(3, 25)
    first = CompiledCorpus.build(a, tmp_path / "part-0.corpus")
    for k, part in ((1, b), (2, c)):
        compile_corpus_file(part, tmp_path / f"part-{k}.corpus", vocabulary=first)
    # reference: the three parts' sentences compiled as one file
    whole = CompiledCorpus.build(a + b + c, tmp_path / "whole.corpus", vocabulary=first)
    for opened in (CompiledCorpus.open([tmp_path / f"part-{k}.corpus" for k in range(3)]),
                   CompiledCorpus.open(str(tmp_path / "part-*.corpus"))):
        assert (opened.n_tokens, opened.n_sentences, opened.nnz) == (
            whole.n_tokens, whole.n_sentences, whole.nnz)
        for got, want in zip(arrays(opened), arrays(whole)):
            np.testing.assert_array_equal(got, want)
        assert opened.attributes == first.attributes
        assert len(opened.paths) == 3 and "part-0" in opened.path
    # the merged file is mapped, not left on disk
    assert not [n for n in os.listdir(tmp_path) if n.startswith(".sscrf-shards-")]


def test_labeled_shards_keep_each_tokens_label(tmp_path):
    a, b = sentences(4, 15), sentences(5, 15)
    rng = np.random.default_rng(6)
    la = [[["B", "I"][i] for i in rng.integers(0, 2, len(s))] for s in a]
    lb = [[["O", "I", "B"][i] for i in rng.integers(0, 3, len(s))] for s in b]
    write_conll(tmp_path / "a.txt", a, la)
    write_conll(tmp_path / "b.txt", b, lb)
    first = CompiledCorpus.build(tmp_path / "a.txt", tmp_path / "a.corpus", has_labels=True)
    compile_corpus_file(tmp_path / "b.txt", tmp_path / "b.corpus", vocabulary=first,
                        has_labels=True)
    opened = CompiledCorpus.open([tmp_path / "a.corpus", tmp_path / "b.corpus"])
    got = [opened.label_names[i] for i in np.asarray(opened.labels)]
    assert got == [x for ls in la + lb for x in ls]


def test_shards_of_other_vocabularies_are_refused(tmp_path):
    CompiledCorpus.build(sentences(7, 10), tmp_path / "x.corpus")
    CompiledCorpus.build(sentences(8, 10)[:3], tmp_path / "y.corpus")
    with pytest.raises(SscrfError, match="another vocabulary"):
        CompiledCorpus.open([tmp_path / "x.corpus", tmp_path / "y.corpus"])
    with pytest.raises(SscrfError, match="no compiled corpus file matches"):
        CompiledCorpus.open(str(tmp_path / "none-*.corpus"))
    with pytest.raises(SscrfError, match="empty"):
        CompiledCorpus.open([])


def labeled(seed, n):
    sents = sentences(seed, n)
    # a label the words decide, so that the models have something to learn
    return sents, [["N" if tok[0] in ("cat", "mat", "dogs") else "O" for tok in s]
                   for s in sents]


def test_compiled_corpus_with_labels_as_X_trains_the_model_of_its_sentences(tmp_path):
    import sscrf

    sents, labels = labeled(9, 60)
    write_conll(tmp_path / "train.txt", sents, labels)
    corpus = CompiledCorpus.build(tmp_path / "train.txt", tmp_path / "train.corpus",
                                  has_labels=True)
    params = dict(max_iterations=30, c2=0.1, templates="default")
    from_sentences = sscrf.CRF(**params).fit(sents, labels)
    from_corpus = sscrf.CRF(**params).fit(corpus, None)
    assert sorted(from_corpus.extractor_.attributes_) == sorted(
        from_sentences.extractor_.attributes_)
    assert from_corpus.classes_ == from_sentences.classes_
    test = sentences(10, 20)
    assert from_corpus.predict(test) == from_sentences.predict(test)
    for a, b in zip(from_corpus.predict_marginals(test), from_sentences.predict_marginals(test)):
        for p, q in zip(a, b):
            assert p.keys() == q.keys()
            np.testing.assert_allclose([p[k] for k in p], [q[k] for k in p], atol=1e-6)
    with pytest.raises(SscrfError, match="y=None"):
        sscrf.CRF(**params).fit(corpus, labels)
    unlabeled = CompiledCorpus.build(sents, tmp_path / "plain.corpus")
    with pytest.raises(SscrfError, match="has_labels=True"):
        sscrf.CRF(**params).fit(unlabeled, None)


def test_compiled_X_with_unlabeled_data(tmp_path):
    import sscrf

    sents, labels = labeled(11, 40)
    write_conll(tmp_path / "train.txt", sents, labels)
    corpus = CompiledCorpus.build(tmp_path / "train.txt", tmp_path / "train.corpus",
                                  has_labels=True)
    more = sentences(12, 40)
    mapped = CompiledCorpus.build(more, tmp_path / "more.corpus", vocabulary=corpus)
    params = dict(max_iterations=5, templates="default", entropy_weight=0.1)
    # unlabeled sentences take the compiled X's vocabulary, as a mapped corpus of them does
    from_list = sscrf.CRF(**params).fit(corpus, None, X_unlabeled=more)
    from_file = sscrf.CRF(**params).fit(corpus, None, X_unlabeled=mapped)
    assert from_list.extractor_.attributes_ == corpus.attributes
    np.testing.assert_array_equal(from_list.coef_, from_file.coef_)
