"""``gensolver run`` and ``gensolver plan`` on bad input: exit 2, the option or file named, no
traceback, nothing launched and nothing lost.

Most cases go through :func:`gensolver.cli.main` in-process with real files in ``tmp_path``;
the output users see (warnings, tracebacks) is checked on the real installed script.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from gensolver.cli import main
from gensolver.executor import read_journal, read_plan
from gensolver.model import GpuRound, Task, uniform_gpus

SCRIPT = Path(sys.executable).parent / "gensolver"
GIB = 1 << 30
#: every task's window, in plan seconds: 120 wall seconds at --time-scale 0.02. Nothing here waits
#: for a window to close (each command exits by itself and the run ends with it), so a wide window
#: costs nothing on a fast machine and keeps a loaded one (a launch late by seconds) from turning
#: a task into ``not_started``.
WINDOW = 6000.0


def plan_doc(marker: Path, *, memory: int = GIB, compute: float = 1.0, device_memory: int = 16 * GIB,
             devices: tuple[str, ...] = ("g0",)) -> dict[str, Any]:
    """A one-task plan per device; each task's command creates ``marker`` (so a launch shows)."""
    tasks, devs = [], []
    for k, dev in enumerate(devices):
        tid = f"t{k}"
        cmd = ["touch", str(marker)]
        tasks.append({"id": tid, "bid": f"{tid}-bid", "value": 1.0, "preemptible": True, "command": cmd})
        devs.append({"id": dev, "memory": device_memory, "compute": 1.0,
                     "entries": [{"task": tid, "start": 0.0, "end": WINDOW, "memory": memory, "compute": compute,
                                  "command": cmd}]})
    return {"schema": "gensolver.plan/v1", "name": "cli", "time_unit": "s", "horizon": WINDOW, "devices": devs,
            "tasks": tasks, "preemptions": [], "metadata": {}}


@pytest.fixture()
def marker(tmp_path: Path) -> Path:
    return tmp_path / "launched"


@pytest.fixture()
def plan_file(tmp_path: Path, marker: Path) -> Path:
    path = tmp_path / "plan.json"
    path.write_text(json.dumps(plan_doc(marker), indent=2))
    return path


@pytest.fixture()
def round_file(tmp_path: Path) -> Path:
    rnd = GpuRound(uniform_gpus([1, 1]), (Task("a", 0.25, 0.25, 2, 10.0, command=("true",)),
                                          Task("b", 0.5, 0.5, 1, 8.0, command=("true",))), steps=3, step_seconds=1)
    path = tmp_path / "round.json"
    path.write_text(json.dumps(rnd.to_dict()))
    return path


def run(plan: Path, *args: str) -> int:
    """``gensolver run PLAN --backend sim`` fast, in-process."""
    return main(["run", str(plan), "--backend", "sim", "--time-scale", "0.02", "--poll", "0.01", *args])


def run_script(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    if not SCRIPT.exists():
        pytest.skip("the gensolver script is not installed beside this interpreter")
    return subprocess.run([str(SCRIPT), *args], capture_output=True, text=True, timeout=120, cwd=cwd)


# ---------------------------------------------------------------------- defect 1: --journal on a user's file
def test_journal_on_a_file_that_is_not_a_journal_leaves_it_untouched(tmp_path: Path, plan_file: Path, marker: Path,
                                                                     round_file: Path, capsys) -> None:
    before = plan_file.read_bytes()
    assert run(plan_file, "--journal", str(plan_file)) == 2
    assert "--journal" in capsys.readouterr().err
    assert plan_file.read_bytes() == before
    # another user file (a round): refused as not a journal, untouched, nothing launched or created
    round_bytes = round_file.read_bytes()
    assert run(plan_file, "--journal", str(round_file)) == 2
    err = capsys.readouterr().err
    assert "--journal" in err and "not a gensolver journal" in err
    assert round_file.read_bytes() == round_bytes
    assert not marker.exists()
    assert not (tmp_path / "round.json.sim").exists()
    # a real journal still works, and resumes
    journal = tmp_path / "run.jsonl"
    assert run(plan_file, "--journal", str(journal)) == 0
    assert marker.exists() and read_journal(journal)[-1]["event"] == "finished"


# ---------------------------------------------------------------------- defect 2: output paths
def test_plan_output_paths_are_checked_before_any_work(tmp_path: Path, round_file: Path, capsys) -> None:
    a_file = tmp_path / "good.json"
    a_file.write_text("{}")
    out = tmp_path / "p.json"
    cases = [
        (["-o", str(tmp_path)], "--output"),                                     # a directory
        (["-o", str(a_file / "x.json")], "--output"),                            # under a file
        (["-o", str(out), "--gantt", str(tmp_path / "g.txt")], "--gantt"),       # not a drawable format
        (["-o", str(out), "--gantt", str(a_file / "g.png")], "--gantt"),         # under a file
        (["-o", str(out), "--gantt", str(tmp_path)], "--gantt"),                 # a directory
        (["-o", str(out), "--gantt", str(out)], "--gantt"),                      # the same file as --output
        (["-o", str(tmp_path / "x"), "--gantt", str(tmp_path / "x" / "g.png")], "--gantt"),  # inside --output
        (["-o", str(round_file)], "--output"),                                   # the input itself
    ]
    round_bytes = round_file.read_bytes()
    for args, option in cases:
        assert main(["plan", str(round_file), *args]) == 2, args
        err = capsys.readouterr().err
        assert err.startswith("error: ") and option in err, (args, err)
        assert not out.exists() and not (tmp_path / "x").exists(), args
    assert a_file.read_text() == "{}" and round_file.read_bytes() == round_bytes
    # the real script: no traceback, nothing written
    res = run_script("plan", str(round_file), "-o", str(out), "--gantt", str(tmp_path / "g.txt"))
    assert res.returncode == 2 and "Traceback" not in res.stderr and "--gantt" in res.stderr
    assert not out.exists()


def test_plan_writes_the_gantt_chart_in_the_format_its_name_asks_for(tmp_path: Path, round_file: Path) -> None:
    assert main(["plan", str(round_file), "-o", str(tmp_path / "p.json"), "--gantt", str(tmp_path / "g.svg")]) == 0
    assert b"<svg" in (tmp_path / "g.svg").read_bytes()[:500]
    # no suffix: a PNG at exactly that path (matplotlib alone would write g.png beside it)
    assert main(["plan", str(round_file), "-o", str(tmp_path / "q.json"), "--gantt", str(tmp_path / "chart")]) == 0
    assert (tmp_path / "chart").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert not (tmp_path / "chart.png").exists()
    assert read_plan(tmp_path / "q.json").tasks


def test_run_output_paths_are_checked_before_any_work(tmp_path: Path, plan_file: Path, marker: Path, capsys) -> None:
    a_file = tmp_path / "good.json"
    a_file.write_text("{}")
    journal = tmp_path / "j.jsonl"
    cases = [
        (["--feedback", str(tmp_path)], "--feedback"),
        (["--feedback", str(a_file / "fb.json")], "--feedback"),
        (["--journal", str(tmp_path)], "--journal"),
        (["--journal", str(a_file / "j.jsonl")], "--journal"),
        (["--log-dir", str(a_file)], "--log-dir"),
        (["--sim-state", str(a_file)], "--sim-state"),
        (["--journal", str(journal), "--feedback", str(journal)], "--feedback"),
        (["--journal", str(journal), "--log-dir", str(journal / "logs")], "--log-dir"),
        (["--feedback", str(tmp_path / ("x" * 300))], "--feedback"),  # a name too long for the file system
    ]
    for args, option in cases:
        assert run(plan_file, *args) == 2, args
        err = capsys.readouterr().err
        assert err.startswith("error: ") and option in err, (args, err)
        assert not marker.exists(), args  # no task was launched
        assert not journal.exists(), args
    assert a_file.read_text() == "{}"
    res = run_script("run", str(plan_file), "-b", "sim", "--feedback", str(tmp_path))
    assert res.returncode == 2 and "Traceback" not in res.stderr and "--feedback" in res.stderr
    assert not marker.exists()


def test_run_feedback_write_error_is_a_clean_error_after_the_report(tmp_path: Path, plan_file: Path,
                                                                     capsys) -> None:
    # the feedback's folder would be inside a log file the run itself creates: only the write can fail
    logs = tmp_path / "logs"
    feedback = logs / "t0.0.1.log" / "fb.json"
    assert run(plan_file, "--log-dir", str(logs), "--feedback", str(feedback), "--json") == 2
    captured = capsys.readouterr()
    assert json.loads(captured.out)["tasks"][0]["outcome"] == "completed"  # the results are not lost
    assert captured.err.startswith("error: --feedback: cannot write")
    assert (logs / "t0.0.1.log").is_file() and not feedback.exists()


# ---------------------------------------------------------------------- defect 3: the plan file itself
def test_run_refuses_a_plan_path_that_is_a_directory_or_binary(tmp_path: Path, capsys) -> None:
    assert run(tmp_path) == 2
    assert capsys.readouterr().err.startswith(f"error: {tmp_path}: is a directory")
    binary = tmp_path / "binary.json"
    binary.write_bytes(b"\x89\xff\x00\x01 not text")
    assert run(binary) == 2
    assert capsys.readouterr().err.startswith(f"error: {binary}: not a UTF-8 JSON file")
    res = run_script("run", str(binary), "-b", "sim")
    assert res.returncode == 2 and "Traceback" not in res.stderr and str(binary) in res.stderr


# ---------------------------------------------------------------------- defect 4: capacities
@pytest.mark.parametrize("entry, what", [({"compute": 5.0}, "compute 5 > capacity 1"),
                                         ({"memory": 10 ** 15}, "memory 1e+15 > capacity")],
                         ids=["over-compute", "over-memory"])
def test_run_refuses_a_plan_over_device_capacity(tmp_path: Path, marker: Path, entry: dict[str, Any], what: str,
                                                  capsys) -> None:
    plan = tmp_path / "over.json"
    plan.write_text(json.dumps(plan_doc(marker, **entry)))
    assert run(plan) == 2
    err = capsys.readouterr().err
    assert what in err and f"{plan}: the plan breaks device capacities" in err
    assert not marker.exists()


# ---------------------------------------------------------------------- defect 5: --timeout, --device-map
def test_run_refuses_a_bad_timeout_before_launching(plan_file: Path, marker: Path, capsys) -> None:
    for value in ("0", "-5", "nan"):
        assert run(plan_file, "--timeout", value) == 2, value
        assert capsys.readouterr().err.startswith("error: --timeout must be a positive number of seconds")
        assert not marker.exists()


def test_run_refuses_a_device_map_for_no_plan_device(tmp_path: Path, marker: Path, capsys) -> None:
    plan = tmp_path / "two.json"
    plan.write_text(json.dumps(plan_doc(marker, devices=("g0", "g1"))))
    assert run(plan, "--device-map", "zz=0") == 2
    err = capsys.readouterr().err
    assert "--device-map" in err and "'zz'" in err and "g0, g1" in err
    # a map that puts two plan devices on one device, or names no device of the backend
    assert run(plan, "--device-map", "g0=1") == 2
    assert "--device-map: plan devices 'g0' and 'g1' both name" in capsys.readouterr().err
    assert run(plan, "--device-map", "g0=7") == 2
    assert capsys.readouterr().err.startswith("error: --device-map: plan device 'g0' matches no sim device")
    assert not marker.exists()
    assert run(plan, "--device-map", "g0=1", "--device-map", "g1=0") == 0  # a swap is fine
    assert marker.exists()


# ---------------------------------------------------------------------- defect 6: clean warnings
def test_journal_time_scale_mismatch_is_a_one_line_warning(tmp_path: Path, plan_file: Path) -> None:
    journal = tmp_path / "j.jsonl"
    args = ["run", str(plan_file), "-b", "sim", "--poll", "0.01", "--journal", str(journal)]
    assert run_script(*args, "--time-scale", "0.02").returncode == 0
    res = run_script(*args, "--time-scale", "0.03")
    assert res.returncode == 0, res.stderr
    assert res.stderr.strip().splitlines() == [
        "warning: --time-scale 0.03 is ignored: the journal keeps its time scale 0.02"]
    assert "RuntimeWarning" not in res.stderr and ".py" not in res.stderr


def test_over_grant_warning_is_one_clean_line(tmp_path: Path) -> None:
    from tests.executor.helpers import MIB, child, wait_for

    if not SCRIPT.exists():
        pytest.skip("the gensolver script is not installed beside this interpreter")
    markers = tmp_path / "markers"
    markers.mkdir()
    doc = plan_doc(tmp_path / "unused", memory=MIB)
    argv = list(child(markers, 64 * MIB, -1))  # reports 64 MiB on a 1 MiB grant, waits for "release", exits 0
    doc["tasks"][0]["command"] = doc["devices"][0]["entries"][0]["command"] = argv
    plan = tmp_path / "over.json"
    plan.write_text(json.dumps(doc))
    journal = tmp_path / "j.jsonl"
    proc = subprocess.Popen([str(SCRIPT), "run", str(plan), "-b", "sim", "--time-scale", "0.02", "--poll", "0.02",
                             "--journal", str(journal)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:  # the child runs until the executor has seen its usage: no race with the machine's speed
        wait_for(lambda: journal.exists() and any(r["event"] == "over_grant" for r in read_journal(journal)), 120,
                 what="the over_grant record")
    finally:
        (markers / "release").write_text("")
        _, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 0, stderr
    lines = stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("warning: task 't0'") and "over its grant" in lines[0], lines
    assert "RuntimeWarning" not in stderr and ".py" not in stderr


# ---------------------------------------------------------------------- defect 7: option names
@pytest.mark.parametrize("args, message", [
    (["--poll", "0"], "--poll must be a positive number"),
    (["--time-scale", "0"], "--time-scale must be a positive number"),
    (["--grace", "-1"], "--grace must be a non-negative number"),
    (["--over-grant", "x"], "--over-grant must be one of warn, suspend, terminate"),
    (["--over-grant-tolerance", "lots"], "--over-grant-tolerance: not a memory size"),
    (["--preempt", "x"], "--preempt must be plan or checkpoint"),
    (["--lost", "x"], "--lost must be restart or skip"),
    (["--sim-devices", "1:0"], "--sim-devices: "),
], ids=["poll", "time-scale", "grace", "over-grant", "over-grant-tolerance", "preempt", "lost", "sim-devices"])
def test_run_option_errors_name_the_option(plan_file: Path, marker: Path, args: list[str], message: str,
                                           capsys) -> None:
    assert main(["run", str(plan_file), "--backend", "sim", *args]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: {message}"), err
    assert "_" not in err.split("got")[0]  # no Python parameter names such as poll_interval
    assert not marker.exists()


def test_plan_option_errors_blame_the_option_not_the_file(tmp_path: Path, round_file: Path, capsys) -> None:
    out = tmp_path / "p.json"
    assert main(["plan", str(round_file), "-o", str(out), "--method", "nope"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: --method: unknown method 'nope'") and str(round_file) not in err
    assert main(["plan", str(round_file), "-o", str(out), "--time-limit", "-1"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: --time-limit must be a positive finite number") and str(round_file) not in err
    assert not out.exists()


def test_a_long_plan_says_how_long_and_how_to_scale_it(plan_file: Path, marker: Path, capsys) -> None:
    """A 6000-second plan at the default --time-scale 1 would hold its devices 100 minutes:
    ``run`` says so, and how to scale it (the run still ends when its commands end)."""
    assert main(["run", str(plan_file), "--backend", "sim", "--poll", "0.01"]) == 0
    err = " ".join(capsys.readouterr().err.split())
    assert "note: the plan spans 6000 plan seconds: at --time-scale 1 this run takes up to 100 min" in err, err
    assert "--time-scale 0.01 runs it in about a minute" in err
    assert marker.exists()
    marker.unlink()
    assert main(["run", str(plan_file), "--backend", "sim", "--poll", "0.01", "--time-scale", "0.01"]) == 0
    assert "note:" not in capsys.readouterr().err  # 60 s: nothing to say
