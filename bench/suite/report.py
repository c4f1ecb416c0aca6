"""The suite's report: the targets checked (PASS / FAIL / N/A) and the Markdown tables.

Every row carries the machine, date and commit of the child that measured it.
"""

import json
import os
import time

from bench.lib import eval_time, host, tables
from bench.suite import targets, throughput

__all__ = ["machine_tag", "check_targets", "build_markdown", "write_outputs"]


def machine_tag(info):
    """Short per-row tag: CPU, cores, date, commit."""
    cpu = info.get("cpu", "?")
    for noise in ("(R)", "(TM)", " CPU", " Processor"):
        cpu = cpu.replace(noise, "")
    cores = info.get("usable_cpus") or info.get("logical_cpus")
    return f"{' '.join(cpu.split())} ×{cores} · {info.get('date', '?')[:10]} · " \
           f"{info.get('commit', '?')}"


def check_targets(res, quick):
    T = []

    def add(item, name, value, ok, note="", tag=None):
        T.append({"item": item, "name": name, "value": value, "ok": ok, "note": note,
                  "run": tag})

    sup = res.get("supervised")
    if sup:
        tag = machine_tag(sup["machine"])
        r = sup["ratios"]
        for fs, limits in (("observed", targets.OBSERVED_EVAL), ("dense", targets.DENSE_EVAL)):
            for th, lim in limits.items():
                key = f"sscrf {fs}-{th}"
                if key not in r:
                    continue
                q = r[key]
                which = f"{fs}, {th} thread{'s' * (th > 1)}: ≤ {lim:.2f}x CRFsuite (observed)"
                # The target's words: a loss-and-gradient call against CRFsuite's
                # time per evaluation (its training time / evaluations).
                v = q.get("eval_only_median_paired_ratio")
                add(1, f"loss+gradient per evaluation, {which}",
                    f"{tables.fmt_ratio(v)} (ratio of medians "
                    f"{tables.fmt_ratio(q['eval_only_vs_crfsuite_s_per_eval'])})",
                    None if v is None else v <= lim,
                    note="a bare loss-and-gradient call at the trained weights", tag=tag)
                # A stricter reading, with the optimiser's own passes counted.
                v = q["s_per_eval_median_paired_ratio"]
                add(1, f"training time per evaluation, optimiser included, {which}",
                    f"{tables.fmt_ratio(v)} (ratio of medians "
                    f"{tables.fmt_ratio(q['s_per_eval_ratio_of_medians'])})",
                    None if v is None else v <= lim,
                    note="a stricter reading than the target's words", tag=tag)
        key = "sscrf observed-2"
        if key in r:
            v = r[key]["total_median_paired_ratio"]
            add(1, f"total training time, observed, 2 threads: ≤ {targets.TOTAL_OBSERVED_2T:.2f}x "
                   "CRFsuite", f"{tables.fmt_ratio(v)} (ratio of medians "
                               f"{tables.fmt_ratio(r[key]['total_ratio_of_medians'])})",
                None if v is None else v <= targets.TOTAL_OBSERVED_2T, tag=tag)
        for th in (1, 2):
            key = f"sscrf observed-{th}"
            if key in r:
                v = r[key]["peak_ratio"]
                add(6, f"peak training memory, observed, {th} thread{'s' * (th > 1)}: ≤ "
                       f"{targets.MEMORY_OBSERVED}x CRFsuite",
                    f"{tables.fmt_ratio(v)} ({tables.fmt_mb(sup['summary'][key]['peak_rss_bytes'])}"
                    f" vs {tables.fmt_mb(sup['summary'][sup['reference']]['peak_rss_bytes'])} MB)",
                    None if v is None else v <= targets.MEMORY_OBSERVED, tag=tag)
        for th in (1, 2):
            key = f"sscrf dense-{th}"
            if key in sup["summary"]:
                mb = sup["summary"][key]["peak_rss_bytes"] / 1e6
                v = mb / targets.WAPITI_PEAK_MB
                add(6, f"peak training memory, dense, {th} thread{'s' * (th > 1)}: ≤ "
                       f"{targets.MEMORY_DENSE_WAPITI}x Wapiti",
                    f"{v:.2f}x ({mb:.1f} vs {targets.WAPITI_PEAK_MB:.0f} MB)",
                    None if quick else v <= targets.MEMORY_DENSE_WAPITI,
                    note="Wapiti's figure is the one recorded once (Wapiti is not "
                         "installed here), not measured in this run", tag=tag)
        s = sup["summary"]
        ref = sup["reference"]
        for key in ("sscrf observed-1", "sscrf observed-2"):
            if key in s:
                d = s[key]["f1"] - s[ref]["f1"]
                add(1, f"F1 ({key.split()[1]}) within {targets.F1_TOLERANCE} of CRFsuite and of "
                       f"{targets.F1_BEFORE} (before the optimisation)",
                    f"{s[key]['f1']:.2f} (CRFsuite {s[ref]['f1']:.2f}, {d:+.2f}; before "
                    f"{s[key]['f1'] - targets.F1_BEFORE:+.2f})",
                    None if quick else (abs(d) <= targets.F1_TOLERANCE + 1e-9
                                        and abs(s[key]["f1"] - targets.F1_BEFORE) <= targets.F1_TOLERANCE + 1e-9),
                    note="quick run: too few iterations to compare F1" if quick else "", tag=tag)
        for fs in ("observed", "dense"):
            a, b = s.get(f"sscrf {fs}-1"), s.get(f"sscrf {fs}-2")
            if a and b:
                same = (a["final_loss"] == b["final_loss"] and a["evaluations"] == b["evaluations"]
                        and a["f1"] == b["f1"])
                add(1, f"training identical at 1 and 2 threads ({fs}: final loss, evaluations, F1)",
                    f"loss {a['final_loss']!r} vs {b['final_loss']!r}", same, tag=tag)

    sc = res.get("scaling")
    if sc:
        tag = machine_tag(sc["machine"])
        by = sc["summary"]["by_term"]
        for th, lim in targets.EFFICIENCY.items():
            for name, rows in by.items():
                row = rows.get(str(th))
                if row is None:
                    continue
                v = row.get("median_paired_efficiency")
                add(2, f"parallel efficiency at {th} threads ≥ {lim:.0%}: {name}",
                    "—" if v is None else f"{v:.0%} (from medians {row['efficiency']:.0%}"
                                          f"{_round_range(row.get('paired_efficiency_range'))})",
                    None if v is None else v >= lim, tag=tag)
            if not any(str(th) in rows for rows in by.values()):
                add(2, f"parallel efficiency at {th} threads ≥ {lim:.0%}", "not measured",
                    None, note=f"{th} threads not in --threads / not available", tag=tag)
        ident = {n: all(d.values()) for n, d in sc["identical_to_1_thread"].items() if d}
        if ident:
            add(2, "value and gradient bit-identical across thread counts (every term)",
                ", ".join(f"{n}: {'yes' if ok else 'NO'}" for n, ok in ident.items()),
                all(ident.values()), tag=tag)
        cost = sc["summary"]["cost_vs_likelihood"]
        if "entropy" in cost:
            v = cost["entropy"]["median_paired_ratio"]
            add(3, f"entropy (fast) per token ≤ {targets.ENTROPY_COST}x likelihood (aim "
                   f"{targets.ENTROPY_AIM}x)", f"{tables.fmt_ratio(v)} (aim: "
                                       f"{tables.verdict(v <= targets.ENTROPY_AIM)}"
                                       f"{_round_range(cost['entropy'].get('paired_ratio_range'), 'x')})",
                v <= targets.ENTROPY_COST, tag=tag)
        if "ge" in cost:
            v = cost["ge"]["median_paired_ratio"]
            add(3, f"ge per token ≤ {targets.GE_COST}x likelihood",
                f"{tables.fmt_ratio(v)}{_round_range(cost['ge'].get('paired_ratio_range'), 'x', '')}",
                v <= targets.GE_COST, tag=tag)
        else:
            add(3, f"ge per token ≤ {targets.GE_COST}x likelihood", "no ge term", None, tag=tag)

    tg = res.get("tagging")
    if tg:
        t = tg["tagging"]
        tag = machine_tag(tg["machine"])
        for kind, name, ref in (("viterbi", "sscrf predict 1t", "crfsuite tag"),
                                ("marginals", "sscrf predict_marginals 1t",
                                 "crfsuite marginal")):
            row = t[kind].get(name)
            if row:
                v = row["median_paired_speedup"]
                add(4, f"tagging throughput, {kind} (1 thread, end to end): ≥ "
                       f"{targets.TAGGING_SPEEDUP}x CRFsuite ({ref})",
                    f"{tables.fmt_ratio(v)} ({row['tokens_per_s']:,.0f} vs "
                    f"{t[kind][ref]['tokens_per_s']:,.0f} tokens/s)",
                    None if v is None else v >= targets.TAGGING_SPEEDUP, tag=tag)
    return T


def _round_range(lo_hi, unit="%", sep="; "):
    """'; rounds 84-101%': the spread of the per-round values behind a median
    (empty for runs that did not record it), so a verdict near its limit
    shows how far the machine's noise reaches."""
    if not lo_hi:
        return ""
    lo, hi = lo_hi
    if unit == "%":
        text = f"rounds {100 * lo:.0f}-{100 * hi:.0f}%"
    else:
        text = f"rounds {lo:.2f}-{hi:.2f}x"
    return f"{sep}{text}" if sep else f" ({text})"


def _pct(x):
    return "—" if x is None else f"{x:.0%}"


def build_markdown(res, args, started_info, total_s):
    L = ["# sscrf benchmark suite", ""]
    L.append(host.machine_line(started_info))
    load_end = res.get("load_average_end")
    L.append(f"Load average at start {started_info.get('load_average')}, at end {load_end}; "
             f"suite wall time {total_s / 60:.1f} min. Mode: "
             f"{'QUICK (smoke test on a subset; numbers are not meaningful)' if args.quick else 'full'}"
             f"; repeats {args.repeats}; threads {args.thread_list}.")
    L.append(f"Command: `{res['command']}`")
    usable = started_info.get("usable_cpus") or 0
    if started_info.get("load_average") and started_info["load_average"][0] > 0.5 * usable:
        L.append("")
        L.append(f"**Warning:** this machine was busy with other jobs (load "
                 f"{started_info['load_average'][0]:.1f} on {usable} usable CPUs). Absolute "
                 "times, thread scaling and some ratios are distorted; the ratios of tools run "
                 "back to back are the more trustworthy figures.")
    if res.get("errors"):
        L += ["", "**Items that failed:** " + "; ".join(f"{k}: {v.splitlines()[0]}"
                                                        for k, v in res["errors"].items())]
    L.append("")

    checked = res.get("targets", [])
    if checked:
        L += ["## Targets (medians of ratios measured back to back)", ""]
        if args.quick:
            L += ["Quick run: the verdicts only show that every check runs; on a few hundred "
                  "sentences fixed per-call costs dominate and the numbers mean little.", ""]
        L.append(tables.markdown_table(
            ["item", "verdict", "target", "measured", "run"],
            [[t["item"], tables.verdict(t["ok"]), t["name"] + (f" — {t['note']}" if t["note"]
                                                                 else ""), t["value"], t["run"]]
             for t in checked], align="llllll"))
        counts = {v: sum(1 for t in checked if tables.verdict(t["ok"]) == v)
                  for v in ("PASS", "FAIL", "N/A")}
        L += ["", f"{counts['PASS']} PASS, {counts['FAIL']} FAIL, {counts['N/A']} N/A.", ""]

    sup = res.get("supervised")
    if sup:
        tag = machine_tag(sup["machine"])
        st = sup["settings"]
        s, r = sup["summary"], sup["ratios"]
        L += ["## 1. Supervised training, CoNLL-2000 (and 6. peak memory)", "",
              f"First-order CRF, CRFsuite chunking attributes, c2 = {st['c2']:g}, L-BFGS "
              f"≤ {st['max_iterations']} iterations, stopping rule epsilon {st['epsilon']:g} / "
              f"period {st['period']} / delta {st['delta']:g}; {st['repeats']} repetitions, "
              "configurations back to back, each in its own process; medians, ratios to "
              "CRFsuite as median of per-repetition ratios (ratio of medians in brackets). "
              "s/eval = optimiser time / loss-and-gradient evaluations (optimiser included); "
              "eval-only = a bare sscrf loss-and-gradient call at the trained weights. "
              f"Peak MB = whole-process ru_maxrss (read, extract, train, decode; a bare child's "
              f"floor is {tables.fmt_mb(sup.get('child_rss_floor_bytes'))} MB). "
              + ("\"2 threads\" is every CPU of this machine." if usable == 2 else
                 f"bench/suite/supervised.py runs sscrf at 1 and 2 threads; this machine has "
                 f"{usable} usable CPUs (see item 2 for all thread counts)."), ""]
        rows = []
        order = ["crfsuite observed-1", "sscrf observed-1", "sscrf observed-2",
                 "sscrf dense-1", "sscrf dense-2"]
        for key in [k for k in order if k in s] + [k for k in s if k not in order]:
            x, q = s[key], r[key]
            rows.append([
                key, f"{x['f1']:.2f}", tables.fmt_num(x["n_parameters"]), x["evaluations"],
                tables.fmt_num(x["s_per_eval"]), tables.fmt_num(x.get("eval_only_s")),
                tables.fmt_num(x["train_s"], 1),
                f"{tables.fmt_ratio(q['s_per_eval_median_paired_ratio'])} "
                f"({tables.fmt_ratio(q['s_per_eval_ratio_of_medians'])})",
                f"{tables.fmt_ratio(q['total_median_paired_ratio'])} "
                f"({tables.fmt_ratio(q['total_ratio_of_medians'])})",
                tables.fmt_mb(x["peak_rss_bytes"]), tables.fmt_ratio(q["peak_ratio"]), tag])
        L.append(tables.markdown_table(
            ["config", "F1", "params", "evals", "s/eval", "eval-only s", "total s",
             "s/eval ratio", "total ratio", "peak MB", "peak ratio", "run"], rows,
            align="lrrrrrrrrrrl"))
        if sup.get("core_line"):
            L += ["", sup["core_line"]]
        L.append("")

    sc = res.get("scaling")
    if sc:
        tag = machine_tag(sc["machine"])
        su = sc["setup"]
        by = sc["summary"]["by_term"]
        L += ["## 2. Thread scaling of the loss-and-gradient terms", "",
              f"CoNLL-2000 train ({su['n_sentences']:,} sentences, {su['n_tokens']:,} tokens, "
              f"{su['nnz_per_token']:.1f} attributes per token), dense layout, S = {su['S']}, "
              f"{su['n_parameters']:,} parameters, θ ~ N(0, 0.1²) random (seed 0). "
              f"{sc['rounds']} rounds (terms in rotating order, thread counts back to back; "
              f"for item 3 each term's 1-thread calls interleaved with the likelihood's); "
              f"a sample repeats the call for ≥ {sc['min_time']} s, writing into one reused "
              "gradient array (as training does). Efficiency = speed-up / "
              "threads, median of per-round values (from medians in brackets). `same bits` = "
              "value and gradient equal to the 1-thread result bit for bit.", ""]
        rows = []
        for name, d in by.items():
            for th in sc["threads"]:
                row = d[str(th)]
                ident = row.get("identical_to_1_thread")
                rows.append([name, th, f"{row['tokens_per_s']:,.0f}",
                             tables.fmt_num(1e6 * row["s_per_token"], 3),
                             tables.fmt_ratio(row.get("speedup")),
                             f"{_pct(row.get('median_paired_efficiency'))} "
                             f"({_pct(row.get('efficiency'))})",
                             "—" if ident is None else ("yes" if ident else "NO"), tag])
        L.append(tables.markdown_table(
            ["term", "threads", "tokens/s", "µs/token", "speed-up", "efficiency", "same bits",
             "run"], rows, align="lrrrrrrl"))
        L.append("")
        for name, note in sc["notes"].items():
            L.append(f"- {name}: {note}")
        if sc.get("not_benchmarked"):
            L.append(f"- registered but not benchmarked (no builder in bench/suite/scaling.py): "
                     f"{', '.join(sc['not_benchmarked'])}")
        L += ["", "## 3. Cost per token relative to likelihood (1 thread)", ""]
        rows = []
        for name, c in sc["summary"]["cost_vs_likelihood"].items():
            lim = {"entropy": f"≤ {targets.ENTROPY_COST}x (aim {targets.ENTROPY_AIM}x)",
                   "ge": f"≤ {targets.GE_COST}x"}.get(name, "—")
            rows.append([name, tables.fmt_num(c["us_per_token"], 3),
                         f"{tables.fmt_ratio(c['median_paired_ratio'])} "
                         f"({tables.fmt_ratio(c['ratio_of_medians'])})", lim, tag])
        L.append(tables.markdown_table(
            ["term", "µs/token", "vs likelihood (median paired; ratio of medians)", "target",
             "run"], rows, align="lrrll"))
        L.append("")

    tg = res.get("tagging")
    if tg:
        tag = machine_tag(tg["machine"])
        L += ["## 4. Tagging throughput, CoNLL-2000 test", "", f"Run: {tag}.", "",
              throughput.tagging_tables(tg["tagging"]), ""]
    ex = res.get("extraction")
    if ex:
        tag = machine_tag(ex["machine"])
        L += ["## 5. Feature extraction throughput, CoNLL-2000 train", "", f"Run: {tag}.", "",
              throughput.extraction_tables(ex["extraction"]), ""]
    co = res.get("corpora")
    if co:
        L += ["## 7. Loss and gradient per evaluation on other corpora (no target)", ""]
        if co.get("skipped"):
            L += [f"Skipped: {co['skipped']}.", ""]
        else:
            L += [eval_time.SETTINGS, "", eval_time.table(co["rows"]), ""]
    return "\n".join(L)


def write_outputs(res, args, started_info, started):
    res["targets"] = check_targets(res, args.quick)
    res["load_average_end"] = host.machine_info()["load_average"]
    res["settings"]["data"] = args.data
    total = time.perf_counter() - started
    res["suite_wall_s"] = total
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "suite.json"), "w", encoding="utf-8") as f:
        json.dump(res, f, indent=1, default=str)
        f.write("\n")
    md = build_markdown(res, args, started_info, total)
    with open(os.path.join(args.out, "suite.md"), "w", encoding="utf-8") as f:
        f.write(md + "\n")
    return md
