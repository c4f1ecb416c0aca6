"""Feature hashing: buckets checked against an FNV-1a written here; binary collisions
count once, other values add up (all of them add up in extractors saved before)."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

from sscrf import CRF
from sscrf.demo import generate_hmm_corpus
from sscrf.cli import main
from sscrf.errors import SscrfError, SscrfTypeError
from sscrf.features import FeatureExtractor
from sscrf.io import write_conll
from sscrf.features.hashing import check_hash_features, hash_bucket, hash_buckets

SENTENCES = [[["He", "PRP"], ["reckons", "VBZ"], ["the", "DT"]],
             [["Zürich", "NNP"], ["is", "VBZ"]]]
TEMPLATES = ["U00:%x[0,0]", "U01:%x[0,1]", "U02:%x[-1,0]/%x[0,0]"]


def fnv(data: bytes) -> int:
    h = 14695981039346656037
    for b in data:
        h ^= b
        h = (h * 1099511628211) % 2**64
    return h


def bucket_values(token: list[tuple[str, float]], n: int, rule: str = "once"
                  ) -> dict[int, float]:
    """{bucket: value} of one token's (attribute, value) pairs: a bucket of binary
    attributes only is 1.0 under "once", any other the sum of its values."""
    found: dict[int, list[float]] = {}
    for name, value in token:
        found.setdefault(fnv(name.encode("utf-8")) % n, []).append(value)
    return {b: 1.0 if rule == "once" and all(v == 1.0 for v in vs) else sum(vs)
            for b, vs in found.items()}


def expected(sentences: list[list[list[str]]], n: int, dicts: bool = False,
             rule: str = "once") -> list[dict[int, float]]:
    """Token -> {bucket: value}, from the extractor's own unhashed strings."""
    fx = FeatureExtractor(None if dicts else TEMPLATES)
    return [bucket_values(token, n, rule) for sentence in sentences
            for token in fx.attribute_strings(sentence)]


def as_rows(features) -> list[dict[int, float]]:  # type: ignore[no-untyped-def]
    return [dict(zip(features.indices[a:b].tolist(), features.values[a:b].tolist()))
            for a, b in zip(features.indptr[:-1], features.indptr[1:])]


@pytest.mark.parametrize("n", [2, 4, 2**20])
def test_buckets_match_an_independent_fnv(n: int) -> None:
    fx = FeatureExtractor(TEMPLATES, hash_features=n)
    train, = fx.fit_transform(SENTENCES)
    assert train.n_attributes == n
    assert as_rows(train) == expected(SENTENCES, n)
    assert as_rows(fx.transform(SENTENCES)) == expected(SENTENCES, n)
    for a, b in zip(train.indptr[:-1], train.indptr[1:]):
        assert (np.diff(train.indices[a:b]) > 0).all()


def test_binary_collisions_count_once_and_old_states_add_up() -> None:
    fx = FeatureExtractor(TEMPLATES, hash_features=2)
    (features,) = fx.fit_transform(SENTENCES)
    rows = as_rows(features)
    # 3 templates (the bigram one pads at t=0) into 2 buckets: every bucket is 1
    assert all(v == 1.0 for r in rows for v in r.values()) and any(len(r) == 1 for r in rows)
    assert np.asarray(features.values).strides == (0,)  # no values stored
    # a state saved before the rule (no "hash_collisions") adds them up, as it did
    state = fx.to_state()
    assert state["hash_collisions"] == "once"
    del state["hash_collisions"]
    old = FeatureExtractor.from_state(state)
    summed = as_rows(old.transform(SENTENCES))
    assert summed == expected(SENTENCES, 2, rule="sum")
    assert [sum(r.values()) for r in summed] == [3.0] * 5
    assert as_rows(pickle.loads(pickle.dumps(old)).transform(SENTENCES)) == summed
    for bad in ("max", 1):
        with pytest.raises(SscrfError, match="hash_collisions"):
            FeatureExtractor.from_state({**state, "hash_collisions": bad})
    with pytest.raises(SscrfError, match="hash_collisions"):
        FeatureExtractor.from_state({**FeatureExtractor(TEMPLATES).to_state(),
                                     "hash_collisions": "once"})


def test_dict_tokens_with_values() -> None:
    # binary attributes in one bucket count once; a bucket holding a real value sums
    X = [[{"w": "a", "x": 2.0, "y": 0.5, "z": True}, {"w": "b", "v": "c", "u": 1.0}]]
    kinds = set()
    for n in (2, 4):
        fx = FeatureExtractor(hash_features=n)
        rows = as_rows(fx.fit_transform(X)[0])
        tokens = fx.attribute_strings(X[0])
        assert rows == [bucket_values(token, n) for token in tokens]
        for token in tokens:
            found: dict[int, list[float]] = {}
            for name, value in token:
                found.setdefault(fnv(name.encode()) % n, []).append(value)
            kinds |= {"binary" if set(vs) == {1.0} else "mixed" for vs in found.values()
                      if len(vs) > 1}
    assert kinds == {"binary", "mixed"}  # both rules were exercised


def test_state_and_pickle_round_trip() -> None:
    fx = FeatureExtractor(TEMPLATES, hash_features=2**8)
    fx.fit(SENTENCES)
    again = FeatureExtractor.from_state(fx.to_state())
    assert again.hash_features == 2**8
    for other in (again, pickle.loads(pickle.dumps(fx))):
        assert as_rows(other.transform(SENTENCES)) == as_rows(fx.transform(SENTENCES))
    assert "hash_features" not in FeatureExtractor(TEMPLATES).fit(SENTENCES).to_state()


@pytest.mark.parametrize("bad", [0, 1, 3, 2**31, -4, 1000])
def test_bad_bucket_counts_are_refused(bad: int) -> None:
    with pytest.raises(SscrfError, match="hash_features must be a power of two"):
        FeatureExtractor(TEMPLATES, hash_features=bad)
    state = FeatureExtractor(TEMPLATES).to_state()
    state["hash_features"] = bad
    with pytest.raises(SscrfError, match="feature state"):
        FeatureExtractor.from_state(state)


def test_bad_types_are_refused() -> None:
    for bad in (True, 4.0, "16"):
        with pytest.raises(SscrfTypeError, match="hash_features"):
            check_hash_features(bad)


def test_transform_before_fit_is_refused() -> None:
    with pytest.raises(SscrfError, match="not fitted"):
        FeatureExtractor(TEMPLATES, hash_features=16).transform(SENTENCES)


def test_vectorised_buckets_match_an_independent_fnv() -> None:
    rng = np.random.default_rng(0)
    alphabet = list("ab/:_é中") + ["\U0001f600"]
    strings = ["", "a", "U00:the"] + ["".join(rng.choice(alphabet, rng.integers(0, 25)))
                                      for _ in range(300)]
    expect = [fnv(s.encode("utf-8")) % 2**30 for s in strings]
    assert hash_buckets(strings, 2**30).tolist() == expect
    assert [hash_bucket(s, 2**30) for s in strings] == expect
    assert hash_buckets([], 4).tolist() == []
    # a lone surrogate (a Python str may hold one) hashes as its surrogatepass bytes
    lone = "w:\udc80x"
    assert hash_bucket(lone, 2**30) == fnv(lone.encode("utf-8", "surrogatepass")) % 2**30
    assert hash_buckets([lone, "a"], 2**30).tolist() == [hash_bucket(lone, 2**30),
                                                         hash_bucket("a", 2**30)]
    FeatureExtractor(hash_features=2**8).fit([[{lone: True}]])


def test_crf_records_and_tags_with_hashing(tmp_path) -> None:  # type: ignore[no-untyped-def]
    X, y = generate_hmm_corpus(40, seed=0)
    crf = CRF(hash_features=2**6, max_iterations=10).fit(X, y)
    assert crf.extractor_.hash_features == 2**6 and len(crf.extractor_.attributes_) == 2**6
    path = str(tmp_path / "m.model")
    crf.save(path)
    again = CRF.load(path)
    assert again.extractor_.hash_features == 2**6
    assert again.predict(X) == crf.predict(X)
    # the weights see the buckets: the same rows as hashing the extractor's output
    assert crf.extractor_.transform(X).n_attributes == 2**6


def test_cli_train_hash_features(tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    X, y = generate_hmm_corpus(30, seed=3)
    train, model = tmp_path / "train.txt", tmp_path / "m.model"
    write_conll(train, X, y)
    assert main(["train", str(train), "-m", str(model), "--hash-features", "256",
                 "--max-iterations", "5", "--quiet"]) == 0
    assert CRF.load(str(model)).extractor_.hash_features == 256
    capsys.readouterr()
    assert main(["train", str(train), "-m", str(model), "--hash-features", "300"]) == 2
    assert "hash_features must be a power of two" in capsys.readouterr().err


def test_max_features_or_min_freq_with_hashing_is_refused(tmp_path) -> None:  # type: ignore[no-untyped-def]
    X, y = generate_hmm_corpus(20, seed=4)
    with pytest.raises(SscrfError, match="hash_features or max_features"):
        CRF(hash_features=2**6, max_features=10, max_iterations=3).fit(X, y)
    with pytest.raises(SscrfError, match="min_freq and max_features go without it"):
        CRF(hash_features=2**6, min_freq=2, max_iterations=3).fit(X, y)
    # a model file that holds both (fit ignored min_freq with hashing) still loads and tags
    crf = CRF(hash_features=2**6, max_iterations=3).fit(X, y)
    crf.min_freq = 2
    crf.save(str(tmp_path / "m.model"))
    again = CRF.load(str(tmp_path / "m.model"))
    assert again.min_freq == 2 and again.predict(X) == crf.predict(X)
