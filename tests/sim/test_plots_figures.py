"""Plot functions return Figures and never select a matplotlib backend.

A notebook keeps its inline backend: the test switches matplotlib to the ``svg`` backend,
draws every picture of the package (simulator, bench runner, plan Gantt), and checks the
backend is still ``svg``; a source scan checks that no library module calls
``matplotlib.use`` or imports ``pyplot`` (only the CLI may).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

matplotlib = pytest.importorskip("matplotlib")
from matplotlib.figure import Figure  # noqa: E402

from gensolver.sim import simulate  # noqa: E402
from gensolver.sim.plots import figures, plot_credits, plot_gantt, plot_jct_cdf, plot_utilisation  # noqa: E402
from gensolver.sim.workload import synthetic_workload  # noqa: E402

PKG = Path(__file__).resolve().parents[2] / "gensolver"


def _offenders(root: Path = PKG) -> list[str]:
    found = []
    for path in root.rglob("*.py"):
        if "cli" in path.relative_to(root).parts:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "use" \
                    and isinstance(node.func.value, ast.Name) and node.func.value.id == "matplotlib":
                found.append(f"{path.name}:{node.lineno} matplotlib.use")
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                names = [a.name for a in node.names] + ([node.module] if isinstance(node, ast.ImportFrom) and node.module else [])
                if any(n and n.startswith("matplotlib.pyplot") for n in names) or \
                        (isinstance(node, ast.ImportFrom) and node.module == "matplotlib" and
                         any(a.name == "pyplot" for a in node.names)):
                    found.append(f"{path.name}:{node.lineno} pyplot")
    return sorted(found)


def test_no_library_module_switches_the_backend_or_uses_pyplot() -> None:
    assert _offenders() == []


def test_the_scan_finds_an_offender(tmp_path: Path) -> None:
    (tmp_path / "m.py").write_text("import matplotlib\nmatplotlib.use('Agg')\nimport matplotlib.pyplot as plt\n")
    (tmp_path / "cli").mkdir()
    (tmp_path / "cli" / "ok.py").write_text("import matplotlib\nmatplotlib.use('Agg')\n")  # the CLI may
    assert _offenders(tmp_path) == ["m.py:2 matplotlib.use", "m.py:3 pyplot"]


def test_plots_return_figures_and_keep_the_backend(tmp_path: Path) -> None:
    from gensolver.bench.runner import CellResult, plot_quality, plot_time  # noqa: F401
    from gensolver.executor import plot_plan, to_plan
    from gensolver.model import GpuRound
    from gensolver.solvers import solve

    before = matplotlib.get_backend()
    matplotlib.use("svg")
    try:
        r = simulate(synthetic_workload(4), policy="elastic")
        figs = [plot_gantt(r), plot_utilisation([r]), plot_jct_cdf([r]), plot_credits([r]), *figures([r]).values()]
        doc = {"schema": "gensolver.gpuround/v1", "steps": 2,
               "gpus": [{"id": "g0", "memory": 16}],
               "tasks": [{"id": "t", "tenant": "a", "min_memory": 4, "preferred_memory": 8, "duration": 1,
                          "value": 3, "command": ["true"]}]}
        rnd = GpuRound.from_dict(doc)
        inst = rnd.expand()
        figs.append(plot_plan(to_plan(inst, solve(inst, method="greedy"), {t.id: t for t in rnd.tasks})))
        assert all(isinstance(f, Figure) for f in figs)
        assert matplotlib.get_backend() == "svg"
        assert list(tmp_path.iterdir()) == []  # no path: nothing written
        fig = plot_jct_cdf([r], tmp_path / "jct.png")
        assert isinstance(fig, Figure) and (tmp_path / "jct.png").read_bytes()[:4] == b"\x89PNG"
    finally:
        matplotlib.use(before)
