"""Compiled corpora on disk (sscrf.corpus_file and ``sscrf compile``).

References: a file compiled with a vocabulary counted in the first pass is
compared with today's in-memory extraction (``FeatureExtractor.fit_transform``
on the whole corpus, one pass), arrays element for element; a model trained
with a compiled ``X_unlabeled`` under the vocabulary today's ``fit`` builds
is compared with the model ``fit`` trains from lists, bit for bit. Bad files
are made by hand from a good one (cut, flipped, sizes rewritten with a valid
header checksum).
"""

import hashlib
import os
import struct
import warnings

import numpy as np
import pytest

import sscrf
from sscrf import CRF, SscrfError
from sscrf.corpus_file import (MAGIC, CompiledCorpus, compile_corpus_file,
                               vocabulary_checksum)
from sscrf.demo import generate_hmm_corpus
from sscrf.features import FeatureExtractor, default_templates
from sscrf.io import write_conll
from cli_common import assert_error, run


@pytest.fixture(scope="module")
def corpora():
    X, y = generate_hmm_corpus(40, seed=21)
    U, _ = generate_hmm_corpus(160, seed=22)
    T, _ = generate_hmm_corpus(30, seed=23)
    return X, y, U, T


def assert_same_features(f, g):
    np.testing.assert_array_equal(f.indptr, g.indptr)
    np.testing.assert_array_equal(f.indices, g.indices)
    np.testing.assert_array_equal(f.offsets, g.offsets)
    np.testing.assert_array_equal(np.asarray(f.values), np.asarray(g.values))
    assert f.n_attributes == g.n_attributes


@pytest.mark.parametrize("buffer_tokens", [1, 37, 1 << 20])
def test_compiled_file_is_todays_extraction(corpora, tmp_path, buffer_tokens):
    _, _, U, _ = corpora
    path = tmp_path / "u.corpus"
    info = compile_corpus_file(U, path, buffer_tokens=buffer_tokens)
    fx = FeatureExtractor(default_templates(2))
    expected, = fx.fit_transform(U)
    c = CompiledCorpus.open(path)
    assert c.attributes == fx.attributes_
    assert (c.n_tokens, c.n_sentences, c.nnz) == (expected.n_tokens, expected.n_sentences,
                                                   expected.nnz)
    assert_same_features(c.features(), expected)
    assert isinstance(c.features().indices, np.memmap)  # mapped, not read
    assert info["bytes"] == path.stat().st_size
    # binary features: the arrays take 4 bytes per entry and token, 8 per sentence
    arrays = 4 * c.nnz + 4 * (c.n_tokens + 1) + 8 * (c.n_sentences + 1)
    assert arrays <= info["array_bytes"] < arrays + 3 * 64
    # the bytes do not depend on the buffer
    other = tmp_path / "other.corpus"
    compile_corpus_file(U, other, buffer_tokens=1000)
    assert path.read_bytes() == other.read_bytes()


def test_labels_values_and_a_conll_source(tmp_path):
    X, y = generate_hmm_corpus(30, seed=3)
    conll = tmp_path / "l.txt"
    write_conll(conll, X, y)
    c = CompiledCorpus.build(conll, tmp_path / "l.corpus", has_labels=True, buffer_tokens=50)
    flat = [label for seq in y for label in seq]
    assert [c.label_names[i] for i in c.labels.tolist()] == flat
    assert_same_features(c.features(),
                         FeatureExtractor(default_templates(2)).fit_transform(X)[0])
    # feature dicts with real values: a values section
    D = [[{"w": w, "len": float(len(w))} for w, _ in s] for s in X]
    d = CompiledCorpus.build(D, tmp_path / "d.corpus", templates=None)
    assert d.templates is None
    assert_same_features(d.features(), FeatureExtractor(None).fit_transform(D)[0])


def test_vocabulary_bounds_when_compiling(corpora, tmp_path):
    _, _, U, _ = corpora
    counts = FeatureExtractor(default_templates(2)).count(U)
    for min_freq, max_features in ((2, None), (1, 30), (3, 10)):
        c = CompiledCorpus.build(U, tmp_path / "b.corpus", min_freq=min_freq,
                                 max_features=max_features)
        ranked = sorted((i for i in range(len(counts)) if counts.counts[i] >= min_freq),
                        key=lambda i: (-counts.counts[i], i))[:max_features]
        assert c.attributes == [counts.strings[i] for i in ranked]
        assert c.features().indices.max() < len(ranked)


@pytest.mark.parametrize("extra", [dict(entropy_weight=0.05),
                                   dict(entropy_weight=0.05, feature_set="observed"),
                                   dict(ge_weight=1.0)])
def test_training_on_a_compiled_corpus_gives_todays_model(corpora, tmp_path, extra):
    X, y, U, _ = corpora
    kwargs = dict(templates="default", max_iterations=6, n_threads=2, verbose=False, **extra)
    constraints = None
    if "ge_weight" in extra:
        labels = sorted({label for seq in y for label in seq})
        constraints = {"U02:" + U[0][0][0]: {label: 1 / len(labels) for label in labels}}
    # compiled under the vocabulary today's fit builds, the ids are the same
    fx = FeatureExtractor(default_templates(2)).fit(X, U)
    c = CompiledCorpus.build(U, tmp_path / "u.corpus", vocabulary=fx)
    from_lists = CRF(**kwargs).fit(X, y, X_unlabeled=U, constraints=constraints)
    from_file = CRF(**kwargs).fit(X, y, X_unlabeled=c, constraints=constraints)
    assert from_file.extractor_.attributes_ == from_lists.extractor_.attributes_
    np.testing.assert_array_equal(from_file.label_ids_, from_lists.label_ids_)
    assert from_file.coef_.tobytes() == from_lists.coef_.tobytes()


def test_training_adds_the_labeled_attributes_after_the_corpus_vocabulary(corpora,
                                                                          tmp_path):
    X, y, U, T = corpora
    c = CompiledCorpus.build(U, tmp_path / "u.corpus", max_features=50)
    m = CRF(templates="default", entropy_weight=0.05, max_iterations=3, n_threads=1,
            verbose=False).fit(X, y, X_unlabeled=c)
    assert m.extractor_.attributes_[:50] == c.attributes
    own = set(FeatureExtractor(default_templates(2)).fit(X).attributes_)
    assert set(m.extractor_.attributes_[50:]) == own - set(c.attributes)
    # tagging from a file compiled under the model's vocabulary is tagging the lists
    t = CompiledCorpus.build(T, tmp_path / "t.corpus", vocabulary=m)
    assert m.predict(t) == m.predict(T)
    np.testing.assert_array_equal(np.concatenate(m.predict_marginals_array(t)),
                                  np.concatenate(m.predict_marginals_array(T)))
    # and under any other vocabulary it is refused
    with pytest.raises(SscrfError, match="another vocabulary"):
        CRF(templates="default", max_iterations=2, verbose=False).fit(X, y).predict(t)
    with pytest.raises(SscrfError, match="other templates"):
        CRF(templates=["U00:%x[0,0]"], entropy_weight=0.05, max_iterations=2,
            verbose=False).fit(X, y, X_unlabeled=c)
    with pytest.raises(sscrf.SscrfTypeError, match="not a list of sentences"):
        m.predict(t, allowed=[None] * len(t))


def test_score_takes_a_corpus_compiled_with_its_labels(corpora, tmp_path):
    X, y, _, _ = corpora
    T, z = generate_hmm_corpus(30, seed=24)
    m = CRF(templates="default", max_iterations=5, n_threads=1, verbose=False).fit(X, y)
    write_conll(tmp_path / "t.txt", T, z)
    t = CompiledCorpus.build(tmp_path / "t.txt", tmp_path / "t.corpus", vocabulary=m,
                             has_labels=True)
    predicted = m.predict(T)
    hits = sum(p == g for ps, gs in zip(predicted, z) for p, g in zip(ps, gs))
    assert m.score(t) == hits / sum(map(len, z))
    with pytest.raises(SscrfError, match="brings its labels; give y=None"):
        m.score(t, z)
    bare = CompiledCorpus.build(T, tmp_path / "u.corpus", vocabulary=m)
    with pytest.raises(SscrfError, match=r"no labels stored; .* to score it"):
        m.score(bare)
    with pytest.raises(sscrf.SscrfTypeError, match="and score .with its labels."):
        list(bare)


def test_a_compiled_vocabulary_is_not_cut_again_in_fit(corpora, tmp_path):
    X, y, U, _ = corpora
    write_conll(tmp_path / "x.txt", X, y)
    labeled = CompiledCorpus.build(tmp_path / "x.txt", tmp_path / "x.corpus", has_labels=True)
    unlabeled = CompiledCorpus.build(U, tmp_path / "u.corpus", max_features=50)
    fit = dict(templates="default", max_iterations=2, n_threads=1, verbose=False)
    refused = [
        (lambda: CRF(min_freq=2, **fit).fit(labeled, None), "x.corpus: .* give min_freq=2 to"),
        (lambda: CRF(max_features=10, **fit).fit(labeled, None), "give max_features=10 to"),
        (lambda: CRF(min_freq=2, max_features=10, **fit).fit(labeled, None),
         r"min_freq=2 and max_features=10 .*--min-freq and --max-features"),
        (lambda: CRF(max_features=10, entropy_weight=0.1, **fit).fit(X, y, X_unlabeled=unlabeled),
         "u.corpus: .* give max_features=10 to"),
        (lambda: CRF(hash_features=256, min_freq=2, **fit).fit(X, y),
         "hash_features has no vocabulary"),
        (lambda: CRF(hash_features=256, max_features=10, **fit).fit(X, y),
         "hash_features has no vocabulary"),
    ]
    for call, message in refused:
        with pytest.raises(SscrfError, match=message):
            call()
    # min_freq with a compiled X_unlabeled cuts the attributes X adds to its vocabulary
    m = CRF(min_freq=3, entropy_weight=0.1, **fit).fit(X, y, X_unlabeled=unlabeled)
    frequent = FeatureExtractor(default_templates(2), min_freq=3).fit(X).attributes_
    assert m.extractor_.attributes_[:50] == unlabeled.attributes
    assert set(m.extractor_.attributes_[50:]) == set(frequent) - set(unlabeled.attributes)
    assert len(FeatureExtractor(default_templates(2)).fit(X).attributes_) > len(frequent)


def good_file(tmp_path):
    U, _ = generate_hmm_corpus(20, seed=9)
    path = tmp_path / "good.corpus"
    compile_corpus_file(U, path)
    return path, path.read_bytes()


def rewritten_header(data, **fields):
    """``data`` with header fields replaced and the header checksum made valid again."""
    names = ["magic", "version", "flags", "n_tokens", "n_sentences", "nnz", "n_attributes",
             "meta_bytes", "checksum"]
    layout = struct.Struct("<8sIIqqqqq16s")
    values = dict(zip(names, layout.unpack_from(data)))
    values.update(fields)
    head = layout.pack(*(values[n] for n in names))
    head += hashlib.blake2b(head, digest_size=8).digest()
    return head + data[len(head):]


def test_bad_files_are_refused_with_their_name_and_reason(tmp_path):
    path, data = good_file(tmp_path)
    c = CompiledCorpus.open(path)
    indices_at = len(data) - 4 * c.nnz
    cases = {
        "foreign": (b"-DOCSTART- -X- O\n" * 20, "not a compiled sscrf corpus"),
        "empty": (b"", "not a compiled sscrf corpus"),
        "header cut": (data[:100], "truncated"),
        "one byte short": (data[:-1], "truncated"),
        "a byte more": (data + b"\0", "corrupt"),
        "header flipped": (data[:20] + bytes([data[20] ^ 1]) + data[21:], "corrupt header"),
        "newer version": (rewritten_header(data, version=2), "version 2"),
        "huge sizes": (rewritten_header(data, n_tokens=1 << 60, n_sentences=1 << 61),
                       "truncated"),
        "4-byte pointers past 2^32 entries": (rewritten_header(data, nnz=1 << 32),
                                              "out of range"),
        "negative size": (rewritten_header(data, nnz=-5), "out of range"),
        "meta flipped": (data[:140] + bytes([data[140] ^ 0x20]) + data[141:], "corrupt"),
        "id out of range": (data[:indices_at] + struct.pack("<i", 1 << 30)
                            + data[indices_at + 4:], "out of range"),
    }
    for name, (content, reason) in cases.items():
        bad = tmp_path / f"{name.replace(' ', '_')}.corpus"
        bad.write_bytes(content)
        with pytest.raises(SscrfError, match=reason) as e:
            CompiledCorpus.open(bad)
        assert str(bad) in str(e.value), name
    assert data[:8] == MAGIC and c.checksum == vocabulary_checksum(c.attributes)


def conll_files(tmp_path, n_labeled, n_unlabeled, seed):
    """Labeled and unlabeled demo sentences, and the CoNLL files holding them."""
    X, y = generate_hmm_corpus(n_labeled, seed=seed)
    U, _ = generate_hmm_corpus(n_unlabeled, seed=seed + 1)
    train, unl = tmp_path / "train.txt", tmp_path / "u.txt"
    write_conll(train, X, y)
    write_conll(unl, U)
    return U, train, unl


def test_cli_compile_then_train_and_refusals(capsys, tmp_path):
    U, train, unl = conll_files(tmp_path, 60, 120, 31)
    out = tmp_path / "u.corpus"
    code, stdout, err = run(capsys, "compile", unl, "-o", out, "--max-features", "80")
    assert code == 0, err
    assert "120 sentences" in stdout and "80 attributes" in stdout
    assert "counting" in err and "tokens/s" in err  # progress on by default
    assert CompiledCorpus.open(out).attributes == FeatureExtractor(
        default_templates(2)).count(U).freeze(1, 80).attributes
    model = tmp_path / "m.model"
    code, stdout, err = run(capsys, "train", train, "-m", model, "--unlabeled", out,
                            "--entropy-weight", "0.05", "--feature-set", "observed",
                            "--max-iterations", "3", "--quiet")
    assert code == 0, err
    assert "120 unlabeled sentences" in stdout
    assert CRF.load(model).extractor_.attributes_[:80] == CompiledCorpus.open(out).attributes
    tagged = tmp_path / "t.corpus"
    code, _, err = run(capsys, "compile", unl, "-o", tagged, "--vocabulary", model, "--quiet")
    assert code == 0, err
    m = CRF.load(model)
    assert m.predict(CompiledCorpus.open(tagged)) == m.predict(U)
    code, _, err = run(capsys, "tag", "-m", model, tagged)
    assert_error(code, err, "a compiled corpus holds attribute ids", "CompiledCorpus.open")
    code, _, err = run(capsys, "compile", unl, "-o", unl)
    assert_error(code, err, "destroy the input")
    empty = tmp_path / "empty.txt"
    empty.write_text("\n\n")
    code, stdout, err = run(capsys, "compile", empty, "-o", tmp_path / "e.corpus", "-q")
    assert code == 0 and f"warning: {empty}: no sentences" in err
    assert "0 entries" in stdout and "per entry" not in stdout
    assert len(CompiledCorpus.open(tmp_path / "e.corpus")) == 0
    # a model reading columns the command does not derive: refused by name, not
    # failed on FILE's first token
    words = tmp_path / "w.model"
    code, _, err = run(capsys, "train", train, "-m", words, "--features", "words",
                       "--max-iterations", "2", "-q")
    assert code == 0, err
    code, _, err = run(capsys, "compile", unl, "-o", tmp_path / "w.corpus", "--vocabulary", words)
    assert_error(code, err, str(words), "--features words", "sscrf train --unlabeled FILE")
    assert not (tmp_path / "w.corpus").exists()
    template = tmp_path / "t.tpl"
    template.write_text("U00:%x[0,0]\n")
    code, _, err = run(capsys, "train", train, "-m", model, "--unlabeled", out,
                       "--entropy-weight", "0.05", "--template", template)
    assert_error(code, err, "brings its templates")
    code, _, err = run(capsys, "train", train, "-m", model, "--unlabeled", out,
                       "--entropy-weight", "0.05", "--max-features", "40")
    assert_error(code, err, str(out), "give max_features=40", "sscrf compile --max-features")
    bad = tmp_path / "bad.corpus"
    bad.write_bytes(out.read_bytes()[:-3])
    code, _, err = run(capsys, "train", train, "-m", model, "--unlabeled", bad,
                       "--entropy-weight", "0.05")
    assert_error(code, err, str(bad), "truncated")



def test_a_last_column_of_chunk_labels_read_as_tokens_is_warned_about(capsys, tmp_path):
    U, train, unl = conll_files(tmp_path, 30, 30, 7)  # train's last column: B-NP, I-NP, O...
    out = tmp_path / "x.corpus"
    with pytest.warns(UserWarning, match="the last column holds chunk labels only"):
        compile_corpus_file(train, out)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        compile_corpus_file(train, out, has_labels=True)
        compile_corpus_file(unl, out)  # its last column is the tags: no warning
        compile_corpus_file(U, out)  # sentences, not a file
    only_o = tmp_path / "o.txt"
    write_conll(only_o, U, [["O"] * len(s) for s in U])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        compile_corpus_file(only_o, out)  # a column of O alone is no sign of labels
    code, _, err = run(capsys, "compile", train, "-o", out, "-q")
    assert code == 0 and f"sscrf: warning: {train}: the last column holds chunk labels " \
        "only (B-NP, B-VP, I-NP, ...): without --labeled" in err, err
    code, _, err = run(capsys, "compile", train, "-o", out, "-q", "--labeled")
    assert code == 0 and "warning" not in err, err
    partial = tmp_path / "partial.txt"  # --partial's syntax, which a compiled corpus has not
    partial.write_text("a X B-N\nb Y *\nc Z B-N|O\n\nd X O\n")
    code, _, err = run(capsys, "compile", partial, "-o", out, "-q", "--labeled")
    assert code == 0 and "labels '*', 'B-N|O' look like partial annotations" in err, err
    assert "a compiled corpus stores each as a label of its own" in err


@pytest.mark.skipif(not os.path.isdir("/dev/fd"), reason="pipes opened by path (/dev/fd)")
def test_a_pipe_is_refused_by_compile_and_read_whole_by_train(capsys, tmp_path):
    # Compiling opens the file once per pass: a pipe's later passes read
    # nothing, which would give a corpus of its first lines or of none.
    _, _, unl = conll_files(tmp_path, 1, 200, 3)
    for args in ({}, {"hash_features": 1024}, "cli"):
        r, w = os.pipe()
        try:
            os.write(w, unl.read_bytes())
            os.close(w)
            path = f"/dev/fd/{r}"
            if args == "cli":
                code, _, err = run(capsys, "compile", path, "-o", tmp_path / "x.corpus", "-q")
                assert_error(code, err, path, "not a regular file")
            else:
                with pytest.raises(SscrfError, match="not a regular file: compiling reads a "
                                                     "file more than once"):
                    compile_corpus_file(path, tmp_path / "x.corpus", **args)
        finally:
            os.close(r)
    assert not (tmp_path / "x.corpus").exists()
    # train --unlabeled tells a compiled corpus from a CoNLL file without
    # reading a pipe's first bytes away from the CoNLL reader
    train = tmp_path / "train.txt"
    write_conll(train, *generate_hmm_corpus(20, seed=4))
    assert len(unl.read_bytes()) > 8192  # more than one buffered read
    r, w = os.pipe()
    try:
        os.write(w, unl.read_bytes())
        os.close(w)
        code, out, err = run(capsys, "train", train, "-m", tmp_path / "m.model", "-q",
                             "--unlabeled", f"/dev/fd/{r}", "--entropy-weight", "0.01",
                             "--max-iterations", "2")
    finally:
        os.close(r)
    assert code == 0 and "200 unlabeled sentences" in out, (out, err)


def test_cli_eval_scores_a_corpus_compiled_with_its_labels(capsys, tmp_path):
    _, train, _ = conll_files(tmp_path, 40, 1, 41)
    X, y = generate_hmm_corpus(25, seed=43)
    test, model = tmp_path / "test.txt", tmp_path / "m.model"
    write_conll(test, X, y)
    assert run(capsys, "train", train, "-m", model, "--max-iterations", "5", "-q")[0] == 0
    labeled, bare = tmp_path / "t.corpus", tmp_path / "b.corpus"
    for out, extra in ((labeled, ["--labeled"]), (bare, [])):
        code, _, err = run(capsys, "compile", test, "-o", out, "--vocabulary", model, "-q",
                           *extra)
        assert code == 0, err
    # the same report as the CoNLL file's, for both reports
    for extra in ([], ["--tokens"]):
        code, from_text, err = run(capsys, "eval", "-m", model, test, *extra)
        assert code == 0, err
        code, from_corpus, err = run(capsys, "eval", "-m", model, labeled, *extra)
        assert code == 0, err
        assert from_corpus == from_text
    code, _, err = run(capsys, "eval", "-m", model, bare)
    assert_error(code, err, f"{bare}: no labels stored", "sscrf compile --labeled")
    code, _, err = run(capsys, "eval", "-m", model, labeled, "--conllu")
    assert_error(code, err, "--conllu goes with a CoNLL FILE")
    other = tmp_path / "other.model"
    assert run(capsys, "train", test, "-m", other, "--max-iterations", "2", "-q")[0] == 0
    code, _, err = run(capsys, "eval", "-m", other, labeled)
    assert_error(code, err, f"{labeled}: compiled under another vocabulary")


def test_cli_commands_refuse_a_compiled_corpus_where_text_or_a_model_goes(capsys, tmp_path):
    U, train, unl = conll_files(tmp_path, 30, 30, 5)
    corpus, model = tmp_path / "u.corpus", tmp_path / "m.model"
    assert run(capsys, "compile", unl, "-o", corpus, "-q")[0] == 0
    assert run(capsys, "train", train, "-m", model, "--max-iterations", "2", "-q")[0] == 0
    out = tmp_path / "out"
    for argv, wanted in (
            (["represent", corpus, "-o", out], "not a text file"),
            (["select", "-m", model, "--pool", corpus, "--strategy", "random"], "not a text file"),
            (["eval", corpus], "not a tagged file; with -m MODEL"),
            (["plot", "confusion", corpus, "-o", out], "not a text file"),
            (["compile", corpus, "-o", out], "not a CoNLL file"),
            (["dump", corpus], "not a model"),
            (["tag", "-m", corpus, train], "not a model"),
            (["train", train, "-m", out, "--init", corpus], "not a model"),
            (["plot", "loss", corpus, "-o", out], "not a model or a training log")):
        code, _, err = run(capsys, *argv)
        assert_error(code, err, f"{corpus}: a compiled corpus (sscrf compile), {wanted}")
    # a model where text goes
    for argv in (["eval", model], ["represent", model, "-o", out], ["train", model, "-m", out],
                 ["compile", model, "-o", out], ["train", train, "-m", out, "--dev", model]):
        code, _, err = run(capsys, *argv)
        assert_error(code, err, f"{model}: an sscrf model or word-representations file, not")
    assert not out.exists()


def test_cli_trains_on_a_corpus_compiled_with_its_labels(capsys, tmp_path):
    _, train, unl = conll_files(tmp_path, 40, 60, 17)
    # unlabeled text of the labeled vocabulary: the CoNLL route counts the
    # unlabeled text's attributes too, a compiled one keeps its own
    write_conll(unl, generate_hmm_corpus(40, seed=17)[0] * 2)
    labeled, unlabeled = tmp_path / "l.corpus", tmp_path / "u.corpus"
    assert run(capsys, "compile", train, "--labeled", "-o", labeled, "-q")[0] == 0
    assert run(capsys, "compile", unl, "--vocabulary", labeled, "-o", unlabeled, "-q")[0] == 0
    for extra in ([], ["--unlabeled", "UNL", "--entropy-weight", "0.01"]):
        models = []
        for source, unl_source in ((train, unl), (labeled, unlabeled)):
            models.append(tmp_path / f"m{len(models)}.model")
            args = [a if a != "UNL" else unl_source for a in extra]
            code, out, err = run(capsys, "train", source, "-m", models[-1], "-q",
                                 "--max-iterations", "8", *args)
            assert code == 0, err
            assert "40 sentences" in out and ("80 unlabeled" in out) == bool(extra), out
        assert models[0].read_bytes() == models[1].read_bytes()  # the same model, bit for bit
    hashed = tmp_path / "h.corpus"  # a hashed corpus trains a model hashed the same way
    assert run(capsys, "compile", train, "--labeled", "--hash-features", "1024", "-o", hashed,
               "-q")[0] == 0
    for source, extra in ((hashed, []), (train, ["--hash-features", "1024"])):
        code, _, err = run(capsys, "train", source, "-m", tmp_path / f"h{len(extra)}.model", "-q",
                           "--max-iterations", "8", *extra)
        assert code == 0, err
    assert (tmp_path / "h0.model").read_bytes() == (tmp_path / "h2.model").read_bytes()
    code, _, err = run(capsys, "train", unlabeled, "-m", tmp_path / "x.model", "-q")
    assert_error(code, err, "compiled without its labels", "--labeled")
    code, _, err = run(capsys, "train", labeled, "-m", tmp_path / "x.model", "--min-freq", "2",
                       "--features", "words")
    assert_error(code, err, "brings its templates", "--features words, --min-freq")
    code, _, err = run(capsys, "train", labeled, "-m", tmp_path / "x.model", "--unlabeled", unl,
                       "--entropy-weight", "0.01")
    assert_error(code, err, "compiled under its vocabulary")
    code, _, err = run(capsys, "train", labeled, "-m", tmp_path / "x.model", "--max-features", "9")
    assert_error(code, err, "--max-features goes with a CoNLL TRAIN file")
    assert not (tmp_path / "x.model").exists()

def test_the_core_views_read_only_arrays_and_keeps_them_alive(tmp_path):
    # A read-only array (a memory-mapped file's) is viewed, not copied: the
    # corpus holds a reference to it for as long as it lives, and scores
    # what a copy scores; a writable array is copied, as before.
    import gc
    import sys

    from sscrf import _core
    from sscrf.corpus import compile_corpus

    U, _ = generate_hmm_corpus(50, seed=41)
    path = tmp_path / "u.corpus"
    compile_corpus_file(U, path)
    features = CompiledCorpus.open(path).features()
    def references(array):  # (pytest's rewritten asserts would hold one more)
        return sys.getrefcount(array)

    before = references(features.indices)
    held = compile_corpus(features, n_labels=3)
    during = references(features.indices)
    del held
    gc.collect()
    after = references(features.indices)
    assert during > before and after == before
    mapped = compile_corpus(features, n_labels=3)
    writable = features._replace(indptr=np.array(features.indptr),
                                 indices=np.array(features.indices),
                                 offsets=np.array(features.offsets))
    before = references(writable.indices)
    copied = compile_corpus(writable, n_labels=3)
    during = references(writable.indices)
    assert during == before
    rng = np.random.default_rng(0)
    S = 3
    layout = _core.Layout(np.arange(features.n_attributes + 1, dtype=np.int64) * S,
                          np.tile(np.arange(S, dtype=np.int32), features.n_attributes), S)
    theta = rng.normal(size=layout.n_parameters)
    expected = _core.entropy_objective(copied, layout, theta, 2)
    del features
    gc.collect()  # the file's arrays are gone from Python; the corpus still holds them
    got = _core.entropy_objective(mapped, layout, theta, 2)
    assert got[0] == expected[0]
    np.testing.assert_array_equal(got[1], expected[1])


# -- feature hashing ------------------------------------------------------------------------


@pytest.mark.parametrize("templates", ["default", None])
def test_a_hashed_corpus_holds_the_rows_hashing_gives_in_memory(corpora, tmp_path, templates):
    X, _, U, _ = corpora
    source = [[[w.upper() if k % 3 else w for w in tok] for k, tok in enumerate(s)] for s in U]
    fx = FeatureExtractor(default_templates(2) if templates else None, hash_features=64)
    expected, = fx.fit_transform(source)
    # 64 buckets: attributes collide; binary template attributes count once, so no
    # values are stored (a token of attribute strings may repeat one: then values)
    unhashed, = FeatureExtractor(default_templates(2) if templates else None).fit_transform(
        source)
    assert expected.nnz < unhashed.nnz
    assert (np.asarray(expected.values).strides == (0,)) == bool(templates)
    for buffer_tokens in (7, 1 << 20):
        path = tmp_path / f"h{buffer_tokens}.corpus"
        info = compile_corpus_file(source, path, templates=templates, hash_features=64,
                                   buffer_tokens=buffer_tokens)
        c = CompiledCorpus.open(path)
        assert (c.hash_features, c.n_attributes, c.attributes) == (64, 64, [])
        assert info["n_attributes"] == 64
        assert_same_features(c.features(), expected)
    assert (tmp_path / "h7.corpus").read_bytes() == path.read_bytes()


@pytest.mark.parametrize("feature_set", ["dense", "observed"])
def test_training_on_a_hashed_corpus_is_training_on_its_sentences(corpora, tmp_path,
                                                                  feature_set):
    X, y, U, T = corpora
    compiled = CompiledCorpus.build(U, tmp_path / "u.corpus", templates=None,
                                    hash_features=256)
    params = dict(hash_features=256, entropy_weight=0.02, feature_set=feature_set,
                  max_iterations=15)
    a = CRF(**params).fit(X, y, X_unlabeled=U)
    b = CRF(**params).fit(X, y, X_unlabeled=compiled)
    assert a.coef_.tobytes() == b.coef_.tobytes()
    tagged = CompiledCorpus.build(T, tmp_path / "t.corpus", vocabulary=b)
    assert tagged.hash_features == 256
    assert b.predict(tagged) == a.predict(T)


def test_a_corpus_hashed_by_the_earlier_rule(corpora, tmp_path):
    # colliding attributes added up before; such a corpus trains as it did, and a
    # model of the rule now refuses it
    X, y, U, _ = corpora
    old = FeatureExtractor(default_templates(2), hash_features=16).set_hashing()
    old.hash_collisions = "sum"
    compiled = CompiledCorpus.build(U, tmp_path / "old.corpus", vocabulary=old)
    assert compiled.hash_collisions == "sum" and compiled.features().values.strides != (0,)
    model = CRF(templates="default", hash_features=16, entropy_weight=0.02,
                max_iterations=3).fit(X, y, X_unlabeled=compiled)
    assert model.extractor_.hash_collisions == "sum"
    again = CRF(templates="default", hash_features=16, max_iterations=2).fit(X, y)
    with pytest.raises(SscrfError, match="old.corpus: hashed by an earlier sscrf"):
        again.predict(compiled)
    new = CompiledCorpus.build(U, tmp_path / "new.corpus", vocabulary=again)
    with pytest.raises(SscrfError, match="new.corpus: hashed with binary collisions counted "
                                         "once"):
        model.predict(new)


def test_hashing_and_vocabularies_do_not_mix(corpora, tmp_path):
    X, y, U, _ = corpora
    hashed = CompiledCorpus.build(U, tmp_path / "h.corpus", templates=None, hash_features=256)
    counted = CompiledCorpus.build(U, tmp_path / "c.corpus", templates=None)
    cases = [
        (lambda: CRF(entropy_weight=0.1).fit(X, y, X_unlabeled=hashed),
         "hash_features=256, the estimator has hash_features=None"),
        (lambda: CRF(entropy_weight=0.1, hash_features=128).fit(X, y, X_unlabeled=hashed),
         "hash_features=256, the estimator has hash_features=128"),
        (lambda: CRF(entropy_weight=0.1, hash_features=256).fit(X, y, X_unlabeled=counted),
         "hash_features=None, the estimator has hash_features=256"),
        (lambda: CRF(max_iterations=2).fit(X, y).predict(hashed),
         "compiled with feature hashing into 256 buckets, the model has a vocabulary"),
        (lambda: CRF(max_iterations=2, hash_features=256).fit(X, y).predict(counted),
         "compiled with a vocabulary of attribute strings, the model has feature hashing"),
        (lambda: CRF(max_iterations=2, hash_features=512).fit(X, y).predict(hashed),
         "into 256 buckets, the model has feature hashing into 512"),
        (lambda: compile_corpus_file(U, tmp_path / "x.corpus", hash_features=256,
                                     max_features=10), "hash_features has no vocabulary"),
        (lambda: compile_corpus_file(U, tmp_path / "x.corpus", hash_features=256,
                                     vocabulary=counted), "hash_features has no vocabulary"),
        (lambda: compile_corpus_file(U, tmp_path / "x.corpus", hash_features=100),
         "power of two"),
    ]
    for call, message in cases:
        with pytest.raises(SscrfError, match=message):
            call()
    from sscrf.distributed.shards import compiled_shard
    with pytest.raises(SscrfError, match="hashing, which the cluster"):
        compiled_shard(str(hashed.path), labeled=False)


def test_a_hashed_file_whose_meta_disagrees_with_its_header_is_refused(corpora, tmp_path):
    _, _, U, _ = corpora
    path = tmp_path / "h.corpus"
    compile_corpus_file(U, path, hash_features=256)
    data = path.read_bytes()
    at = data.index(b'"hash_features": 256')
    bad = tmp_path / "bad.corpus"
    for forged in (b'"hash_features": 512', b'"hash_features": 2.5', b'"hash_features": 1e3'):
        bad.write_bytes(data[:at] + forged + data[at + len(forged):])
        with pytest.raises(SscrfError, match="corrupt meta"):
            CompiledCorpus.open(bad)
    # the header's count agreeing with a forged meta: the checksum does not
    forged = data[:at] + b'"hash_features": 512' + data[at + 20:]
    bad.write_bytes(rewritten_header(forged, n_attributes=512))
    with pytest.raises(SscrfError, match="does not match its checksum"):
        CompiledCorpus.open(bad)


def test_cli_compiles_with_hashing_and_trains_on_it(capsys, tmp_path):
    U, train, unl = conll_files(tmp_path, 40, 80, 41)
    out = tmp_path / "u.corpus"
    code, stdout, err = run(capsys, "compile", unl, "-o", out, "--hash-features", "1024",
                            "--quiet")
    assert code == 0, err
    assert "1,024 attributes" in stdout and CompiledCorpus.open(out).hash_features == 1024
    model = tmp_path / "m.model"
    code, _, err = run(capsys, "train", train, "-m", model, "--unlabeled", out,
                       "--entropy-weight", "0.05", "--hash-features", "1024",
                       "--max-iterations", "3", "--quiet")
    assert code == 0, err
    tagged = tmp_path / "t.corpus"
    code, _, err = run(capsys, "compile", unl, "-o", tagged, "--vocabulary", model, "--quiet")
    assert code == 0, err
    m = CRF.load(model)
    assert m.predict(CompiledCorpus.open(tagged)) == m.predict(U)
    code, _, err = run(capsys, "train", train, "-m", model, "--unlabeled", out,
                       "--entropy-weight", "0.05", "--quiet")
    assert_error(code, err, "hash_features=1024")
    code, _, err = run(capsys, "compile", unl, "-o", tagged, "--vocabulary", model,
                       "--hash-features", "1024")
    assert_error(code, err, "--hash-features go with a vocabulary of FILE's own")


def test_four_byte_token_pointers_are_widened_on_disk_not_in_memory(corpora, tmp_path,
                                                                    monkeypatch):
    _, _, U, _ = corpora
    path = tmp_path / "u.corpus"
    compile_corpus_file(U, path)
    expected, = FeatureExtractor(default_templates(2)).fit_transform(U)
    assert struct.unpack_from("<I", path.read_bytes(), 12)[0] & 4  # stored as uint32
    c = CompiledCorpus.open(path)
    indptr = c.features().indptr
    assert isinstance(indptr, np.memmap) and indptr.dtype == np.int64
    np.testing.assert_array_equal(indptr, expected.indptr)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["u.corpus"]  # unlinked at once
    # a folder where nothing can be written: the temporary folder instead
    import tempfile
    made = []
    real = tempfile.mkstemp

    def mkstemp(*args, **kwargs):
        if kwargs.get("dir") is not None:
            raise PermissionError("read-only")
        made.append(real(*args, **kwargs))
        return made[-1]

    monkeypatch.setattr(tempfile, "mkstemp", mkstemp)
    np.testing.assert_array_equal(CompiledCorpus.open(path).features().indptr, expected.indptr)
    assert len(made) == 1 and not os.path.exists(made[0][1])


def test_a_compiled_dev_set_scores_as_its_sentences_do(corpora, tmp_path):
    X, y, _, _ = corpora
    D, z = generate_hmm_corpus(25, seed=25)
    write_conll(tmp_path / "x.txt", X, y)
    write_conll(tmp_path / "d.txt", D, z)
    train = CompiledCorpus.build(tmp_path / "x.txt", tmp_path / "x.corpus", has_labels=True)
    dev = CompiledCorpus.build(tmp_path / "d.txt", tmp_path / "d.corpus", vocabulary=train,
                               has_labels=True)
    kwargs = dict(templates="default", max_iterations=9, dev_period=2, n_threads=2,
                  verbose=False)
    from_lists = CRF(**kwargs).fit(train, None, X_dev=D, y_dev=z)
    from_file = CRF(**kwargs).fit(train, None, X_dev=dev)
    assert from_file.training_["dev"] == from_lists.training_["dev"]
    assert from_file.coef_.tobytes() == from_lists.coef_.tobytes()
    grid = {"c2": [1.0, 0.1]}
    chosen = [sscrf.select_hyperparameters(CRF(**kwargs), grid, train, None, *dev_pair)
              for dev_pair in ((D, z), (dev, None))]
    assert [r["dev_score"] for r in chosen[0].table] == [r["dev_score"] for r in chosen[1].table]
    assert chosen[0].model.coef_.tobytes() == chosen[1].model.coef_.tobytes()
    with pytest.raises(SscrfError, match="brings its labels; give y_dev=None"):
        CRF(**kwargs).fit(train, None, X_dev=dev, y_dev=z)
    bare = CompiledCorpus.build(D, tmp_path / "bare.corpus", vocabulary=train)
    with pytest.raises(SscrfError, match=r"no labels stored; .* to score on it as X_dev"):
        CRF(**kwargs).fit(train, None, X_dev=bare)
    with pytest.raises(SscrfError, match=r"no labels stored; .* to score on it as X_dev"):
        sscrf.select_hyperparameters(CRF(**kwargs), grid, train, None, bare, None)
    # the fit's vocabulary is built from X here: a dev corpus of its own vocabulary is refused
    own = CompiledCorpus.build(tmp_path / "d.txt", tmp_path / "own.corpus", has_labels=True)
    for X_train, y_train in ((train, None), (X, y)):
        with pytest.raises(SscrfError, match="another vocabulary than the fit's .* set to the "
                                             "training corpus"):
            CRF(**kwargs).fit(X_train, y_train, X_dev=own)


def test_decoding_and_selection_read_a_compiled_pool_as_its_sentences(corpora, tmp_path):
    X, y, U, _ = corpora
    m = CRF(templates="default", max_iterations=6, n_threads=2, verbose=False).fit(X, y)
    pool = U[:50] + [U[50][:1], U[51][:2]]  # sentences shorter than the span width too
    compiled = CompiledCorpus.build(pool, tmp_path / "pool.corpus", vocabulary=m)
    assert m.predict_nbest(compiled, 3) == m.predict_nbest(pool, 3)
    assert (m.sequence_log_probability(compiled).tobytes()
            == m.sequence_log_probability(pool).tobytes())
    z = m.predict(pool)
    z[0] = z[0][::-1]
    assert (m.sequence_log_probability(compiled, z).tobytes()
            == m.sequence_log_probability(pool, z).tobytes())
    exclude = [np.arange(len(s)) % 3 == 0 for s in pool]
    for strategy, options in (("random", {}), ("least_confidence", {}),
                              ("sequence_entropy", {}), ("sequence_entropy", {"normalize": True}),
                              ("token_entropy", {"aggregate": "mean"}),
                              ("most_uncertain_span", {"width": 2}),
                              ("most_uncertain_span", {"width": 3, "exclude": exclude})):
        picked = [sscrf.active.select(m, p, strategy, 7, random_state=5, **options)
                  for p in (pool, compiled)]
        np.testing.assert_array_equal(picked[0][0], picked[1][0], err_msg=strategy)
        assert picked[0][1].tobytes() == picked[1][1].tobytes(), strategy
    log_q = np.linspace(-9.0, -1.0, len(pool))
    np.testing.assert_array_equal(
        sscrf.active.select(None, compiled, "quota_sampling", 4, log_q, random_state=1)[0],
        sscrf.active.select(None, pool, "quota_sampling", 4, log_q, random_state=1)[0])
    with pytest.raises(sscrf.SscrfTypeError, match="predict_nbest .without allowed="):
        m.predict_nbest(compiled, 2, allowed=[None] * len(pool))
    with pytest.raises(SscrfError, match="sentence 50: 1 tokens but 2 labels"):
        m.sequence_log_probability(compiled, z[:50] + [z[51], z[51]])
    with pytest.raises(SscrfError, match="another vocabulary"):
        sscrf.active.select(CRF(templates="default", max_iterations=2, verbose=False).fit(
            pool[:20], m.predict(pool[:20])), compiled, "sequence_entropy", 2)
