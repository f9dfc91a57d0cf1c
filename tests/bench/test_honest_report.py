"""Bench reports carry ``payments_exact``, each bidder's payment interval and the reason."""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from gensolver.bench import load_suite, run_suite
from gensolver.mechanisms import run_mechanism
from gensolver.model import read_instance


def test_bench_reports_carry_exactness_and_intervals(tmp_path: Path, smoke_copy: Path) -> None:
    suite = load_suite(smoke_copy)
    with ThreadPoolExecutor(max_workers=1) as pool:
        res = run_suite(suite, methods=["greedy"], mechanism="vcg", executor=pool, out_dir=tmp_path / "m",
                        progress=False, plots=False)
    cells = [c for c in res.cells if c.status != "error"]
    assert cells and all(c.payments_exact is not None and c.payment_bounds for c in cells)
    inexact = [c for c in cells if not c.payments_exact]
    assert inexact and all(c.payments_note for c in inexact)
    report = (tmp_path / "m" / "report.md").read_text()
    assert "## Inexact payments" in report and "| exact |" in report
    rows = json.loads((tmp_path / "m" / "results.json").read_text())["cells"]
    assert all("payment_bounds" in r and "payments_exact" in r for r in rows)
    # the intervals of the greedy-based VCG contain the exact VCG payments (CP-SAT, proven)
    entries = {e.name: e for e in suite.entries}
    for c in inexact[:2]:
        inst = read_instance(Path(smoke_copy) / entries[c.instance].file)
        exact = run_mechanism(inst, mechanism="vcg", method="cpsat")
        assert exact.exact
        for bidder, p in exact.payments.items():
            lo, hi = c.payment_bounds[bidder]
            assert lo - 1e-6 <= p <= hi + 1e-6, (c.instance, bidder, lo, p, hi)
