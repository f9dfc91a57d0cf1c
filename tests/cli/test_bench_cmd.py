"""``gensolver bench`` and ``gensolver suite``: bad input exits 2 with a message that names the
field (manifest JSON pointer, ``cells.jsonl:LINE``) or the CLI option, before any work, and
never leaves a half result.

Everything runs the real command in-process (:func:`gensolver.cli.main`) on real files in
``tmp_path``: a copy of the bundled ``smoke`` suite, run with ``-m greedy``.
"""

from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path
from typing import Any, Callable

import pytest

from gensolver.cli import main

ROOT = Path(__file__).resolve().parents[2]
SMOKE = ROOT / "gensolver" / "data" / "suites" / "smoke"
FAST = ["-m", "greedy", "--jobs", "1", "--no-plots", "--quiet"]


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    """Run the CLI in-process: ``(exit status, stdout, stderr)``."""
    capsys.readouterr()
    rc = main([str(a) for a in args])
    cap = capsys.readouterr()
    return rc, cap.out, cap.err


def bad_input(capsys: pytest.CaptureFixture[str], *args: str) -> str:
    """Run the CLI, check it exits 2 without a traceback, and return its one-line stderr message."""
    rc, out, err = run(capsys, *args)
    assert rc == 2, (rc, out, err)
    assert "Traceback" not in out + err
    assert err.startswith("error:"), err
    return " ".join(err.split())  # rich may wrap long lines


def suite_copy(tmp_path: Path, edit: Callable[[dict[str, Any]], None] | None = None, name: str = "suite") -> Path:
    """A copy of the smoke suite in ``tmp_path / name``, its manifest changed by ``edit``."""
    dest = tmp_path / name
    shutil.copytree(SMOKE, dest)
    if edit is not None:
        doc = json.loads((dest / "manifest.json").read_text())
        edit(doc)
        (dest / "manifest.json").write_text(json.dumps(doc))  # allow_nan: NaN / Infinity tokens
    return dest


def _set(pointer: str, value: Any) -> Callable[[dict[str, Any]], None]:
    def edit(doc: dict[str, Any]) -> None:
        *parents, last = pointer.strip("/").split("/")
        node: Any = doc
        for tok in parents:
            node = node[int(tok)] if isinstance(node, list) else node[tok]
        node[int(last) if isinstance(node, list) else last] = value
    return edit


# ------------------------------------------------------------------ 1, 4: malformed manifests
@pytest.mark.parametrize(
    ("pointer", "value", "shown"),
    [
        ("/instances/0/best_known/welfare", "abc", "expected a finite number, got 'abc'"),
        ("/instances/0/best_known/welfare", float("nan"), "expected a finite number, got NaN"),
        ("/instances/1/bound/value", "x", "expected a finite number, got 'x'"),
        ("/instances/1/bound/value", float("inf"), "expected a finite number, got Infinity"),
        ("/instances/0/size", None, "expected an object, got null"),
        ("/instances/2/size/bids", "7", "expected an integer, got '7'"),
        ("/instances/0/seed", "x", "expected an integer, got 'x'"),
        ("/instances/0/seed", None, "expected an integer, got null"),
        ("/instances/3/family", "nope", "unknown family 'nope'"),
        ("/instances/0/params/n_goods", float("nan"), "expected a finite number, got NaN"),
    ],
)
def test_malformed_manifest_names_the_field(tmp_path: Path, capsys: pytest.CaptureFixture[str], pointer: str,
                                            value: Any, shown: str) -> None:
    suite = suite_copy(tmp_path, _set(pointer, value))
    manifest = suite / "manifest.json"
    msg = bad_input(capsys, "suite", "show", suite)
    assert f"{manifest}: {pointer}: {shown}" in msg
    # bench checks the manifest up front: no cell is run, nothing is written
    out = tmp_path / "out"
    msg = bad_input(capsys, "bench", suite, *FAST, "--out", out)
    assert f"{manifest}: {pointer}: {shown}" in msg
    assert not out.exists()
    msg = bad_input(capsys, "suite", "materialize", manifest)
    assert pointer in msg


def test_nan_best_known_leaves_an_earlier_result_set_untouched(tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out"
    rc, _, err = run(capsys, "bench", "smoke", *FAST, "--out", out)
    assert rc == 0, err
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    assert {"results.csv", "results.json", "report.md", "cells.jsonl"} <= set(before)
    suite = suite_copy(tmp_path, _set("/instances/0/best_known/welfare", float("nan")))
    msg = bad_input(capsys, "bench", suite, *FAST, "--out", out)
    assert "/instances/0/best_known/welfare" in msg
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before


# ------------------------------------------------------------------ 5: empty suites
@pytest.mark.parametrize(("instances", "shown"), [([], "the suite has no instances"),
                                                  ({}, "expected a list of instances, got an object")])
def test_bench_on_an_empty_suite_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str], instances: Any,
                                         shown: str) -> None:
    suite = suite_copy(tmp_path, _set("/instances", instances))
    out = tmp_path / "out"
    msg = bad_input(capsys, "bench", suite, *FAST, "--out", out)
    assert f"{suite / 'manifest.json'}: /instances: {shown}" in msg
    assert not out.exists()


# ------------------------------------------------------------------ 8: a path that is not there
def test_bench_on_a_missing_manifest_path_says_no_such_file(tmp_path: Path,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    missing = tmp_path / "missing" / "manifest.json"
    msg = bad_input(capsys, "bench", missing, *FAST, "--out", tmp_path / "out")
    assert f"no such file: {missing}" in msg and "unknown suite" not in msg
    msg = bad_input(capsys, "suite", "show", "missing/manifest.json")
    assert "no such file: missing/manifest.json" in msg
    (tmp_path / "empty").mkdir()
    msg = bad_input(capsys, "bench", tmp_path / "empty", *FAST, "--out", tmp_path / "out")
    assert f"no manifest.json in folder {tmp_path / 'empty'}" in msg
    # a plain name is still looked up among the bundled suites
    msg = bad_input(capsys, "bench", "no-such-suite", *FAST, "--out", tmp_path / "out")
    assert "unknown suite 'no-such-suite'" in msg and "smoke" in msg
    assert not (tmp_path / "out").exists()


# ------------------------------------------------------------------ 3, 9: --per-solve-limit
@pytest.mark.parametrize("value", ["-1", "nan", "0", "inf"])
def test_suite_build_rejects_a_bad_per_solve_limit_before_any_work(tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture[str],
                                                                   value: str) -> None:
    folder = tmp_path / "built"
    msg = bad_input(capsys, "suite", "build", "smoke", "--per-solve-limit", value, "--folder", folder)
    assert "--per-solve-limit must be a positive finite number of seconds" in msg
    assert not folder.exists()


@pytest.mark.parametrize("value", ["nan", "inf", "-2"])
def test_bench_per_solve_limit_errors_name_the_option(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                      value: str) -> None:
    msg = bad_input(capsys, "bench", "smoke", *FAST, "--per-solve-limit", value, "--out", tmp_path / "out")
    assert "--per-solve-limit" in msg and "per_solve_limit" not in msg.replace("--per-solve-limit", "")
    assert not (tmp_path / "out").exists()


def test_time_limit_is_a_deprecated_alias_of_per_solve_limit(tmp_path: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    """``bench --time-limit`` (the old name of the limit of each solve) still runs the same cells
    under the same journal keys, with a warning naming --per-solve-limit; a journal written
    before the rename (rows with ``time_limit``) resumes without redoing a cell."""
    results = {}
    for option in ("--per-solve-limit", "--time-limit", "-t"):
        out = tmp_path / option.strip("-")
        rc, stdout, err = run(capsys, "bench", "smoke", *FAST, option, "5", "--out", out)
        assert rc == 0, err
        warned = "warning: --time-limit is deprecated; use --per-solve-limit" in err
        assert warned == (option != "--per-solve-limit"), err
        doc = json.loads((out / "results.json").read_text())
        assert doc["meta"]["per_solve_limit"] == 5.0
        results[option] = [(c["key"], c["status"], c["welfare"]) for c in doc["cells"]]
    assert results["--per-solve-limit"] == results["--time-limit"] == results["-t"]
    assert all(key.endswith("|greedy|-|5.0") for key, _, _ in results["--time-limit"])
    # a journal of the earlier release: its rows name the limit time_limit; it resumes in full
    journal = tmp_path / "per-solve-limit" / "cells.jsonl"
    rows = [json.loads(line) for line in journal.read_text().splitlines()]
    for row in rows:
        row["time_limit"] = row.pop("per_solve_limit")
    journal.write_text("".join(json.dumps(r) + "\n" for r in rows))
    rc, stdout, err = run(capsys, "bench", "smoke", *FAST, "--per-solve-limit", "5", "--out", journal.parent)
    assert rc == 0, err
    assert f"(0 run, {len(rows)} resumed" in " ".join(stdout.split()), stdout
    # another limit is another cell: nothing is resumed
    rc, stdout, err = run(capsys, "bench", "smoke", *FAST, "--per-solve-limit", "6", "--out", journal.parent)
    assert rc == 0 and f"({len(rows)} run, 0 resumed" in " ".join(stdout.split()), stdout
    # both names with different values: exit 2 naming the old one
    rc, stdout, err = run(capsys, "bench", "smoke", *FAST, "--per-solve-limit", "4", "--time-limit", "5",
                          "--out", tmp_path / "both")
    assert rc == 2 and "error: --time-limit: give --per-solve-limit only" in " ".join(err.split()), err
    assert not (tmp_path / "both").exists()


def test_suite_build_reads_its_deprecated_time_limit_and_build_manifest_its_keyword(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from gensolver._deprecation import GensolverDeprecationWarning
    from gensolver.bench.suites import build_manifest

    rc, _, err = run(capsys, "suite", "build", "smoke", "--time-limit", "0", "--folder", tmp_path / "b")
    err = " ".join(err.split())
    assert rc == 2 and "warning: --time-limit is deprecated; use --per-solve-limit" in err
    assert "error: --time-limit must be a positive finite number of seconds" in err
    assert not (tmp_path / "b").exists()
    with pytest.warns(GensolverDeprecationWarning, match="build_manifest: time_limit= is deprecated"), \
            pytest.raises(ValueError, match="per_solve_limit must be a positive"):
        build_manifest("x", [], folder=tmp_path / "x", time_limit=-1.0)
    with pytest.warns(GensolverDeprecationWarning), pytest.raises(ValueError, match="give per_solve_limit= only"):
        build_manifest("x", [], folder=tmp_path / "x", per_solve_limit=5.0, time_limit=3.0)
    assert not (tmp_path / "x").exists()


def test_bench_method_and_mechanism_errors_name_the_option(tmp_path: Path,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out"
    msg = bad_input(capsys, "bench", "smoke", "-m", "nosuch", "--quiet", "--out", out)
    assert msg.startswith("error: --methods:") and "'nosuch'" in msg
    msg = bad_input(capsys, "bench", "smoke", "-m", "greedy,greedy", "--quiet", "--out", out)
    assert msg.startswith("error: --methods:") and "duplicate" in msg
    assert not out.exists()


# ------------------------------------------------------------------ 7: output paths
def test_bad_output_paths_are_refused_before_any_work(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a_file = tmp_path / "good.json"
    a_file.write_text("{}")
    msg = bad_input(capsys, "bench", "smoke", *FAST, "--out", a_file)
    assert msg.startswith("error: --out:") and "not a directory" in msg
    msg = bad_input(capsys, "bench", "smoke", *FAST, "--out", a_file / "sub")
    assert msg.startswith("error: --out:")
    msg = bad_input(capsys, "suite", "build", "smoke", "--per-solve-limit", "1", "--folder", a_file)
    assert msg.startswith("error: --folder:") and "not a directory" in msg
    assert a_file.read_text() == "{}"
    # an output file that is a directory: refused before any cell runs
    out = tmp_path / "out"
    (out / "results.json").mkdir(parents=True)
    msg = bad_input(capsys, "bench", "smoke", *FAST, "--out", out)
    assert msg.startswith("error: --out:") and "results.json" in msg
    assert sorted(p.name for p in out.iterdir()) == ["results.json"]
    # /proc refuses new folders (as root too: then it is the write that fails, reported the same way)
    msg = bad_input(capsys, "bench", "smoke", *FAST, "--out", "/proc/gensolver-no-such-dir")
    assert msg.startswith("error: --out:")


# ------------------------------------------------------------------ 6: materialize checks checksums
def test_materialize_checks_the_files_already_present(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    doc = json.loads((SMOKE / "manifest.json").read_text())
    victim, torn, unchecked = (e["file"] for e in doc["instances"][:3])
    suite = suite_copy(tmp_path, _set("/instances/2/sha256", ""))
    (suite / victim).write_bytes(gzip.compress(b'{"schema": "gensolver.instance/v1", "garbage": true}'))
    (suite / torn).write_bytes((SMOKE / torn).read_bytes()[:40])
    rc, out, err = run(capsys, "suite", "materialize", suite)
    assert rc != 0, out
    assert "Traceback" not in out + err
    lines = {ln.split(":", 1)[0]: ln for ln in out.splitlines() if ":" in ln}
    names = [e["name"] for e in doc["instances"]]
    assert "checksum mismatch" in lines[names[0]] and victim in lines[names[0]]
    assert "corrupt gzip" in lines[names[1]]
    assert "not checked" in lines[names[2]] and "no sha256" in lines[names[2]]
    assert all(lines[n].endswith(": present") for n in names[3:])
    assert names[0] in err and names[1] in err and names[2] not in err
    # the intact suite passes
    rc, out, err = run(capsys, "suite", "materialize", SMOKE)
    assert rc == 0, err
    assert all(ln.endswith(": present") for ln in out.splitlines() if ln.strip())


# ------------------------------------------------------------------ output folder per suite
def test_each_suite_writes_its_own_folder_under_bench_out(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """Without --out, ``bench smoke`` writes bench-out/smoke/ and another suite its own folder:
    the second run neither overwrites nor resumes the first one's results."""
    other = suite_copy(tmp_path, name="mine")
    monkeypatch.chdir(tmp_path)
    rc, out, err = run(capsys, "bench", "smoke", *FAST)
    assert rc == 0, err
    smoke = (tmp_path / "bench-out" / "smoke" / "results.json").read_bytes()
    rc, out, err = run(capsys, "bench", str(other / "manifest.json"), *FAST)
    assert rc == 0, err
    assert "0 resumed" in " ".join(out.split())  # not smoke's journal
    assert (tmp_path / "bench-out" / "mine" / "results.json").is_file()
    assert (tmp_path / "bench-out" / "smoke" / "results.json").read_bytes() == smoke
    assert not (tmp_path / "bench-out" / "results.json").exists()
