"""The benchmark's cells and tables (:mod:`gensolver.bench.cell`, :mod:`gensolver.bench.report`,
:mod:`gensolver.bench.plots`): method lists checked up front, table and summary rows computed
here by hand from the cells, the plots one point per finished cell."""

from __future__ import annotations

import pytest

from gensolver.bench.cell import CellResult, check_methods
from gensolver.bench.report import COLUMNS, output_paths, summary_rows, table_rows
from gensolver.errors import InputError
from gensolver.solvers import UnknownMethodError

CELLS = [
    CellResult("k1", "i1", "fam", "greedy", "feasible", 90.0, 0.5, bids=10, pct_best=90.0, gap_to_bound=0.1),
    CellResult("k2", "i2", "fam", "greedy", "optimal", 50.0, 1.5, bids=20, pct_best=100.0, gap_to_bound=0.0),
    CellResult("k3", "i1", "fam", "lp", "error", float("nan"), 0.25, bids=10, error="boom"),
]


def test_table_rows_show_each_cell() -> None:
    head, rows = table_rows(CELLS, mechanism=None)
    assert head == ["instance", "bids", "method", "status", "welfare", "% best", "gap to bound", "seconds"]
    assert rows[0] == ["i1", "10", "greedy", "feasible", "90", "90.00", "10.000 %", "0.500"]
    assert rows[2][3:5] == ["error", "—"]  # a failed cell has no welfare
    head, rows = table_rows(CELLS[:1], mechanism="vcg")
    assert head[-3:] == ["payments s", "exact", "max regret"] and rows[0][-3:] == ["—", "—", "—"]


def test_summary_rows_add_up_per_method() -> None:
    rows = {r[0]: r for r in summary_rows(CELLS, ["greedy", "lp"])}
    # greedy: 2 cells, 0 errors, 1 optimal, mean of 90 and 100, 0.5 + 1.5 s, max 1.5 s
    assert rows["greedy"] == ["greedy", "2", "0", "1", "95.00", "2.000", "1.500"]
    assert rows["lp"] == ["lp", "1", "1", "0", "—", "0.250", "0.250"]


def test_output_paths_and_columns() -> None:
    names = [p.name for p in output_paths("out")]
    assert names[1:4] == ["results.csv", "results.json", "report.md"] and len(names) == 6
    assert len(output_paths("out", plots=False)) == 4
    assert set(COLUMNS) <= set(CellResult.__dataclass_fields__)


def test_method_lists_are_checked_before_any_run() -> None:
    assert check_methods(["greedy", "lp"]) == ["greedy", "lp"]
    assert "greedy" in check_methods(None)
    with pytest.raises(InputError, match="not a string"):
        check_methods("greedy")  # type: ignore[arg-type]
    with pytest.raises(InputError, match="duplicate names"):
        check_methods(["greedy", "greedy"])
    with pytest.raises(InputError, match="must not be empty"):
        check_methods([])
    with pytest.raises(UnknownMethodError):
        check_methods(["nope"])


def test_the_plots_draw_one_point_per_finished_cell() -> None:
    pytest.importorskip("matplotlib")
    from gensolver.bench.plots import plot_quality, plot_time

    fig = plot_quality(CELLS, ["greedy", "lp"], "s")
    points = [tuple(map(tuple, c.get_offsets())) for c in fig.axes[0].collections]
    assert points == [((0.5, 90.0), (1.5, 100.0))]  # lp's only cell failed: no point
    fig = plot_time(CELLS, ["greedy", "lp"], "s")
    assert [list(zip(line.get_xdata(), line.get_ydata())) for line in fig.axes[0].lines] == [[(10, 0.5), (20, 1.5)]]
