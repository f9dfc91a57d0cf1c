"""``benchmarks/bench_service_goals.py``: its verdicts against the issue's bounds, and its clean-up
of a part that overruns (the figures themselves are speed, measured by the script, not here)."""

from __future__ import annotations

import copy
import importlib.util
import time
from pathlib import Path

import pytest

SCRIPT = Path(__file__).parents[2] / "benchmarks" / "bench_service_goals.py"


@pytest.fixture(scope="module")
def goals():
    spec = importlib.util.spec_from_file_location("bench_service_goals", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


CONN = {"connections": 20000, "probes": 40, "livez_p50_s": 0.01, "livez_max_s": 0.2, "healthz_p50_s": 0.02,
        "healthz_max_s": 0.3, "submit_p50_s": 0.03, "submit_max_s": 0.4, "rss_start_mb": 124, "rss_peak_mb": 140,
        "big_header_status": 431}
TEN = {"tenants": 10000, "limit": 100, "seen": 10001, "page_p99_ms": 20.0, "walk_p50_ms": 8.0, "first_p50_ms": 7.0,
       "metrics_public_kb": 6.8, "metrics_public_tenant_series": 0}
STORE = {"backends": {b: {"per_s": per_s, "p99_ms": 200.0, "tasks": 2000, "lost": 0, "duplicated": 0}
                      for b, per_s in (("sqlite", 800.0), ("postgresql", 400.0), ("postgresql-2", 100.0))}}


def test_figures_within_the_bounds_are_all_met(goals):
    table = goals.rows(CONN, TEN, STORE)
    assert len(table) == 10 and all(met for *_, met in table)


# each figure just past the bound (1 s, 300 MB, 431, 50 ms, 100 KB, 500/s and 300/s, p99 300 ms)
@pytest.mark.parametrize("part, path, value, goal", [
    ("conn", ["livez_max_s"], 1.01, "/livez"), ("conn", ["healthz_max_s"], float("inf"), "/healthz"),
    ("conn", ["submit_max_s"], 1.5, "submission"), ("conn", ["rss_peak_mb"], 300, "RSS"),
    ("conn", ["big_header_status"], 413, "1 MiB"), ("ten", ["page_p99_ms"], 50.5, "page"),
    ("ten", ["seen"], 9999, "page"), ("ten", ["metrics_public_kb"], 100.0, "/metrics"),
    ("ten", ["metrics_public_tenant_series"], 3, "/metrics"),
    ("store", ["backends", "sqlite", "per_s"], 499.0, "sqlite"),
    ("store", ["backends", "postgresql", "per_s"], 299.0, "postgresql"),
    ("store", ["backends", "postgresql", "p99_ms"], 300.0, "postgresql"),
    ("store", ["backends", "sqlite", "lost"], 1, "sqlite"),
    ("store", ["backends", "postgresql-2", "duplicated"], 1, "postgresql-2"),
])
def test_a_figure_past_its_bound_is_not_met(goals, part, path, value, goal):
    figures = {"conn": copy.deepcopy(CONN), "ten": copy.deepcopy(TEN), "store": copy.deepcopy(STORE)}
    node = figures[part]
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    missed = [g for g, _, _, met in goals.rows(figures["conn"], figures["ten"], figures["store"]) if not met]
    assert len(missed) == 1 and goal in missed[0]


def test_a_part_without_figures_is_not_met(goals):
    table = goals.rows(None, TEN, {"backends": {"sqlite": STORE["backends"]["sqlite"]}})
    missed = [g for g, _, _, met in table if not met]
    assert len(missed) == 2 and "connections" in missed[0] and "postgresql" in missed[1]


def test_a_part_past_its_limit_is_stopped_with_its_whole_group(goals, tmp_path):
    """A part that ignores SIGINT and leaves a child behind: both are gone when run_part returns."""
    pidfile = tmp_path / "child.pid"
    part = tmp_path / "stuck.py"
    part.write_text(
        "import signal, subprocess, sys, time\n"
        "signal.signal(signal.SIGINT, signal.SIG_IGN)\n"
        "child = subprocess.Popen([sys.executable, '-c', 'import signal, time; "
        "signal.signal(signal.SIGINT, signal.SIG_IGN); time.sleep(600)'])\n"
        f"open({str(pidfile)!r}, 'w').write(str(child.pid))\n"
        "time.sleep(600)\n")
    figures, note = goals.run_part(str(part), [], limit=3, grace=1)
    assert figures is None and note.startswith("interrupted after 3 s")
    child = int(pidfile.read_text())
    deadline = time.monotonic() + 60
    while not _gone(child) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _gone(child)


def _gone(pid: int) -> bool:
    """Whether ``pid`` has ended (a zombie waiting for init to reap it counts as ended)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except FileNotFoundError:
        return True


def test_a_part_that_finishes_gives_its_figures(goals, tmp_path):
    part = tmp_path / "quick.py"
    part.write_text("import json, sys\nopen(sys.argv[sys.argv.index('--json') + 1], 'w').write(json.dumps({'x': 1}))\n")
    figures, note = goals.run_part(str(part), [], limit=120)
    assert figures == {"x": 1} and "load" in note
