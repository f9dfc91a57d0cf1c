"""The runner: local pool vs Dask, resume after a kill, corrupt files, outputs, CLI."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
from pathlib import Path

import pytest

from gensolver.bench import load_entry, load_suite, read_journal, run_suite
from gensolver.cli import main
from gensolver.verify import brute_force

ROOT = Path(__file__).resolve().parents[2]


def _optimum(inst):  # noqa: ANN001, ANN202
    try:
        return brute_force(inst, limit=60_000)[0]
    except ValueError:
        return None


def test_local_pool_and_dask_cluster_give_the_same_table(tmp_path: Path) -> None:
    distributed = pytest.importorskip("distributed")
    methods = ["cpsat", "greedy"]
    with ProcessPoolExecutor(max_workers=2) as pool:
        local = run_suite("smoke", methods=methods, executor=pool, out_dir=tmp_path / "local", progress=False,
                          plots=False)
    with distributed.LocalCluster(n_workers=2, processes=True, threads_per_worker=1, dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        remote = run_suite("smoke", methods=methods, executor=client.get_executor(), out_dir=tmp_path / "dask",
                           progress=False, plots=False)
        workers = {c.worker for c in remote.cells}
    assert not local.errors and not remote.errors
    assert local.welfare_table().keys() == remote.welfare_table().keys()
    for key, w in local.welfare_table().items():
        assert remote.welfare_table()[key] == pytest.approx(w, rel=1e-9, abs=1e-9), key
    assert len(workers) >= 1 and all(":" in w for w in workers)
    # independent certificates: the exact method matches brute force where it is small enough,
    # and greedy never beats it
    suite = load_suite("smoke")
    checked = 0
    for e in suite.entries:
        inst = load_entry(suite, e)
        opt = _optimum(inst)
        table = local.welfare_table()
        if opt is not None:
            checked += 1
            assert table[(e.name, "cpsat")] == pytest.approx(opt, rel=1e-6)
            assert table[(e.name, "greedy")] <= opt + 1e-6
    assert checked >= 4


RESUME_SCRIPT = """
import sys
from tests.bench.helpers import slow_greedy
from gensolver.bench import run_suite
r = run_suite(sys.argv[1], methods=[slow_greedy], jobs=1, out_dir=sys.argv[2], progress=False, plots=False)
print("ran", r.ran, "resumed", r.resumed)
"""


def test_killed_run_resumes_without_redoing_cells(tmp_path: Path, smoke_copy: Path) -> None:
    out = tmp_path / "out"
    journal = out / "cells.jsonl"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    cmd = [sys.executable, "-c", RESUME_SCRIPT, str(smoke_copy), str(out)]
    proc = subprocess.Popen(cmd, cwd=ROOT, env=env, start_new_session=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.time() + 60
    try:
        while time.time() < deadline:
            if journal.exists() and len(journal.read_text().splitlines()) >= 3:
                break
            if proc.poll() is not None:
                pytest.fail(f"run ended before it could be killed: {proc.communicate()}")
            time.sleep(0.05)
        os.killpg(proc.pid, signal.SIGKILL)  # the run and its pool workers
    finally:
        proc.wait(timeout=30)
    before = journal.read_text().splitlines()
    n_suite = len(load_suite(smoke_copy).entries)
    assert 3 <= len(before) < n_suite
    done = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    finished_before = len([ln for ln in before if ln.strip().endswith("}")])
    assert f"resumed {finished_before}" in done.stdout
    after = journal.read_text().splitlines()
    assert after[:finished_before] == before[:finished_before]  # finished cells untouched
    keys = [json.loads(ln)["key"] for ln in after if ln.strip()]
    assert len(keys) == len(set(keys)) == n_suite  # every cell once, none redone
    assert set(read_journal(journal)) == set(keys)


def test_corrupt_instance_fails_only_its_cells(tmp_path: Path, smoke_copy: Path) -> None:
    suite = load_suite(smoke_copy)
    broken, renamed = suite.entries[1], suite.entries[2]
    path = suite.path_of(broken)
    path.write_bytes(path.read_bytes()[:40])  # truncated gzip
    with ThreadPoolExecutor(max_workers=2) as pool:
        res = run_suite(smoke_copy, methods=["greedy", "lp"], executor=pool, out_dir=tmp_path / "o", progress=False)
    bad = [c for c in res.cells if c.status == "error"]
    assert {c.instance for c in bad} == {broken.name} and len(bad) == 2
    assert all("corrupt gzip" in c.error for c in bad)
    assert all(c.status in ("optimal", "feasible") for c in res.cells if c.instance != broken.name)
    report = (tmp_path / "o" / "report.md").read_text()
    assert "## Errors" in report and broken.name in report and "corrupt gzip" in report
    for c in res.cells:
        if c.status != "error":
            inst = load_entry(suite, next(e for e in suite.entries if e.name == c.instance))
            assert c.welfare <= inst.values.sum() + 1e-9
    del renamed


def test_outputs_and_cli(tmp_path: Path) -> None:
    out = tmp_path / "cli"
    rc = main(["bench", "smoke", "--methods", "greedy", "--out", str(out), "--quiet", "--jobs", "1"])
    assert rc == 0
    for name in ("results.csv", "results.json", "report.md", "quality_vs_time.png", "time_vs_size.png", "cells.jsonl"):
        assert (out / name).stat().st_size > 0, name
    doc = json.loads((out / "results.json").read_text())
    suite = load_suite("smoke")
    assert len(doc["cells"]) == len(suite.entries)
    for cell in doc["cells"]:
        e = next(e for e in suite.entries if e.name == cell["instance"])
        assert cell["best_known"] >= e.best_welfare - 1e-9
        assert cell["pct_best"] == pytest.approx(100 * cell["welfare"] / cell["best_known"])
    assert (out / "quality_vs_time.png").read_bytes()[:4] == b"\x89PNG"
    # a second run resumes everything
    rc = main(["bench", "smoke", "--methods", "greedy", "--out", str(out), "--quiet"])
    assert rc == 0
    assert len((out / "cells.jsonl").read_text().splitlines()) == len(suite.entries)


@pytest.mark.parametrize(
    "args",
    [["bench", "nope"], ["bench", "smoke", "--methods", "nosuch"], ["bench", "smoke", "--per-solve-limit", "0"],
     ["bench", "smoke", "--time-limit", "0"],
     ["bench", "smoke", "--jobs", "0"], ["bench", "smoke", "--methods", ","], ["bench", "smoke", "--mechanism", "nosuch"]],
)
def test_cli_bad_input_exits_2(args: list[str], tmp_path: Path) -> None:
    assert main([*args, "--out", str(tmp_path / "x")]) == 2


def test_mechanism_columns(tmp_path: Path, smoke_copy: Path) -> None:
    suite = load_suite(smoke_copy)
    with ThreadPoolExecutor(max_workers=1) as pool:
        res = run_suite(suite, methods=["greedy"], mechanism="pay-as-bid", regret_bidders=1, executor=pool,
                        out_dir=tmp_path / "m", progress=False, plots=False)
    try:
        import gensolver.mechanisms  # noqa: F401
    except ImportError:
        assert all(c.mechanism_note == "unavailable" for c in res.cells)
        return
    assert all(c.payments_seconds is not None and c.payments_seconds >= 0 for c in res.cells)
    assert all(c.max_regret is not None and c.max_regret >= 0 for c in res.cells)
    assert "payments s" in (tmp_path / "m" / "report.md").read_text()


def test_bad_arguments() -> None:
    with pytest.raises(ValueError, match="per_solve_limit"):
        run_suite("smoke", per_solve_limit=-1, progress=False)
    with pytest.raises(ValueError, match="not a string"):
        run_suite("smoke", methods="cpsat", progress=False)
    with pytest.raises(ValueError, match="executor"):
        run_suite("smoke", methods=["greedy"], executor=object(), progress=False)  # type: ignore[arg-type]


def test_time_limit_keyword_is_a_deprecated_alias_of_per_solve_limit(tmp_path: Path, smoke_copy: Path) -> None:
    from gensolver._deprecation import GensolverDeprecationWarning

    suite = load_suite(smoke_copy)
    new = run_suite(suite, methods=["greedy"], per_solve_limit=3.0, out_dir=tmp_path / "new", progress=False,
                    plots=False, executor=ThreadPoolExecutor(max_workers=1))
    with pytest.warns(GensolverDeprecationWarning, match="time_limit= is deprecated; use per_solve_limit="):
        old = run_suite(suite, methods=["greedy"], time_limit=3.0, out_dir=tmp_path / "old", progress=False,
                        plots=False, executor=ThreadPoolExecutor(max_workers=1))
    assert [(c.key, c.welfare) for c in new.cells] == [(c.key, c.welfare) for c in old.cells]
    assert all(c.key.endswith("|3.0") for c in old.cells)
    with pytest.warns(GensolverDeprecationWarning), pytest.raises(ValueError, match="give per_solve_limit= only"):
        run_suite(suite, methods=["greedy"], per_solve_limit=2.0, time_limit=3.0, progress=False)
