"""The semi-supervised experiment of Jiao et al. (2006, §5.1), shared by the BC2GM
and CoNLL-2000 replications (``bench/papers/semisupervised_*.py``).

A labeled set A and nested unlabeled sets of k·|A| tokens (:func:`split_labeled_unlabeled`);
per γ of a grid, a CRF with the entropy term warm-started from the supervised
one, self-training, and the supervised ``observed`` reference
(:func:`run_experiment`, in parallel processes); the report tables
(:func:`report`) and the shared command-line options (:func:`common_arguments`).
"""

import json
import multiprocessing
import sys
import time

from bench.lib import host, tables

C2 = 0.5  # Jiao et al.'s prior ‖θ‖²/2


# -- data ---------------------------------------------------------------------


def split_labeled_unlabeled(tokens, labels, labeled_tokens, sizes, shuffle=None):
    """A = first sentences until ≥ labeled_tokens tokens; nested unlabeled sets after A.

    With ``shuffle`` (an int seed), the sentences are put in a random order
    first (the same permutation for tokens and labels).

    Returns
    -------
    dict with ``A`` = (tokens, labels) and ``U`` = {size: tokens}; raises
    SystemExit if the pool is too small.
    """
    if shuffle is not None:
        import random

        order = list(range(len(tokens)))
        random.Random(shuffle).shuffle(order)
        tokens = [tokens[i] for i in order]
        labels = [labels[i] for i in order]
    n_a, k = 0, 0
    while k < len(tokens) and n_a < labeled_tokens:
        n_a += len(tokens[k])
        k += 1
    A = (tokens[:k], labels[:k])
    U = {}
    for size in sizes:
        want = size * n_a
        got, j = 0, k
        while j < len(tokens) and got < want:
            got += len(tokens[j])
            j += 1
        if got < want:
            raise SystemExit(f"error: not enough sentences for an unlabeled set of {size}x "
                             f"({want} tokens)")
        U[size] = tokens[k:j]
    return {"A": A, "U": U, "A_tokens": n_a}


def order_text(args):
    """Describes the sentence order of the split, for the report."""
    return "" if args.shuffle is None else f" shuffled with seed {args.shuffle}"


def n_tokens(sentences):
    return sum(len(s) for s in sentences)


# -- runs -----------------------------------------------------------------------

# Globals inherited by forked workers (set by run_experiment before the pool starts).
_STATE = {}


def _scores(y_true, y_pred):
    from sscrf.metrics import chunk_scores

    s = chunk_scores(y_true, y_pred)
    return {"precision": 100.0 * s["precision"], "recall": 100.0 * s["recall"],
            "f1": 100.0 * s["f1"], "n_pred": s["n_pred"], "n_correct": s["n_correct"],
            "n_true": s["n_true"]}


def _mean_token_entropy(model, X):
    h = model.sequence_entropy(X)
    return float(h.sum()) / max(1, n_tokens(X))


def _evaluate(model, X_unlabeled):
    st = _STATE
    t0 = time.perf_counter()
    y_pred = model.predict(st["X_test"])
    out = _scores(st["y_test"], y_pred)
    out["H_test"] = _mean_token_entropy(model, st["X_test"])
    out["H_unlabeled"] = (None if X_unlabeled is None
                          else _mean_token_entropy(model, X_unlabeled))
    out["eval_s"] = time.perf_counter() - t0
    return out


def _model(args, **kw):
    from sscrf import CRF

    return CRF(c2=C2, max_iterations=args.max_iterations, n_threads=args.threads,
               verbose=False, **kw)


def _train_record(model):
    tr = model.training_
    return {"iterations": tr["iterations"], "evaluations": tr["evaluations"],
            "stop_reason": tr["stop_reason"], "loss": tr["loss"]}


def run_task(task, keep=False):
    """One configuration: a dict describing it plus its scores (runs in a worker)."""
    st = _STATE
    args = st["args"]
    kind, size, gamma, weight = task["kind"], task["size"], task["gamma"], task["weight"]
    XA, yA = st["XA"], st["yA"]
    XU = st["XU"].get(size)
    t0, c0 = time.perf_counter(), time.process_time()
    out = dict(task)
    if kind == "supervised":
        model = _model(args, feature_set=task["feature_set"])
        model.fit(XA, yA)
        out.update(_train_record(model))
    elif kind == "entropy":
        model = _model(args, entropy_weight=weight, feature_set="dense")
        model.fit(XA, yA, X_unlabeled=XU, init=st["init"])
        out.update(_train_record(model))
    elif kind == "self":
        from sscrf import self_train

        model = _model(args)
        self_train(model, XA, yA, XU, max_rounds=args.self_training_rounds, verbose=False)
        out.update(_train_record(model))
        out["rounds"] = len(model.self_training_) - 1
        out["changed"] = [h["changed"] for h in model.self_training_[1:]]
    else:
        raise ValueError(kind)
    out["train_s"] = time.perf_counter() - t0
    out["train_cpu_s"] = time.process_time() - c0
    out["n_parameters"] = int(model.n_parameters_)
    out.update(_evaluate(model, XU))
    if keep:
        out["model"] = model
    return out


def log(msg):
    """A time-stamped progress line on stderr."""
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def run_experiment(args, *, title, XA, yA, XU, X_test, y_test, unit):
    """Run supervised, entropy (γ grid, scaled γ) and self-training runs; return the results.

    ``XU`` maps each size to its unlabeled sentences (feature dicts).
    """
    _STATE.update(args=args, XA=XA, yA=yA, XU=XU, X_test=X_test, y_test=y_test)
    results = []
    started = time.perf_counter()

    # Supervised runs first: the dense one is the entropy runs' warm start.
    log("supervised (dense) on A")
    sup = run_task({"kind": "supervised", "size": None, "gamma": 0.0, "weight": 0.0,
                    "feature_set": "dense", "row": "0"}, keep=True)
    _STATE["init"] = sup.pop("model")
    # The warm start's entropy on each unlabeled set: the reference for the entropy runs.
    sup["H_unlabeled_by_size"] = {size: _mean_token_entropy(_STATE["init"], XU[size])
                                  for size in args.sizes}
    results.append(sup)
    log(f"  F1 {sup['f1']:.2f}  ({sup['train_s']:.1f} s)")

    tasks = [{"kind": "supervised", "size": None, "gamma": 0.0, "weight": 0.0,
              "feature_set": "observed", "row": "0 (observed)"}]
    n_a_sent = len(XA)
    for size in args.sizes:
        for g in args.gammas:
            if g > 0:
                tasks.append({"kind": "entropy", "size": size, "gamma": g, "weight": g,
                              "row": fmt_gamma(g)})
        for g in args.scaled_gammas:
            w = g * n_a_sent / len(XU[size])
            tasks.append({"kind": "entropy", "size": size, "gamma": g, "weight": w,
                          "row": f"{fmt_gamma(g)}·|A|/|U|"})
        tasks.append({"kind": "self", "size": size, "gamma": None, "weight": None,
                      "row": "self-training"})
    # Longest first (bigger unlabeled sets, larger γ), for a better pool schedule.
    order = sorted(range(len(tasks)),
                   key=lambda i: (-(tasks[i]["size"] or 0), tasks[i]["kind"] != "self"))
    tasks = [tasks[i] for i in order]
    log(f"{len(tasks)} more runs on {args.jobs} worker(s), {args.threads} thread(s) each")
    if args.jobs > 1:
        ctx = multiprocessing.get_context("fork")
        with ctx.Pool(args.jobs) as pool:
            for r in pool.imap_unordered(run_task, tasks):
                log(f"  {describe(r)}")
                results.append(r)
    else:
        for t in tasks:
            r = run_task(t)
            log(f"  {describe(r)}")
            results.append(r)
    total = time.perf_counter() - started
    return {"title": title, "results": results, "total_s": total, "unit": unit}


def fmt_gamma(g):
    return f"{g:g}"


def describe(r):
    where = "A only" if r["size"] is None else f"{r['size']}x"
    weight = "" if r["weight"] is None else f"{r['weight']:.4g}"
    return (f"{r['kind']:<10} {where:<6} row {r['row']:<14} weight {weight:<8} "
            f"F1 {r['f1']:6.2f}  P {r['precision']:6.2f}  R {r['recall']:6.2f}  "
            f"it {r['iterations']:>3}  {r['train_s']:.1f} s")


# -- report ---------------------------------------------------------------------


def _row_order(args):
    rows = ["0 (observed)", "0"]
    rows += [fmt_gamma(g) for g in args.gammas if g > 0]
    rows += [f"{fmt_gamma(g)}·|A|/|U|" for g in args.scaled_gammas]
    rows += ["self-training"]
    return rows


def report(args, exp, split_info, machine):
    res = exp["results"]
    sizes = args.sizes

    def find(row, size):
        for r in res:
            if r["row"] == row and (r["size"] == size or r["size"] is None):
                return r
        return None

    lines = [f"# {exp['title']}", "", host.machine_line(machine), ""]
    lines += split_info
    lines += ["",
              f"c2 = {C2} (U = ‖θ‖²/2), max_iterations = {args.max_iterations}, "
              f"self-training rounds ≤ {args.self_training_rounds}, "
              f"{args.jobs} job(s) × {args.threads} thread(s). Total wall time "
              f"{exp['total_s'] / 60:.1f} min.",
              "Rows: γ (the entropy weight); `0` = supervised on A (dense features, the warm start "
              "of every entropy run; identical for all sizes); `0 (observed)` = supervised with "
              "CRFsuite's observed feature set; `g·|A|/|U|` = weight g × (sentences in A)/"
              "(sentences in U), MALLET's scaling (actual weights in the second table).", ""]
    headers = ["γ"]
    for size in sizes:
        headers += [f"{size}x P", f"{size}x R", f"{size}x F1", f"{size}x #pred",
                    f"{size}x #corr"]
    rows = []
    for row in _row_order(args):
        cells = [row]
        for size in sizes:
            r = find(row, size)
            if r is None:
                cells += ["—"] * 5
            else:
                cells += [f"{r['precision']:.2f}", f"{r['recall']:.2f}", f"{r['f1']:.2f}",
                          f"{r['n_pred']:,}", f"{r['n_correct']:,}"]
        rows.append(cells)
    lines.append(markdown_test_line(res, exp["unit"]))
    lines.append("")
    lines.append(tables.markdown_table(headers, rows))
    lines += ["", "Details per run (iterations and stop reason of the final L-BFGS run; "
              "train s = wall seconds of fit (self-training: all rounds), CPU s = its process "
              "CPU time (the machine is shared, so wall time includes waiting); "
              "H = mean per-token entropy H(Y|x)/n under the trained model; the γ = 0 rows give "
              "the warm start's H on each unlabeled set):", ""]
    headers = ["run", "unlabeled", "weight", "F1", "iterations", "stop", "train s",
               "train CPU s", "H unlabeled", "H test", "parameters"]
    rows = []
    for row in _row_order(args):
        for size in ([None] if row == "0 (observed)" else sizes):
            r = find(row, size)
            if r is None:
                continue
            h_unlabeled = r["H_unlabeled"]
            if row == "0":  # the shared warm start, shown once per unlabeled set
                h_unlabeled = r.get("H_unlabeled_by_size", {}).get(size)
            stop = r["stop_reason"]
            if r["kind"] == "self":
                stop = f"{r['rounds']} rounds, changed {r['changed']}; last: {stop}"
            rows.append([row, "—" if size is None else f"{size}x",
                         "—" if r["weight"] is None else f"{r['weight']:.4g}",
                         f"{r['f1']:.2f}", r["iterations"], stop, f"{r['train_s']:.1f}",
                         f"{r['train_cpu_s']:.1f}",
                         "—" if h_unlabeled is None else f"{h_unlabeled:.4f}",
                         f"{r['H_test']:.4f}", f"{r['n_parameters']:,}"])
    lines.append(tables.markdown_table(headers, rows, align="llrrrlrrrrr"))
    return "\n".join(lines)


def markdown_test_line(res, unit):
    n_true = res[0]["n_true"]
    return f"Test set: {n_true:,} {unit} (exact match)."


# -- command line ---------------------------------------------------------------


def parse_floats(text):
    return [float(x) for x in text.split(",") if x.strip()] if text else []


def common_arguments(p, default_data, labeled_tokens):
    p.add_argument("--data", default=default_data)
    p.add_argument("--gammas", type=parse_floats, default=parse_floats("0,0.1,0.5,1,5,10"))
    p.add_argument("--scaled-gammas", type=parse_floats, default=parse_floats("1,10"),
                   help="base γ values run with the weight γ·|A|/|U| (sentences); '' for none")
    p.add_argument("--sizes", type=lambda s: [int(x) for x in s.split(",")],
                   default=[1, 2, 5])
    p.add_argument("--labeled-tokens", type=int, default=labeled_tokens)
    p.add_argument("--max-iterations", type=int, default=100)
    p.add_argument("--self-training-rounds", type=int, default=5)
    p.add_argument("--jobs", type=int, default=2, help="runs in parallel (processes)")
    p.add_argument("--threads", type=int, default=1, help="threads per run")
    p.add_argument("--shuffle", type=int, default=None, metavar="SEED",
                   help="shuffle the training sentences (this seed) before taking A and the "
                        "unlabeled sets; default: file order")
    p.add_argument("--json", help="write all results as JSON here")
    p.add_argument("--quick", action="store_true",
                   help="γ ∈ {0, 1}, size 1x, 20 iterations, 2 self-training rounds")
    return p


def apply_quick(args):
    if args.quick:
        args.gammas = [0.0, 1.0]
        args.scaled_gammas = []
        args.sizes = [1]
        args.max_iterations = 20
        args.self_training_rounds = 2


def finish(args, exp, split_info, machine):
    text = report(args, exp, split_info, machine)
    print(text)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump({"machine": machine, "args": {k: v for k, v in vars(args).items()},
                       "split": split_info, **exp}, f, indent=1, default=str)
