"""Statistics and Markdown formatting of benchmark results (standard library only)."""

import json
import os
import statistics

__all__ = ["median", "ratio", "fmt_ratio", "fmt_num", "fmt_mb", "markdown_table", "verdict",
           "write_report"]


# -- statistics and formatting -------------------------------------------------


def median(values):
    """Median of the non-None values, or None when there are none."""
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def ratio(value, reference):
    """``value / reference``, or None when either is missing or the reference is 0."""
    if value is None or reference is None or reference == 0:
        return None
    return value / reference


def fmt_ratio(x, digits=2):
    """``"0.87x"``; ``"—"`` for None."""
    return "—" if x is None else f"{x:.{digits}f}x"


def fmt_num(x, digits=3):
    """A float with ``digits`` significant decimals (ints unchanged); ``"—"`` for None."""
    if x is None:
        return "—"
    if isinstance(x, int) and not isinstance(x, bool):
        return f"{x:,}"
    if x != 0 and abs(x) < 10 ** -(digits - 1):
        return f"{x:.{digits}g}"
    return f"{x:.{digits}f}"


def fmt_mb(n_bytes):
    """Bytes as decimal megabytes, e.g. ``"512.3"``; ``"—"`` for None."""
    return "—" if n_bytes is None else f"{n_bytes / 1e6:.1f}"


def markdown_table(headers, rows, align=None):
    """A GitHub-flavoured Markdown table.

    Parameters
    ----------
    headers : list of str
    rows : list of list
        Cells are converted with ``str``.
    align : str or None
        One character per column, ``"l"`` or ``"r"``; default: first column
        left, the rest right.
    """
    align = align or "l" + "r" * (len(headers) - 1)
    cells = [[str(c) for c in row] for row in rows]
    widths = [max([len(h)] + [len(r[i]) for r in cells]) for i, h in enumerate(headers)]

    def line(row):
        parts = [c.ljust(w) if a == "l" else c.rjust(w) for c, w, a in zip(row, widths, align)]
        return "| " + " | ".join(parts) + " |"

    rule = "|" + "|".join(
        ("-" * (w + 1) + ":") if a == "r" else (":" + "-" * (w + 1))
        for w, a in zip(widths, align)) + "|"
    return "\n".join([line(headers), rule] + [line(r) for r in cells])


def verdict(ok):
    """``"PASS"``, ``"FAIL"``, or ``"N/A"`` for None."""
    return "N/A" if ok is None else ("PASS" if ok else "FAIL")


def write_report(out_dir, stem, report, payload):
    """Prints ``report`` and writes it to OUT/stem.md, ``payload`` to OUT/stem.json."""
    print(report)
    os.makedirs(out_dir, exist_ok=True)
    with open(os.path.join(out_dir, f"{stem}.md"), "w") as f:
        f.write(report + "\n")
    with open(os.path.join(out_dir, f"{stem}.json"), "w") as f:
        json.dump(payload, f)
