"""A run's results: cells derived from journal rows, the tables, and the files written.

:func:`write_outputs` writes ``results.csv``, ``results.json``, ``report.md`` and the plots (see
:mod:`.plots`), each atomically, after building all of them in memory.
"""

from __future__ import annotations

import json
import math
import os
import platform
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

from ..model import atomic_write
from ..model.io import json_safe
from ..model.validate import is_real
from .cell import UNAVAILABLE, CellResult
from .journal import JOURNAL
from .plots import _plots
from .suites import Suite

__all__ = ["output_paths", "table_rows", "summary_rows", "write_outputs", "COLUMNS"]


def _finite(value: Any) -> float | None:
    """``value`` as a float when it is a finite number, else ``None``."""
    if is_real(value) and math.isfinite(value):
        return float(value)
    return None


def _derive(suite: Suite, rows: Iterable[Mapping[str, Any]]) -> list[CellResult]:
    rows = list(rows)
    entries = {e.name: e for e in suite.entries}
    best: dict[str, float | None] = {}
    bound: dict[str, float | None] = {}
    for name, e in entries.items():
        ok_rows = [r for r in rows if r["instance"] == name and r.get("status") in ("optimal", "feasible")]
        found = [_finite(r.get("welfare")) for r in ok_rows]
        cands = [v for v in [_finite(e.best_welfare), *found] if v is not None]
        best[name] = max(cands) if cands else None
        bounds = [_finite(r.get("bound")) for r in ok_rows]
        bcands = [v for v in [_finite(e.bound_value), *bounds] if v is not None]
        bound[name] = min(bcands) if bcands else None
    fields = set(CellResult.__dataclass_fields__)
    out = []
    for r in rows:
        e = entries[r["instance"]]
        ok = r.get("status") in ("optimal", "feasible")
        welfare = _finite(r.get("welfare")) or 0.0
        b, ub = best[e.name], bound[e.name]
        extra = {
            "best_known": b,
            "best_bound": ub,
            "pct_best": (100.0 * welfare / b if b and b > 0 else (100.0 if b == 0 else None)) if ok else None,
            "gap_to_bound": (max(0.0, (ub - welfare) / ub) if ub and ub > 0 else (0.0 if ub == 0 else None)) if ok else None,
            "slots": r.get("slots") or e.size.get("slots", 0),
            "bids": r.get("bids") or e.size.get("bids", 0),
            "bidders": r.get("bidders") or e.size.get("bidders", 0),
        }
        kw = {k: v for k, v in r.items() if k in fields}
        kw.update(extra)
        kw["welfare"] = welfare
        kw["seconds"] = _finite(r.get("seconds")) or 0.0
        kw["error"] = r.get("error") or ""
        kw["mechanism_note"] = r.get("mechanism_note") or ""
        kw["payments_note"] = r.get("payments_note") or ""
        kw["worker"] = r.get("worker") or ""
        out.append(CellResult(**kw))
    return out


def output_paths(out: str | os.PathLike[str], *, plots: bool = True) -> tuple[Path, ...]:
    """The files a run writes in ``out``: the journal, CSV, JSON, report and (``plots``) the PNGs."""
    names = [JOURNAL, "results.csv", "results.json", "report.md"]
    if plots:
        names += ["quality_vs_time.png", "time_vs_size.png"]
    return tuple(Path(out) / n for n in names)


COLUMNS = ("instance", "family", "bids", "method", "status", "welfare", "pct_best", "gap_to_bound", "seconds",
           "payments_seconds", "max_regret", "error")


def _fmt(v: Any, kind: str = "") -> str:
    if v is None:
        return "—"
    if kind == "pct":
        return f"{v:.2f}"
    if kind == "gap":
        return f"{100 * v:.3f} %"
    if isinstance(v, float):
        return f"{v:.6g}" if kind != "s" else f"{v:.3f}"
    return str(v)


def table_rows(cells: Sequence[CellResult], *, mechanism: str | None) -> tuple[list[str], list[list[str]]]:
    """Header and rows of the results table (as printed by the CLI and the report)."""
    head = ["instance", "bids", "method", "status", "welfare", "% best", "gap to bound", "seconds"]
    if mechanism:
        head += ["payments s", "exact", "max regret"]
    rows = []
    for c in cells:
        row = [c.instance, str(c.bids), c.method, c.status, _fmt(c.welfare) if c.status != "error" else "—",
               _fmt(c.pct_best, "pct"), _fmt(c.gap_to_bound, "gap"), _fmt(c.seconds, "s")]
        if mechanism:
            exact = "—" if c.payments_exact is None else ("yes" if c.payments_exact else "no")
            if c.mechanism_note:
                row += [c.mechanism_note if c.payments_seconds is None else _fmt(c.payments_seconds, "s"), exact,
                        c.mechanism_note if c.max_regret is None else _fmt(c.max_regret)]
            else:
                row += [_fmt(c.payments_seconds, "s"), exact, _fmt(c.max_regret)]
        rows.append(row)
    return head, rows


def _markdown(head: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    lines = ["| " + " | ".join(head) + " |", "|" + "|".join("---" for _ in head) + "|"]
    lines += ["| " + " | ".join(r).replace("\n", " ") + " |" for r in rows]
    return "\n".join(lines)


def summary_rows(cells: Sequence[CellResult], methods: Sequence[str]) -> list[list[str]]:
    """Per method: cells, errors, optimal, mean % of best known, total and max seconds."""
    out = []
    for m in methods:
        mine = [c for c in cells if c.method == m]
        ok = [c for c in mine if c.pct_best is not None]
        pct = sum(c.pct_best for c in ok) / len(ok) if ok else None  # type: ignore[misc]
        out.append([m, str(len(mine)), str(sum(c.status == "error" for c in mine)),
                    str(sum(c.status == "optimal" for c in mine)), _fmt(pct, "pct"),
                    f"{sum(c.seconds for c in mine):.3f}", f"{max((c.seconds for c in mine), default=0.0):.3f}"])
    return out


def write_outputs(suite: Suite, cells: Sequence[CellResult], out: Path, *, methods: Sequence[str],
                  per_solve_limit: float | None, mechanism: str | None, executor_label: str, jobs: int | None,
                  plots: bool = True) -> dict[str, Path]:
    """Write ``results.csv``, ``results.json``, ``report.md`` and the plots, each atomically.

    Every output is built in memory first (a non-finite number becomes ``null`` in the JSON and
    an empty field in the CSV), so a failure while preparing them writes none of them.
    """
    import csv
    import io

    buf = io.StringIO()
    names = list(CellResult.__dataclass_fields__)
    w = csv.DictWriter(buf, fieldnames=names, lineterminator="\n")
    w.writeheader()
    for c in cells:
        w.writerow({k: ("" if v is None else json.dumps(v) if isinstance(v, dict) else v)
                    for k, v in json_safe(c.to_dict()).items()})
    meta = {"suite": suite.name, "methods": list(methods), "per_solve_limit": per_solve_limit, "mechanism": mechanism,
            "executor": executor_label, "jobs": jobs, "host": platform.node(), "cpus": os.cpu_count(),
            "python": platform.python_version()}
    results_json = json.dumps(json_safe({"meta": meta, "cells": [c.to_dict() for c in cells]}), indent=1,
                              allow_nan=False)
    head, rows = table_rows(cells, mechanism=mechanism)
    md = [f"# Benchmark: suite `{suite.name}`", "",
          f"- methods: {', '.join(methods)}; limit of each solve: {per_solve_limit if per_solve_limit is not None else 'none'} s",
          f"- executor: {executor_label}" + (f" ({jobs} workers)" if jobs else "") + f"; {os.cpu_count()} CPUs",
          f"- mechanism: {mechanism or 'none'}"]
    if mechanism and any(c.mechanism_note == UNAVAILABLE for c in cells):
        md.append("- payments and regret: unavailable (gensolver.mechanisms could not be imported)")
    md += ["- `% best`: welfare / best known (manifest, or better found in this run); `gap to bound`: "
           "(best bound - welfare) / best bound", "", "## Results", "", _markdown(head, rows), "",
           "## Per method", "",
           _markdown(["method", "cells", "errors", "optimal", "mean % best", "total s", "max s"], summary_rows(cells, methods))]
    inexact = [c for c in cells if c.payments_exact is False]
    if inexact:
        md += ["", "## Inexact payments", "",
               "Payments charged are not the mechanism's exact payments; each lies in the interval given "
               "(`payment_bounds` in results.json).", ""]
        for c in inexact:
            widest = max(((b, hi - lo) for b, (lo, hi) in (c.payment_bounds or {}).items()
                          if lo is not None and hi is not None), key=lambda t: t[1], default=None)
            md.append(f"- `{c.instance}` / `{c.method}`: {c.payments_note}"
                      + (f" (widest interval: bidder `{widest[0]}`, {widest[1]:.6g})" if widest else ""))
    errors = [c for c in cells if c.status == "error"]
    if errors:
        md += ["", "## Errors", ""] + [f"- `{c.instance}` / `{c.method}`: {c.error}" for c in errors]
    if plots:
        md += ["", "## Plots", "", "![quality vs time](quality_vs_time.png)", "", "![solve time vs size](time_vs_size.png)"]
    pngs = _plots(cells, methods, suite.name) if plots else {}

    # every output is ready: write them, each atomically
    files: dict[str, Path] = {"results_csv": out / "results.csv", "results_json": out / "results.json"}
    contents: list[tuple[str, Path, str | bytes]] = [("results_csv", files["results_csv"], buf.getvalue()),
                                                     ("results_json", files["results_json"], results_json)]
    contents += [(key, out / name, data) for key, (name, data) in pngs.items()]
    contents.append(("report", out / "report.md", "\n".join(md) + "\n"))
    for key, path, data in contents:
        with atomic_write(path, "wb" if isinstance(data, bytes) else "w") as fh:
            fh.write(data)
        files[key] = path
    return files
