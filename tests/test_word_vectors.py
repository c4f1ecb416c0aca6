"""Word vectors as template features (sscrf.WordVectors, CRF(word_vectors=...)).

The reference for every token is the template extractor without vectors plus
the ``"rep.v"`` array that WordRepresentations.features gives the dict path.
"""

import numpy as np
import pytest

import sscrf
from sscrf.cli import main
from sscrf.errors import SscrfError, SscrfTypeError
from sscrf.features import FeatureExtractor, Vocabulary, default_templates
from sscrf.representations import WordRepresentations, WordVectors

from test_representations import _write_labeled, make_corpus


@pytest.fixture(scope="module")
def rep():
    return WordRepresentations(dim=6, clusters=(2, 4), n_threads=1).fit(make_corpus(600, 1))


def column_sentences(seed, n=40):
    """Token columns (word, upper-cased word), with unseen and capitalised words
    and an empty sentence."""
    rng = np.random.default_rng(seed)
    out = [[[w, w.upper()] for w in s] for s in make_corpus(n, seed)]
    for s in out[::3]:
        s[0][0] = s[0][0].capitalize()  # found by its lower-cased form
    for s in out[1::4]:
        s.insert(int(rng.integers(len(s) + 1)), ["Zq9-x", "ZQ9"])  # no vector
    out.insert(5, [])
    return out


def token_dicts(fx, features):
    """{attribute: value} of every token of a Features."""
    names = fx.attributes_
    out = []
    for t in range(features.n_tokens):
        a, b = features.indptr[t], features.indptr[t + 1]
        ids = np.asarray(features.indices[a:b])
        assert (np.diff(ids) > 0).all()  # ascending within the token
        out.append({names[i]: float(v) for i, v in zip(ids, np.asarray(features.values[a:b]))})
    return out


def reference(rep, sentences, scale):
    """Per token: the template attributes (an extractor without vectors) and the
    vector entries of WordRepresentations.features."""
    out = []
    plain = FeatureExtractor(default_templates(2))
    for s in sentences:
        if not s:
            continue
        dicts = rep.features([t[0] for t in s], scale=scale)
        for entries, d in zip(plain.attribute_strings(s), dicts):
            token = {}
            for name, value in entries:
                token[name] = token.get(name, 0.0) + value
            if "rep.v" in d:
                token.update({f"rep.v{j}": float(x) for j, x in enumerate(d["rep.v"])})
            out.append(token)
    return out


@pytest.mark.parametrize("scale", [1.0, 6.0])
def test_template_vectors_are_the_dict_features(rep, scale):
    X = column_sentences(0)
    fx = FeatureExtractor(default_templates(2), word_vectors=rep.word_vectors(0, scale))
    (got,) = fx.fit_transform(X)
    want = reference(rep, X, scale)
    assert token_dicts(fx, got) == want
    assert any("rep.v0" in t for t in want) and any("rep.v0" not in t for t in want)
    again = fx.transform(X)
    for name in ("indptr", "indices", "values", "offsets"):
        assert np.array_equal(np.asarray(getattr(again, name)), np.asarray(getattr(got, name)))
    # the vector attributes are consecutive ids, in dimension order
    ids = [fx.attributes_.index(f"rep.v{j}") for j in range(6)]
    assert ids == list(range(ids[0], ids[0] + 6))
    # attribute_strings: the same extraction, before the vocabulary
    s = X[0]
    assert [dict(e) for e in fx.attribute_strings(s)] == want[:len(s)]


def test_vocabulary_cut_and_other_orders(rep):
    X = column_sentences(1)
    want = reference(rep, X, 6.0)
    wv = rep.word_vectors()
    fx = FeatureExtractor(default_templates(2), word_vectors=wv).fit(X)
    # a vocabulary in another order: the vector ids are no longer consecutive
    rng = np.random.default_rng(2)
    shuffled = [fx.attributes_[i] for i in rng.permutation(len(fx.attributes_))]
    other = FeatureExtractor(default_templates(2), word_vectors=wv)
    other.set_vocabulary(Vocabulary(shuffled, 2))
    assert token_dicts(other, other.transform(X)) == want
    # a vocabulary without some dimensions keeps the others
    kept = [a for a in fx.attributes_ if a not in ("rep.v0", "rep.v3")]
    cut = FeatureExtractor(default_templates(2), word_vectors=wv)
    cut.set_vocabulary(Vocabulary(kept, 2))
    assert token_dicts(cut, cut.transform(X)) == [
        {k: v for k, v in t.items() if k not in ("rep.v0", "rep.v3")} for t in want]


def test_crf_with_template_vectors_is_the_dict_model(rep, tmp_path):
    train = [s for s in column_sentences(3, 60) if s]
    test = column_sentences(4, 30)
    noun = set(sum(([w, w.capitalize()] for w in ("cat", "dog", "gene", "protein", "house",
                                                   "kinase", "cell", "tree")), []))
    y = [["N" if t[0] in noun else "O" for t in s] for s in train]
    wv = rep.word_vectors()
    model = sscrf.CRF(templates=default_templates(2), word_vectors=wv, max_iterations=40,
                      n_threads=1, feature_set="dense").fit(train, y)
    assert "rep.v0" in model.extractor_.attributes_

    def as_dicts(sentences):
        plain = FeatureExtractor(default_templates(2))
        out = []
        for s in sentences:
            out.append([dict(e) for e in plain.attribute_strings(s)] if s else [])
            if s:
                rep.features([t[0] for t in s], into=out[-1], context=0, states=False)
                for d in out[-1]:
                    for k in [k for k in d if k.startswith("rep.c")]:
                        del d[k]
        return out

    dicts = sscrf.CRF(max_iterations=40, n_threads=1, feature_set="dense").fit(
        as_dicts(train), y)
    assert model.predict(test) == dicts.predict(as_dicts(test))
    for a, b in zip(model.predict_marginals_array(test),
                    dicts.predict_marginals_array(as_dicts(test))):
        np.testing.assert_allclose(a, b, atol=1e-6)
    # a saved model records the setting, not the vectors: bound again after loading
    path = tmp_path / "m.model"
    model.save(path)
    loaded = sscrf.CRF.load(path)
    assert loaded.word_vectors is None
    with pytest.raises(SscrfError, match="bind_word_vectors"):
        loaded.predict(test)
    with pytest.raises(SscrfError, match="scale"):
        loaded.bind_word_vectors(rep.word_vectors(0, 3.0))
    other = WordRepresentations(dim=6, clusters=(2, 4), n_threads=1).fit(make_corpus(600, 9))
    with pytest.raises(SscrfError, match="sha256"):
        loaded.bind_word_vectors(other.word_vectors())
    assert loaded.bind_word_vectors(rep.word_vectors()).predict(test) == model.predict(test)


def test_clone_shares_the_read_only_vectors(rep):
    from sklearn.base import clone

    wv = rep.word_vectors()
    model = sscrf.CRF(templates=default_templates(2), word_vectors=wv)
    assert clone(model).word_vectors is wv
    with pytest.raises(ValueError):
        wv.table[0, 0] = 1.0


def test_refusals(rep, tmp_path):
    wv = rep.word_vectors()
    with pytest.raises(SscrfError, match="templates"):
        FeatureExtractor(None, word_vectors=wv)
    with pytest.raises(SscrfError, match="hash_features"):
        FeatureExtractor(default_templates(2), hash_features=2 ** 10, word_vectors=wv)
    with pytest.raises(SscrfTypeError, match="WordVectors"):
        FeatureExtractor(default_templates(2), word_vectors=rep)
    with pytest.raises(SscrfTypeError, match="WordRepresentations"):
        WordVectors("not fitted")
    with pytest.raises(SscrfError, match="not fitted"):
        WordRepresentations().word_vectors()
    with pytest.raises(SscrfError, match="scale"):
        rep.word_vectors(0, 0.0)
    fx = FeatureExtractor(default_templates(1), word_vectors=rep.word_vectors(1))
    with pytest.raises(SscrfError, match="sentence 0, token 1.*column 1"):
        fx.fit([[["cat", "N"], ["dog"]]])
    with pytest.raises(SscrfTypeError, match="column 1 is int"):
        fx.fit([[["cat", 3]]])
    # a bad spec in a model file's feature state
    state = FeatureExtractor(default_templates(2), word_vectors=wv).fit(
        column_sentences(0)).to_state()
    assert state["word_vectors"] == wv.spec
    FeatureExtractor.from_state(state)
    for bad in ({**wv.spec, "dim": -1}, {**wv.spec, "scale": "6"}, {"name": "rep.v"}):
        with pytest.raises(SscrfError, match="feature state"):
            FeatureExtractor.from_state({**state, "word_vectors": bad})
    # compiled corpora hold template features only
    path = tmp_path / "u.corpus"
    sscrf.compile_corpus_file([[["cat", "CAT"]]], path, templates=default_templates(2))
    model = sscrf.CRF(templates=default_templates(2), word_vectors=wv, max_iterations=2,
                      entropy_weight=0.1, labels=["N", "O"])
    with pytest.raises(SscrfError, match="word_vectors"):
        model.fit([[["cat", "CAT"]]], [["N"]], X_unlabeled=sscrf.CompiledCorpus.open(path))
    model.set_params(entropy_weight=0).fit([[["cat", "CAT"]], [["a", "A"]]], [["N"], ["O"]])
    with pytest.raises(SscrfError, match="word vectors"):
        sscrf.compile_corpus_file([[["cat", "CAT"]]], tmp_path / "v.corpus", vocabulary=model)


def test_cli_train_adds_the_vectors(tmp_path, capsys):
    raw, rep_path = tmp_path / "raw.txt", tmp_path / "x.rep"
    raw.write_text("\n".join(" ".join(s) for s in make_corpus(800, 4)) + "\n")
    _write_labeled(tmp_path / "train.txt", make_corpus(20, 5))
    _write_labeled(tmp_path / "test.txt", make_corpus(20, 6))
    assert main(["represent", str(raw), "-o", str(rep_path), "--dim", "6", "--clusters", "2,4",
                 "-q"]) == 0
    runs = {}
    for scale in (None, "2.5", "0"):
        model = tmp_path / f"m{scale}.model"
        extra = [] if scale is None else ["--vector-scale", scale]
        assert main(["train", str(tmp_path / "train.txt"), "--representations",
                     str(rep_path), "-m", str(model), "-q", "--max-iterations", "30"]
                    + extra) == 0
        loaded = sscrf.CRF.load(model)
        spec = loaded.extractor_.vector_spec_
        runs[scale] = (loaded, spec)
        capsys.readouterr()
        assert main(["tag", "-m", str(model), str(tmp_path / "test.txt")]) == 0
        tagged = [ln.split()[-1] for ln in capsys.readouterr().out.splitlines() if ln]
        # the command line's tags are the Python model's, vectors bound from the file
        if spec is not None:
            loaded.bind_word_vectors(WordRepresentations.load(rep_path).word_vectors(
                0, spec["scale"]))
        rep = WordRepresentations.load(rep_path)
        sentences = [[[w] + c for w, c in zip(s, rep.columns(s))]
                     for s in make_corpus(20, 6)]
        assert tagged == sum(loaded.predict(sentences), [])
    assert runs[None][1]["scale"] == 6.0 and runs["2.5"][1]["scale"] == 2.5
    assert runs["0"][1] is None and "rep.v0" not in runs["0"][0].extractor_.attributes_
    assert "rep.v0" in runs[None][0].extractor_.attributes_
    # --init keeps the setting; another scale is refused
    assert main(["train", str(tmp_path / "test.txt"), "--init", str(tmp_path / "m2.5.model"),
                 "-m", str(tmp_path / "again.model"), "-q", "--max-iterations", "5"]) == 0
    assert sscrf.CRF.load(tmp_path / "again.model").extractor_.vector_spec_["scale"] == 2.5
    capsys.readouterr()
    assert main(["train", str(tmp_path / "test.txt"), "--init", str(tmp_path / "m2.5.model"),
                 "--vector-scale", "6", "-m", str(tmp_path / "x.model"), "-q"]) == 2
    assert "--vector-scale 2.5" in capsys.readouterr().err
    assert main(["train", str(tmp_path / "train.txt"), "--vector-scale", "6",
                 "-m", str(tmp_path / "x.model"), "-q"]) == 2
    assert "--vector-scale goes with --representations" in capsys.readouterr().err
    assert main(["train", str(tmp_path / "train.txt"), "--representations", str(rep_path),
                 "--hash-features", "1024", "-m", str(tmp_path / "x.model"), "-q"]) == 2
    assert "--vector-scale 0" in capsys.readouterr().err
    assert main(["train", str(tmp_path / "train.txt"), "--representations", str(rep_path),
                 "--hash-features", "1024", "--vector-scale", "0", "-m",
                 str(tmp_path / "x.model"), "-q"]) == 0
