"""Crashed workers, retries on resume, exit status, and outputs that would overwrite inputs
(issue 20, items 8 and 9)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from gensolver.bench import load_suite, read_journal, run_suite
from gensolver.cli import main
from tests.bench.helpers import greedy_killing_its_worker

OK = ("optimal", "feasible")


def _target(smoke_copy: Path) -> str:
    """The name of the instance the test kills on, in a suite cut to its first four entries."""
    from gensolver.bench import load_entry

    manifest = smoke_copy / "manifest.json"
    doc = json.loads(manifest.read_text())
    doc["instances"] = doc["instances"][:4]
    manifest.write_text(json.dumps(doc))
    suite = load_suite(smoke_copy)
    return load_entry(suite, suite.entries[1]).name


def test_a_worker_that_always_dies_fails_only_its_own_cell(tmp_path: Path, smoke_copy: Path, monkeypatch) -> None:
    target = _target(smoke_copy)
    monkeypatch.setenv("GENSOLVER_TEST_KILL", target)
    res = run_suite(smoke_copy, methods=[greedy_killing_its_worker], jobs=2, out_dir=tmp_path / "o", progress=False,
                    plots=False)
    bad = [c for c in res.cells if c.status == "error"]
    assert len(bad) == 1 and "worker" in bad[0].error and "died" in bad[0].error, [c.error for c in bad]
    assert all(c.status in OK for c in res.cells if c is not bad[0])
    assert len(res.cells) == len(load_suite(smoke_copy).entries)


def test_a_worker_killed_once_loses_nothing(tmp_path: Path, smoke_copy: Path, monkeypatch) -> None:
    monkeypatch.setenv("GENSOLVER_TEST_KILL", _target(smoke_copy))
    monkeypatch.setenv("GENSOLVER_TEST_KILL_ONCE", str(tmp_path / "killed"))
    res = run_suite(smoke_copy, methods=[greedy_killing_its_worker], jobs=2, out_dir=tmp_path / "o", progress=False,
                    plots=False)
    assert (tmp_path / "killed").exists()  # the worker did die once
    assert [c.error for c in res.cells if c.status not in OK] == []


def test_load_errors_are_retried_on_resume_and_a_run_with_errors_exits_1(tmp_path: Path, smoke_copy: Path) -> None:
    suite = load_suite(smoke_copy)
    path = suite.path_of(suite.entries[1])
    good = path.read_bytes()
    path.write_bytes(good[:40])  # truncated gzip
    out = tmp_path / "o"
    argv = ["bench", str(smoke_copy), "--methods", "greedy", "--out", str(out), "--quiet", "--no-plots"]
    assert main(argv) == 1
    rows = read_journal(out / "cells.jsonl")
    assert sum(r["status"] == "error" for r in rows.values()) == 1
    path.write_bytes(good)  # restored
    assert main(argv) == 0
    rows = read_journal(out / "cells.jsonl")
    assert all(r["status"] in OK for r in rows.values()), rows


def test_bench_refuses_to_overwrite_its_own_manifest(tmp_path: Path, smoke_copy: Path) -> None:
    out = tmp_path / "out"
    shutil.copytree(smoke_copy, out)
    manifest = out / "results.json"
    (out / "manifest.json").rename(manifest)
    before = manifest.read_bytes()
    rc = main(["bench", str(manifest), "--methods", "greedy", "--out", str(out), "--quiet", "--no-plots"])
    assert rc == 2
    assert manifest.read_bytes() == before
    with pytest.raises(ValueError, match="results.json is an input of the suite"):
        run_suite(manifest, methods=["greedy"], out_dir=out, progress=False, plots=False)
    assert manifest.read_bytes() == before


def test_jobs_are_bounded(tmp_path: Path) -> None:
    from gensolver.bench.runner import max_jobs

    assert main(["bench", "smoke", "-j", "100000", "--out", str(tmp_path / "o"), "--quiet"]) == 2
    with pytest.raises(ValueError, match=f"jobs must be at most {max_jobs()}"):
        run_suite("smoke", methods=["greedy"], jobs=max_jobs() + 1, out_dir=tmp_path / "o", progress=False)
    assert not (tmp_path / "o" / "cells.jsonl").exists()
