"""sscrf.distributed.fit on a real LocalCluster: the one-machine model, whatever the placement.

References: ``CRF.fit`` in one process on the same sentences (vocabulary,
labels and layout equal; weights norm-wise to 1e-8 after 20 iterations), and
the same distributed fit on one worker (the same bits: the shards' sums
follow a fixed tree over shard indices, not the workers).
"""

import os
import signal
from contextlib import nullcontext

import numpy as np
import pytest

import distributed

from sscrf import CRF, CompiledCorpus, SscrfError, SscrfTypeError, compile_corpus_file, training
from sscrf.annotations import Alternatives
from sscrf.demo import generate_hmm_corpus
from sscrf.distributed import ClusterObjective, ShardedCorpus, fit
from sscrf.objectives import Objective
from sscrf.distributed.shards import Partial, add_into, add_results, shard_groups, tree_sum
from sscrf.io import write_conll


@pytest.fixture(scope="module")
def cluster():
    # Processes, as on a real cluster: shards, extractor and weights are pickled. The
    # HTTP server on a free port, not 8787: two test runs on one machine would collide
    # (a UserWarning, an error under this suite's filterwarnings).
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  host="127.0.0.1", dashboard_address=":0") as c:
        yield c


@pytest.fixture(scope="module")
def client(cluster):
    with distributed.Client(cluster) as c:
        yield c


@pytest.fixture(scope="module")
def data():
    X, y = generate_hmm_corpus(90, seed=5, max_length=12)
    X_u, _ = generate_hmm_corpus(60, seed=6, max_length=12)
    return X, y, X_u


def relative_gap(a, b):
    return float(np.max(np.abs(a - b)) / max(np.max(np.abs(a)), np.max(np.abs(b))))


#: GE constraints on the generated corpus's words (U02: the word itself); the last
#: is in no sentence, and is dropped with a warning on one machine and here alike
CONSTRAINTS = {"U02:the": {"B-NP": 0.9, "I-NP": 0.1}, "U02:.": {"O": 1.0},
               "U02:said": {"B-VP": 0.8, "I-VP": 0.1, "O": 0.1}, "U02:zzz": {"O": 1.0}}


def with_alternatives(X, y):
    """y with every third sentence given as two labelings that differ at its first and
    last tokens: not representable by node and edge masks (the ``alternatives`` term)."""
    out = [list(seq) for seq in y]
    for s in range(0, len(out), 3):
        if len(out[s]) >= 3:
            other = list(out[s])
            other[0] = other[-1] = "O" if out[s][0] != "O" else "B-NP"
            out[s] = Alternatives([out[s], other])
    return out


def one_machine_objective(crf, X, y, X_u=None, constraints=None):
    """The objective ``CRF.fit`` minimises, built by its own code: the reference."""
    params = crf.get_params()
    plan = training._plan_fit(params, X, y, X_u, constraints, None, None, 10)
    extractor, features = training._extract(
        {name: params[name] for name in training.EXTRACTION_PARAMS}, plan)
    token_labels, layout = training._layout(params, plan, extractor, features, 0.0)
    _, terms, _ = training._terms(params, plan, extractor, features, token_labels, layout)
    return Objective(terms, params["c2"]), extractor, layout


@pytest.mark.parametrize("settings", [
    {"feature_set": "observed"}, {"feature_set": "dense", "min_freq": 2},
])
def test_vocabulary_labels_and_layout_are_the_one_machine_fits(client, data, settings):
    X, y, _ = data
    one = CRF(max_iterations=1, templates="default", **settings).fit(X, y)
    many = fit(client, CRF(max_iterations=1, templates="default", **settings),
               ShardedCorpus.from_sentences(client, X, y, n_shards=3))
    assert many.attributes_ == one.attributes_
    assert many.classes_ == one.classes_
    np.testing.assert_array_equal(many.row_ptr_, one.row_ptr_)
    np.testing.assert_array_equal(many.label_ids_, one.label_ids_)


def test_likelihood_fit_equals_one_machine(client, data):
    X, y, _ = data
    one = CRF(max_iterations=20, templates="default").fit(X, y)
    many = fit(client, CRF(max_iterations=20, templates="default"),
               ShardedCorpus.from_sentences(client, X, y, n_shards=3))
    assert many.training_["iterations"] == one.training_["iterations"]
    assert relative_gap(many.coef_, one.coef_) <= 1e-8
    assert many.predict(X[:10]) == one.predict(X[:10])


def test_entropy_fit_with_its_warm_start_equals_one_machine(client, data):
    X, y, X_u = data
    params = dict(max_iterations=20, templates="default", entropy_weight=0.05)
    one = CRF(**params).fit(X[:30], y[:30], X_unlabeled=X_u)
    many = fit(client, CRF(**params), ShardedCorpus.from_sentences(client, X[:30], y[:30]),
               X_unlabeled=ShardedCorpus.from_sentences(client, X_u, n_shards=3))
    assert many.attributes_ == one.attributes_ and many.feature_set_ == "dense"
    assert many.training_["stages"]["supervised"]["iterations"] == \
        one.training_["stages"]["supervised"]["iterations"]
    assert relative_gap(many.coef_, one.coef_) <= 1e-8


def test_partial_labels_equal_one_machine(client, data):
    X, y, _ = data
    partial = [list(seq) for seq in y[:40]]
    for seq in partial[::3]:  # every third sentence: one token unknown, one either-or
        seq[0] = None
        seq[-1] = frozenset({seq[-1], "O"})
    one = CRF(max_iterations=20, templates="default").fit(X[:40], partial)
    many = fit(client, CRF(max_iterations=20, templates="default"),
               ShardedCorpus.from_sentences(client, X[:40], partial, n_shards=2))
    assert relative_gap(many.coef_, one.coef_) <= 1e-8


@pytest.mark.parametrize("case", ["likelihood", "partial", "alternatives", "entropy", "ge",
                                  "everything"])
def test_each_evaluation_equals_one_machine(client, data, case):
    X, y, X_u = data
    labels = list(y[:40])
    if case in ("partial", "everything"):
        labels = [list(seq) for seq in labels]
        for seq in labels[1::3]:
            seq[0] = None
    if case in ("alternatives", "everything"):
        labels = with_alternatives(X[:40], labels)
    params = dict(templates="default", c2=0.3)
    params.update({"entropy": dict(entropy_weight=0.2), "ge": dict(ge_weight=2.0),
                   "everything": dict(entropy_weight=0.2, ge_weight=2.0)}.get(case, {}))
    unlabeled = X_u if "entropy_weight" in params or "ge_weight" in params else None
    constraints = CONSTRAINTS if "ge_weight" in params else None
    expect = pytest.warns(UserWarning, match="U02:zzz") if constraints else nullcontext()
    with expect:
        reference, extractor, layout = one_machine_objective(CRF(**params), X[:40], labels,
                                                             unlabeled, constraints)
    with expect:
        objective = ClusterObjective(
            client, CRF(**params), ShardedCorpus.from_sentences(client, X[:40], labels,
                                                                n_shards=3),
            None if unlabeled is None else ShardedCorpus.from_sentences(client, unlabeled,
                                                                        n_shards=3),
            constraints=constraints)
    with objective:
        assert objective.extractor.attributes_ == extractor.attributes_
        np.testing.assert_array_equal(objective.layout.row_ptr, layout.row_ptr)
        rng = np.random.default_rng(1)
        for theta in (np.zeros(layout.size), rng.normal(scale=0.5, size=layout.size)):
            want_loss, want_grad = reference(theta)
            want_grad = want_grad.copy()
            loss, grad = objective(theta)
            assert abs(loss - want_loss) <= 1e-10 * abs(want_loss)
            assert relative_gap(grad, want_grad) <= 1e-10


def test_one_or_two_workers_give_the_same_bits_with_ge(client, data):
    # 4 shards: two groups of two on two workers, one group of four on one worker
    X, y, X_u = data
    params = dict(templates="default", entropy_weight=0.1, ge_weight=1.0)
    constraints = {k: v for k, v in CONSTRAINTS.items() if k != "U02:zzz"}

    def evaluate(c):
        with ClusterObjective(c, CRF(**params),
                              ShardedCorpus.from_sentences(c, X[:40], y[:40], n_shards=2),
                              ShardedCorpus.from_sentences(c, X_u, n_shards=2),
                              constraints=constraints) as objective:
            theta = np.random.default_rng(2).normal(size=objective.layout.size)
            assert objective.n_groups == len(c.scheduler_info()["workers"])
            loss, grad = objective(theta)
            return loss, grad.copy()

    two = evaluate(client)
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=False,
                                  dashboard_address=":0") as one_worker, \
            distributed.Client(one_worker) as alone:
        one = evaluate(alone)
    assert one[0] == two[0]
    np.testing.assert_array_equal(one[1], two[1])


def test_ge_fit_equals_one_machine(client, data):
    X, y, X_u = data
    params = dict(max_iterations=20, templates="default", ge_weight=2.0)
    with pytest.warns(UserWarning, match="U02:zzz"):
        one = CRF(**params).fit(X[:30], y[:30], X_unlabeled=X_u, constraints=CONSTRAINTS)
    with pytest.warns(UserWarning, match="U02:zzz"):
        many = fit(client, CRF(**params), ShardedCorpus.from_sentences(client, X[:30], y[:30]),
                   X_unlabeled=ShardedCorpus.from_sentences(client, X_u, n_shards=3),
                   constraints=CONSTRAINTS)
    assert many.constraints_ == one.constraints_ and many.classes_ == one.classes_
    assert many.training_["stages"]["supervised"]["iterations"] == \
        one.training_["stages"]["supervised"]["iterations"]
    assert many.training_["iterations"] == one.training_["iterations"]
    assert relative_gap(many.coef_, one.coef_) <= 1e-8


def test_alternatives_fit_equals_one_machine(client, data):
    X, y, _ = data
    labels = with_alternatives(X[:40], y[:40])
    one = CRF(max_iterations=20, templates="default").fit(X[:40], labels)
    many = fit(client, CRF(max_iterations=20, templates="default"),
               ShardedCorpus.from_sentences(client, X[:40], labels, n_shards=3))
    assert relative_gap(many.coef_, one.coef_) <= 1e-8


def test_same_bits_on_one_worker_and_from_files(client, data, tmp_path):
    X, y, _ = data
    parts = [(X[:45], y[:45]), (X[45:], y[45:])]
    for k, (Xk, yk) in enumerate(parts):
        write_conll(tmp_path / f"train-{k}.conll", Xk, yk)
    many = fit(client, CRF(max_iterations=10, templates="default"),
               ShardedCorpus.from_conll(client, str(tmp_path / "train-*.conll")))
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=False,
                                  dashboard_address=":0") as one_worker, \
            distributed.Client(one_worker) as alone:
        single = fit(alone, CRF(max_iterations=10, templates="default"),
                     ShardedCorpus.from_sentences(alone, X, y, n_shards=2))
    np.testing.assert_array_equal(many.coef_, single.coef_)


def test_compiled_corpus_files_fit_as_one_machine_fits_them(client, data, tmp_path):
    X, y, X_u = data
    vocabulary = CRF(max_iterations=1, templates="default", entropy_weight=0.1).fit(
        X[:40], y[:40], X_unlabeled=X_u)
    labeled, unlabeled = [], []
    for k, (a, b) in enumerate([(0, 20), (20, 40)]):
        write_conll(tmp_path / f"l{k}.conll", X[a:b], y[a:b])
        write_conll(tmp_path / f"u{k}.conll", X_u[30 * k:30 * (k + 1)])
        for name, has_labels, kept in ((f"l{k}", True, labeled), (f"u{k}", False, unlabeled)):
            compile_corpus_file(str(tmp_path / f"{name}.conll"), tmp_path / f"{name}.corpus",
                                vocabulary=vocabulary, has_labels=has_labels)
            kept.append(str(tmp_path / f"{name}.corpus"))
    params = dict(max_iterations=20, entropy_weight=0.1)
    one = CRF(**params).fit(CompiledCorpus.open(labeled), None,
                            X_unlabeled=CompiledCorpus.open(unlabeled))
    many = fit(client, CRF(**params),
               ShardedCorpus.from_compiled(client, labeled, labeled=True),
               X_unlabeled=ShardedCorpus.from_compiled(client, unlabeled))
    assert many.attributes_ == one.attributes_ == vocabulary.attributes_
    assert relative_gap(many.coef_, one.coef_) <= 1e-8
    # shards of another vocabulary are refused, naming the file
    compile_corpus_file(str(tmp_path / "u1.conll"), tmp_path / "other.corpus")
    with pytest.raises(SscrfError, match="other.corpus: compiled under another vocabulary"):
        fit(client, CRF(**params), ShardedCorpus.from_compiled(client, labeled, labeled=True),
            X_unlabeled=ShardedCorpus.from_compiled(client, [unlabeled[0],
                                                             str(tmp_path / "other.corpus")]))
    with pytest.raises(SscrfError, match="both be compiled"):
        fit(client, CRF(**params), ShardedCorpus.from_compiled(client, labeled, labeled=True),
            X_unlabeled=ShardedCorpus.from_sentences(client, X_u))
    with pytest.raises(SscrfError, match="no labels stored"):
        ShardedCorpus.from_compiled(client, unlabeled, labeled=True).shards[0].result()
    # their vocabulary was cut when they were compiled, as one machine says too
    for cut in (dict(min_freq=2), dict(max_features=10)):
        with pytest.raises(SscrfError, match=r"the compiled shards: .* give (min_freq=2|"
                           r"max_features=10) to CompiledCorpus.build"):
            fit(client, CRF(**params, **cut),
                ShardedCorpus.from_compiled(client, labeled, labeled=True),
                X_unlabeled=ShardedCorpus.from_compiled(client, unlabeled))


def test_a_worker_killed_mid_fit_gives_the_same_model(client, data):
    X, y, _ = data
    reference = fit(client, CRF(max_iterations=12, templates="default"),
                    ShardedCorpus.from_sentences(client, X, y, n_shards=4))
    killed = []

    def kill_one_worker(iteration, loss, theta):
        if iteration == 4 and not killed:
            victim = sorted(client.scheduler_info()["workers"])[0]
            # its nanny kills it (SIGKILL: no goodbye to the scheduler) and starts a new one
            client.run(lambda dask_worker: os.kill(dask_worker.process.process.pid,
                                                   signal.SIGKILL), workers=[victim], nanny=True)
            killed.append(victim)
        return False

    survived = fit(client, CRF(max_iterations=12, templates="default"),
                   ShardedCorpus.from_sentences(client, X, y, n_shards=4),
                   callback=kill_one_worker)
    assert killed
    np.testing.assert_array_equal(survived.coef_, reference.coef_)
    client.wait_for_workers(2, timeout=60)  # the nanny restarts it, for the next tests


def test_the_worker_holding_theta_killed_before_it_is_read(client, data, monkeypatch):
    # θ goes to one worker and the others copy it from there: killing that worker
    # right after θ lands loses θ mid-broadcast; the evaluation must run again
    X, y, _ = data
    with ClusterObjective(client, CRF(templates="default"),
                          ShardedCorpus.from_sentences(client, X, y, n_shards=4)) as objective:
        theta = np.random.default_rng(4).normal(size=objective.layout.size)
        want_loss, want_grad = objective(theta)
        want_grad = want_grad.copy()
        scatter, killed = client.scatter, []

        def scatter_then_kill(value, **options):
            future = scatter(value, **options)
            if isinstance(value, np.ndarray) and value.shape == theta.shape and not killed:
                distributed.wait(future)
                holder = next(iter(client.who_has([future])[future.key]))
                client.run(lambda dask_worker: os.kill(dask_worker.process.process.pid,
                                                       signal.SIGKILL),
                           workers=[holder], nanny=True)
                killed.append(holder)
            return future

        monkeypatch.setattr(client, "scatter", scatter_then_kill)
        loss, grad = objective(theta)
        assert killed
        assert loss == want_loss
        np.testing.assert_array_equal(grad, want_grad)
    client.wait_for_workers(2, timeout=60)


def test_tree_sum_has_a_fixed_shape():
    pieces = [Partial(float(k), np.full(3, 0.1 * k)) for k in range(7)]
    total = tree_sum(pieces, add_results)
    want = ((pieces[0][1] + pieces[1][1]) + (pieces[2][1] + pieces[3][1])) + (
        (pieces[4][1] + pieces[5][1]) + pieces[6][1])
    np.testing.assert_array_equal(total.grad, want)
    assert total.loss == 21.0 and total.ge_sums is None
    with pytest.raises(SscrfError, match="no shard"):
        tree_sum([], add_results)


@pytest.mark.parametrize("n_shards", range(1, 12))
def test_groups_summed_then_added_give_the_bits_of_one_tree(n_shards):
    # what lets each worker add its own shards: the result has the bits of the
    # tree over all the shards, however many groups (workers) there are
    rng = np.random.default_rng(n_shards)
    pieces = [Partial(float(rng.normal()), rng.normal(size=5) * 10.0 ** rng.integers(-8, 8, 5))
              for _ in range(n_shards)]
    want = tree_sum(pieces, add_results)
    for n_groups in range(1, n_shards + 2):
        groups = shard_groups(n_shards, n_groups)
        assert len(groups) <= n_groups and [i for g in groups for i in g] == list(range(n_shards))
        got = tree_sum([tree_sum([pieces[i] for i in g], add_results) for g in groups],
                       add_results)
        assert got.loss == want.loss
        np.testing.assert_array_equal(got.grad, want.grad)


def test_ge_sums_missing_on_one_side_count_as_zeros():
    a = Partial(1.0, np.ones(2), np.full((2, 3), 0.5))
    b = Partial(2.0, np.ones(2))
    for total in (add_results(a, b), add_results(b, a)):
        np.testing.assert_array_equal(total.ge_sums, a.ge_sums)
    np.testing.assert_array_equal(add_results(a, a).ge_sums, np.ones((2, 3)))


def test_adding_into_the_first_gives_the_same_bits_and_leaves_the_second():
    rng = np.random.default_rng(3)

    def piece(with_sums):
        return Partial(float(rng.normal()), rng.normal(size=6) * 10.0 ** rng.integers(-9, 9, 6),
                       rng.normal(size=(2, 3)) if with_sums else None)

    for first, second in ((True, True), (True, False), (False, True), (False, False)):
        a, b = piece(first), piece(second)
        want = add_results(a, b)
        b_before = (b.grad.copy(), None if b.ge_sums is None else b.ge_sums.copy())
        got = add_into(Partial(a.loss, a.grad.copy(),
                               None if a.ge_sums is None else a.ge_sums.copy()), b)
        assert got.loss == want.loss
        np.testing.assert_array_equal(got.grad, want.grad)
        if want.ge_sums is None:
            assert got.ge_sums is None
        else:
            np.testing.assert_array_equal(got.ge_sums, want.ge_sums)
        np.testing.assert_array_equal(b.grad, b_before[0])
        if second:
            np.testing.assert_array_equal(b.ge_sums, b_before[1])


def test_what_the_distributed_fit_refuses(client, data):
    X, y, X_u = data
    labeled = ShardedCorpus.from_sentences(client, X[:10], y[:10])
    with pytest.raises(SscrfTypeError, match="labeled ShardedCorpus"):
        fit(client, CRF(), X[:10])
    with pytest.raises(SscrfError, match="proportion_weight"):
        fit(client, CRF(proportion_weight=1.0), labeled)
    with pytest.raises(SscrfError, match="needs constraints"):
        fit(client, CRF(ge_weight=1.0), labeled)
    with pytest.raises(SscrfError, match="constraints need unlabeled data"):
        fit(client, CRF(ge_weight=1.0), labeled, constraints={"w[0]=the": {"O": 1.0}})
    with pytest.raises(SscrfError, match="hash_features"):
        fit(client, CRF(hash_features=2 ** 10), labeled)
    with pytest.raises(SscrfError, match="word_vectors"):
        fit(client, CRF(word_vectors=object()), labeled)
    with pytest.raises(SscrfError, match="needs unlabeled data"):
        fit(client, CRF(entropy_weight=0.1), labeled)
    with pytest.raises(SscrfTypeError, match="unlabeled ShardedCorpus"):
        fit(client, CRF(entropy_weight=0.1), labeled, X_unlabeled=labeled)
    with pytest.raises(SscrfError, match="no file matches"):
        ShardedCorpus.from_conll(client, "/nonexistent/part-*.conll")
    with pytest.raises(SscrfError, match="sentences"):
        ShardedCorpus.from_sentences(client, X[:3], y[:2])
