"""``gensolver run JOBS --market ... --journal FILE``: interrupted by SIGTERM (or SIGKILL, as a
crash) mid-run, the same command with the same journal continues the same market.

The command runs as a real subprocess (its own session) on simulated GPUs with real processes.
The test waits for events (round records in the journal, a launch of the next round), never for
a time, then sends the signal; on SIGTERM the command exits 143 with its journal whole, on
SIGKILL its processes live on and the resumed run stops them first. Rerunning it finishes the run. The journal is
read here with plain ``json`` (not the command's reader): the interrupted-then-resumed journal
must hold rounds 1..N once each, with the same assignments and charges per round as the
journal of an uninterrupted run, and the launches the processes logged show that no recorded
round ran again (only the round cut short may launch its tasks twice).

Bad journals exit 2 naming the problem, without a traceback, and are left byte for byte.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
WAIT = 120.0  # seconds: a bound on a loaded machine, not an expected duration
LOG = "launches.log"


def _doc(name: str, tenant: str, memory: int, minutes: int, value: float, command: str) -> str:
    return (f"apiVersion: scheduling.gen.io/v1alpha1\nkind: GenTask\n"
            f"metadata: {{name: {name}, labels: {{tenant: {tenant}}}}}\n"
            f"spec:\n  containers: [{{name: c, command: {json.dumps(['sh', '-c', command])}}}]\n"
            f"  genResources:\n    gpuMemory: {{preferred: {memory}Gi, urgencyFactor: 0.5}}\n"
            f"    computeTime: {{duration: {minutes}m, arrival: 2m, preemptible: true}}\n"
            f"    value: {value}\n")


def _jobs(folder: Path) -> Path:
    """Six tasks of four tenants on one 80 GiB GPU; each process logs its launch (task and
    round) first. ``quick`` exits 0 at once; the others sleep past their lease."""
    def cmd(then: str) -> str:
        return f'echo "$GENSOLVER_TASK $$" >> {folder / LOG}; {then}'
    sleep = cmd("exec sleep 120")
    docs = [_doc("a0", "alice", 50, 6, 50, sleep), _doc("a1", "alice", 30, 4, 60, sleep),
            _doc("b0", "bob", 40, 4, 40, sleep), _doc("b1", "bob", 40, 2, 45, sleep),
            _doc("c0", "carol", 20, 6, 30, sleep), _doc("quick", "dave", 30, 8, 55, cmd("exit 0"))]
    path = folder / "jobs.yaml"
    path.write_text("---\n".join(docs))
    return path


def _command(jobs: Path, journal: Path, progress: str) -> list[str]:
    market = {"gpus": "80", "lease": 2, "progress": progress, "max_rounds": 8}
    return [sys.executable, "-c", "import sys; from gensolver.cli import main; sys.exit(main(sys.argv[1:]))",
            "run", str(jobs), "--market", json.dumps(market), "--journal", str(journal), "--backend", "sim",
            "--time-scale", "0.005", "--poll", "0.01", "--grace", "0.2", "--json"]


def _start(cmd: list[str], cwd: Path) -> subprocess.Popen[str]:
    """The command, its output in files (a process it left behind may hold a pipe open)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    with open(cwd / "out.txt", "w") as out, open(cwd / "err.txt", "w") as err:
        return subprocess.Popen(cmd, cwd=cwd, env=env, text=True, stdout=out, stderr=err, start_new_session=True)


def _finish(proc: subprocess.Popen[str]) -> tuple[int, str, str]:
    try:
        proc.wait(timeout=WAIT)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        raise
    cwd = Path(proc.args[proc.args.index("--journal") + 1]).parent  # type: ignore[union-attr]
    return proc.returncode, (cwd / "out.txt").read_text(), (cwd / "err.txt").read_text()


def _records(journal: Path) -> list[dict]:
    """The journal's complete lines, read with plain json (the independent reader)."""
    if not journal.exists():
        return []
    lines = journal.read_text().split("\n")[:-1]
    return [json.loads(line) for line in lines]


def _rounds(journal: Path) -> list[tuple[int, dict, dict]]:
    """``(round, {task: (gpus, memory)}, {task: charge})`` of every round record."""
    out = []
    for rec in _records(journal):
        if rec["event"] == "round":
            r = rec["record"]
            out.append((rec["round"], {a["task"]: (a["gpus"], a["memory"]) for a in r["assignments"]}, r["charges"]))
    return out


def _launches(folder: Path) -> dict[str, int]:
    counts: dict[str, int] = {}
    for line in (folder / LOG).read_text().splitlines():
        task = line.split()[0]
        counts[task] = counts.get(task, 0) + 1
    return counts


def _pids(folder: Path) -> list[int]:
    log = folder / LOG
    return [int(line.split()[1]) for line in log.read_text().splitlines()] if log.exists() else []


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def _same(a: list[tuple[int, dict, dict]], b: list[tuple[int, dict, dict]]) -> None:
    assert [n for n, _, _ in a] == [n for n, _, _ in b] == list(range(1, len(a) + 1))
    for (n, pa, ca), (_, pb, cb) in zip(a, b):
        assert pa == pb, n
        assert ca.keys() == cb.keys() and all(abs(ca[k] - cb[k]) < 1e-9 for k in ca), n


@pytest.mark.parametrize(("progress", "sig"), [("model", signal.SIGTERM), ("observed", signal.SIGTERM),
                                               ("model", signal.SIGKILL)])
def test_a_market_run_interrupted_mid_run_resumes_where_it_stopped(tmp_path, progress, sig):
    """SIGTERM: the command stops its processes and exits 143. SIGKILL (a crash): its processes
    live on; the resumed run stops them before it runs anything."""
    whole, cut = tmp_path / "whole", tmp_path / "cut"
    whole.mkdir(), cut.mkdir()
    rc, out, err = _finish(_start(_command(_jobs(whole), whole / "j.jsonl", progress), whole))
    assert rc in (0, 1) and "Traceback" not in err, err
    reference = json.loads(out)
    expected = _rounds(whole / "j.jsonl")
    assert len(expected) >= 4 and any(c for _, _, c in expected)

    jobs, journal = _jobs(cut), cut / "j.jsonl"
    try:
        proc = _start(_command(jobs, journal, progress), cut)
        deadline = time.monotonic() + WAIT
        # an event: two rounds recorded and a process of the third launched
        while len(_rounds(journal)) < 2 or len(_pids(cut)) <= sum(len(p) for _, p, _ in _rounds(journal)):
            assert proc.poll() is None, _finish(proc)
            assert time.monotonic() < deadline, "no round recorded"
            time.sleep(0.02)
        proc.send_signal(sig)
        rc, _, err = _finish(proc)
        assert rc == (143 if sig == signal.SIGTERM else -9) and "Traceback" not in err, err
        before = _rounds(journal)
        assert 2 <= len(before) < len(expected) and all(r["event"] != "finished" for r in _records(journal))
        left = [p for p in _pids(cut) if _alive(p)]
        assert bool(left) == (sig == signal.SIGKILL)  # a crash leaves the round's processes running

        rc, out, err = _finish(_start(_command(jobs, journal, progress), cut))
        assert rc in (0, 1) and rc == (0 if reference["ok"] else 1), err
        # every process of either run is gone: those seen at the crash, any the crashed run had
        # forked but not yet logged when it was killed, and the resumed run's own
        assert not any(_alive(p) for p in _pids(cut))
        if left:  # the resumed run says how many it stopped: at least those seen (more may have logged since)
            stopped = re.search(r"stopped (\d+) process\(es\)", " ".join(err.split()))
            assert stopped is not None and int(stopped.group(1)) >= len(left), err
    finally:
        for p in _pids(cut):
            if _alive(p):
                os.kill(p, signal.SIGKILL)
    resumed = json.loads(out)
    assert resumed["resumed"] == len(before)
    assert [r["round"] for r in resumed["rounds"]] == [r["round"] for r in reference["rounds"]]
    _same(_rounds(journal), expected)
    assert resumed["unfinished"] == reference["unfinished"] and resumed["failed"] == reference["failed"]
    # no recorded round ran again: beyond the uninterrupted run's launches, only the tasks of the
    # round cut short (round len(before) + 1) launched twice
    extra = {t: k - _launches(whole).get(t, 0) for t, k in _launches(cut).items()}
    cut_round = set(expected[len(before)][1])
    assert all(k == 0 or (k == 1 and t in cut_round) for t, k in extra.items()), (extra, cut_round)
    assert sum(extra.values()) >= 1
    # a finished journal: the same command prints the run again and launches nothing
    size = sum(_launches(cut).values())
    rc, out, err = _finish(_start(_command(jobs, journal, progress), cut))
    assert json.loads(out)["rounds"] == resumed["rounds"] and sum(_launches(cut).values()) == size


def test_the_comparison_can_fail():
    a = [(1, {"x": (["gpu0"], 30.0)}, {"x": 1.0}), (2, {}, {})]
    with pytest.raises(AssertionError):
        _same(a, [(1, {"x": (["gpu0"], 20.0)}, {"x": 1.0}), (2, {}, {})])
    with pytest.raises(AssertionError):
        _same(a, [(1, {"x": (["gpu0"], 30.0)}, {"x": 1.5}), (2, {}, {})])
    with pytest.raises(AssertionError):  # a round run twice
        _same(a + [(2, {}, {})], a + [(3, {}, {})])


# ---------------------------------------------------------------- journals that cannot be used
def _quick_jobs(folder: Path, *, value: float = 50) -> Path:
    path = folder / "jobs.yaml"
    path.write_text("---\n".join([_doc("a0", "alice", 50, 4, value, "exit 0"), _doc("b0", "bob", 50, 4, 40, "exit 0")]))
    return path


def _main(capsys, jobs: Path, journal: Path, market: dict | None = None) -> tuple[int, str, str]:
    from gensolver.cli import main

    rc = main(["run", str(jobs), "--market", json.dumps(market or {"gpus": "80", "lease": 2}), "--journal", str(journal),
               "--backend", "sim", "--time-scale", "0.002", "--poll", "0.01", "--grace", "0.2", "--json"])
    out, err = capsys.readouterr()
    return rc, out, err


def _good_journal(tmp_path: Path, capsys) -> tuple[Path, Path]:
    jobs, journal = _quick_jobs(tmp_path), tmp_path / "j.jsonl"
    rc, _, err = _main(capsys, jobs, journal)
    assert rc == 0, err
    return jobs, journal


def _edit_last_round(journal: Path, change) -> None:
    """Rewrite the journal with its last round record changed by ``change`` (and no 'finished')."""
    recs = [r for r in _records(journal) if r["event"] != "finished"]
    change(recs[-1])
    journal.write_text("".join(json.dumps(r) + "\n" for r in recs))


@pytest.mark.parametrize(("damage", "message"), [
    (lambda p, jobs: p.write_text("hello\n"), "is not a gensolver journal"),
    (lambda p, jobs: p.write_text(json.dumps({"seq": 0, "time": 0, "event": "plan"}) + "\n"), "is not a market journal"),
    (lambda p, jobs: jobs.write_text(jobs.read_text().replace("value: 50", "value: 51")),
     "belongs to another market run: its jobs differs"),
    (lambda p, jobs: _edit_last_round(p, lambda r: r["state"]["work"].update(b0="x")), "field 'state.work.b0'"),
    (lambda p, jobs: _edit_last_round(p, lambda r: r.update(round=7)), "expected round"),
    (lambda p, jobs: _edit_last_round(p, lambda r: r["state"]["work"].update(zz=1.0)), "task 'zz' is not in the jobs"),
    (lambda p, jobs: _edit_last_round(p, lambda r: r["state"].update(engine={"arrived": 3})), "does not fit"),
])
def test_a_journal_that_cannot_be_used_exits_2_and_is_left_untouched(tmp_path, capsys, damage, message):
    jobs, journal = _good_journal(tmp_path, capsys)
    damage(journal, jobs)
    before = journal.read_bytes()
    rc, out, err = _main(capsys, jobs, journal)
    assert rc == 2 and out == "" and "Traceback" not in err, err
    assert "--journal" in err and message in " ".join(err.split()), err
    assert journal.read_bytes() == before


def test_other_options_a_folder_and_a_journal_in_use_are_refused(tmp_path, capsys):
    jobs, journal = _good_journal(tmp_path, capsys)
    before = journal.read_bytes()
    rc, _, err = _main(capsys, jobs, journal, {"gpus": "80", "lease": 3})
    assert rc == 2 and "its options differs" in " ".join(err.split()) and journal.read_bytes() == before
    rc, _, err = _main(capsys, jobs, tmp_path)
    assert rc == 2 and "is a directory" in err
    from gensolver.executor.journal import Journal

    with Journal(journal):  # another run holds it
        rc, _, err = _main(capsys, jobs, journal)
    assert rc == 2 and "locked" in err and journal.read_bytes() == before


def test_a_line_cut_short_by_a_crash_is_dropped_and_the_run_goes_on(tmp_path, capsys):
    jobs, journal = _good_journal(tmp_path, capsys)
    whole = _rounds(journal)
    _edit_last_round(journal, lambda r: None)  # as if the run died before writing 'finished' ...
    recs = _records(journal)
    with journal.open("w") as fh:  # ... and while writing its last round
        fh.write("".join(json.dumps(r) + "\n" for r in recs[:-1]) + json.dumps(recs[-1])[:40])
    rc, out, err = _main(capsys, jobs, journal)
    assert rc == 0, err
    assert json.loads(out)["resumed"] == len(whole) - 1
    _same(_rounds(journal), whole)
