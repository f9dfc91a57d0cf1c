"""``gensolver simulate``: bad input exits 2 naming the option or key, output is valid JSON,
``--out`` is checked before any work and written atomically, and nothing is silently dropped.

Most checks go through :func:`gensolver.cli.main` in-process (an unexpected exception
propagates and fails the test); warnings, the progress bar and exit codes also run the real
script as a subprocess.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from gensolver.cli import main

SCRIPT = Path(sys.executable).parent / "gensolver"

TOO_BIG = """\
apiVersion: scheduling.gen.io/v1alpha1
kind: GenTask
metadata:
  name: llm-finetune-001
spec:
  containers:
    - name: trainer
      image: pytorch:latest
      command: ["python", "train.py"]
  genResources:
    gpuMemory:
      preferred: 500Gi
      minRequired: 400Gi
      urgencyFactor: 0.8
    computeTime:
      preemptible: true
"""


def _strict_json(text: str):
    """``json.loads`` that rejects the bare NaN / Infinity Python's json would accept."""
    def no_constants(name: str):
        raise ValueError(f"invalid JSON constant {name}")

    return json.loads(text, parse_constant=no_constants)


def _run_script(*args: str, **kw) -> subprocess.CompletedProcess[str]:
    if not SCRIPT.exists():
        pytest.skip("the gensolver script is not installed beside this interpreter")
    return subprocess.run([str(SCRIPT), *args], capture_output=True, text=True, timeout=120, **kw)


def _bad(args: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    """Run ``gensolver simulate ARGS`` in-process; it must exit 2 with nothing on stdout. Returns stderr."""
    rc = main(["simulate", *args])
    cap = capsys.readouterr()
    assert rc == 2, cap
    assert "Traceback" not in cap.err
    assert cap.out == "", "bad input must fail before any simulation output"
    return cap.err


@pytest.fixture()
def too_big(tmp_path: Path) -> Path:
    p = tmp_path / "pref_toobig.yaml"
    p.write_text(TOO_BIG)
    return p


# ------------------------------------------------------------------ 1. synthetic keys
@pytest.mark.parametrize("spec, words", [
    ("synthetic:n=5,tenants=0", ["tenants", "positive integer"]),
    ("synthetic:n=5,per_node=0", ["per_node", "positive integer"]),
    ("synthetic:n=5,gpus=nan", ["gpus", "finite positive"]),
    ("synthetic:n=5,gpus=80+inf", ["gpus", "finite positive"]),
    ("synthetic:n=5,gpus=-80", ["gpus", "finite positive"]),
    ("synthetic:n=5,gang_share=5", ["gang_share", "[0, 1]"]),
    ("synthetic:n=5,preemptible_share=-1", ["preemptible_share", "[0, 1]"]),
    ("synthetic:n=5,seed=-1", ["seed"]),
    ("synthetic:n=5,rate=1e-300", ["rate", "too small"]),
    ("synthetic:n=5,rate=inf", ["rate"]),
    ("synthetic:n=5,n=6", ["'n'", "given twice"]),
    ("synthetic:n=5,colour=red", ["unknown key 'colour'", "valid keys: gpus, n, seed"]),
    ("synthetic:n=x", ["'n'", "integer"]),
])
def test_synthetic_keys_are_checked(spec: str, words: list[str], capsys) -> None:
    err = _bad([spec, "-p", "elastic"], capsys)
    assert "synthetic spec:" in err
    for w in words:
        assert w in err, err
    assert "preferred_memory" not in err and "cannot convert" not in err


# ------------------------------------------------------------------ 2. solver / mechanism up front
def test_unknown_method_is_rejected_up_front(capsys) -> None:
    err = _bad(["synthetic:n=8", "-p", "auction", "--method", "nope"], capsys)
    assert "--method: unknown method 'nope'; valid methods:" in err and "greedy" in err


def test_round_budget_and_its_deprecated_alias_time_limit(capsys, monkeypatch) -> None:
    """--round-budget is the work units of each round's clearing (the policies' option budget);
    --time-limit, its old name, gives the same rounds with a warning."""
    import gensolver.cli.sim_cmd as sim_cmd

    seen: list[float] = []
    real = sim_cmd._policy_options
    monkeypatch.setattr(sim_cmd, "_policy_options", lambda p, m, b: seen.append(b) or real(p, m, b))
    args = ["simulate", "synthetic:n=6,seed=2", "-p", "auction", "--method", "auto", "--json", "--no-bound"]
    timing = ("sim_seconds", "solver_s_per_round")
    runs = []
    for option in ("--round-budget", "--time-limit"):
        assert main([*args, option, "0.3"]) == 0
        cap = capsys.readouterr()
        runs.append(([{k: v for k, v in row.items() if k not in timing} for row in json.loads(cap.out)], cap.err))
    (new, new_err), (old, old_err) = runs
    assert seen == [0.3, 0.3] and new == old and new[0]["done"] == "6/6"
    assert "--time-limit is deprecated; use --round-budget" in old_err and "--time-limit" not in new_err
    err = _bad(["synthetic:n=6", "-p", "auction", "--round-budget", "0.5", "--time-limit", "0.3"], capsys)
    assert "--time-limit: give --round-budget only" in err


def test_method_and_its_deprecated_alias_solver(capsys) -> None:
    args = ["simulate", "synthetic:n=6,seed=2", "-p", "auction", "--json", "--no-bound"]
    timing = ("sim_seconds", "solver_s_per_round")
    runs = []
    for option in ("--method", "--solver"):
        assert main([*args, option, "lp"]) == 0
        cap = capsys.readouterr()
        runs.append(([{k: v for k, v in row.items() if k not in timing} for row in json.loads(cap.out)], cap.err))
    (new, new_err), (old, old_err) = runs
    assert new == old and new[0]["done"] == "6/6"
    assert "--solver is deprecated; use --method" in old_err and "--solver is deprecated" not in new_err
    err = _bad(["synthetic:n=6", "-p", "auction", "--method", "lp", "--solver", "auto"], capsys)
    assert "--solver: give --method only" in err


def test_unknown_mechanism_names_the_option(capsys) -> None:
    err = _bad(["synthetic:n=4", "-p", "market", "--mechanism", "vcg"], capsys)
    assert "--mechanism: the market prices with others-price" in err and "'vcg'" in err


# ------------------------------------------------------------------ 3. --gpus
@pytest.mark.parametrize("gpus", ["nan", "inf", "80,nan", "0", "-24", "80,x"])
def test_gpus_must_be_finite_and_positive(gpus: str, capsys) -> None:
    assert "--gpus:" in _bad(["synthetic:n=4", "-p", "elastic", "--gpus", gpus], capsys)


# ------------------------------------------------------------------ 4. --nodes and other trace options
@pytest.mark.parametrize("value", ["0", "-1", "100000000"])
def test_nodes_must_be_positive_and_sane(value: str, capsys) -> None:
    assert "--nodes:" in _bad(["philly", "-p", "elastic", "--max-jobs", "5", "--nodes", value], capsys)


@pytest.mark.parametrize("args, option", [
    (["philly", "--max-jobs", "-3"], "--max-jobs:"),
    (["philly", "--max-jobs", "0"], "--max-jobs:"),
    (["philly", "--max-jobs", "5", "--compress", "0"], "--compress:"),
    (["philly", "--max-jobs", "5", "--compress", "nan"], "--compress:"),
    (["synthetic:n=4", "--nodes", "2"], "--nodes: applies only to"),
    (["synthetic:n=4", "--max-jobs", "2"], "--max-jobs: applies only to"),
])
def test_trace_options_are_checked(args: list[str], option: str, capsys) -> None:
    err = _bad([*args, "-p", "elastic"], capsys)
    assert option in err
    assert "max_jobs" not in err


# ------------------------------------------------------------------ 5. tasks that never fit are counted
def test_rejected_tasks_are_reported(too_big: Path, capsys) -> None:
    assert main(["simulate", str(too_big), "-p", "elastic", "--json"]) == 0
    rows = _strict_json(capsys.readouterr().out)
    assert rows[0]["done"] == "0/1" and rows[0]["rejected"] == 1
    assert rows[0]["avg_jct"] is None
    assert rows[0]["jain"] is None  # fairness among no finished task is undefined, not 1.0
    assert main(["simulate", str(too_big), "-p", "elastic"]) == 0
    out = capsys.readouterr().out
    assert "rejected" in out and "0/1" in out and "nan" not in out


def test_done_counts_every_task_of_the_workload(capsys) -> None:
    # with --until some tasks have not arrived yet: they still count in done x/N
    assert main(["simulate", "synthetic:n=6,rate=0.2", "-p", "fcfs-packing", "--until", "3", "--json"]) == 0
    row = _strict_json(capsys.readouterr().out)[0]
    assert row["done"].endswith("/6")


# ------------------------------------------------------------------ 6. valid JSON
def test_json_and_results_file_have_no_bare_nan(too_big: Path, tmp_path: Path, capsys) -> None:
    out = tmp_path / "res"
    assert main(["simulate", str(too_big), "-p", "elastic", "--json", "--out", str(out)]) == 0
    stdout = capsys.readouterr().out
    assert "NaN" not in stdout
    _strict_json(stdout)
    doc = _strict_json((out / "results.json").read_text())
    assert doc["rows"][0]["rho_max"] is None and doc["rows"][0]["rejected"] == 1


# ------------------------------------------------------------------ 7. --out checked first, atomic
def test_out_that_is_a_file_fails_before_simulating(tmp_path: Path, capsys) -> None:
    f = tmp_path / "good.json"
    f.write_text("{}")
    err = _bad(["synthetic:n=4", "-p", "elastic", "--out", str(f)], capsys)
    assert "--out:" in err and "not a directory" in err
    assert f.read_text() == "{}"
    err = _bad(["synthetic:n=4", "-p", "elastic", "--out", str(f / "x")], capsys)
    assert "--out:" in err


@pytest.mark.skipif(not Path("/proc/self").exists(), reason="needs Linux /proc")
def test_out_that_cannot_be_created_fails_before_simulating(capsys) -> None:
    assert "--out:" in _bad(["synthetic:n=4", "-p", "elastic", "--out", "/proc/gensolver-test/x"], capsys)


def test_out_is_not_half_written(tmp_path: Path, capsys) -> None:
    out = tmp_path / "res"
    (out / "results.json").mkdir(parents=True)  # results.json cannot be written: nothing may be
    err = _bad(["synthetic:n=4", "-p", "elastic", "--out", str(out)], capsys)
    assert "--out:" in err and "results.json" in err
    assert sorted(p.name for p in out.iterdir()) == ["results.json"]


def test_failed_run_leaves_no_empty_out_folder(tmp_path: Path, capsys) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(TOO_BIG.replace("500Gi", "30Gx"))
    out = tmp_path / "new" / "res"
    err = _bad([str(bad), "-p", "elastic", "--out", str(out)], capsys)
    assert "30Gx" in err
    assert not (tmp_path / "new").exists()


def test_out_writes_every_file_without_temporaries(tmp_path: Path, capsys) -> None:
    out = tmp_path / "res"
    assert main(["simulate", "synthetic:n=4", "-p", "elastic", "-p", "auction", "--out", str(out)]) == 0
    names = sorted(p.name for p in out.iterdir())
    assert names == ["credits.png", "gantt-elastic.png", "gantt-market-solver.png", "jct_cdf.png", "results.json",
                     "utilisation.png"]
    for name in names:
        if name.endswith(".png"):
            assert (out / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert [r["policy"] for r in _strict_json((out / "results.json").read_text())["rows"]] == ["elastic", "market-solver"]
    assert "policy 'auction' is deprecated" in capsys.readouterr().err  # the retired name runs the market


# ------------------------------------------------------------------ 8. option values, CLI names
@pytest.mark.parametrize("args, option", [
    (["-p", "elastic", "--round-budget", "-1"], "--round-budget:"),
    (["-p", "elastic", "--round-budget", "nan"], "--round-budget:"),
    (["-p", "auction", "--round-budget", "0"], "--round-budget:"),
    (["-p", "auction", "--time-limit", "0"], "--time-limit:"),
    (["-p", "elastic", "--until", "-1"], "--until:"),
    (["-p", "elastic", "--until", "inf"], "--until:"),
    (["-p", "elastic", "--lease", "0"], "--lease:"),
    (["-p", "elastic", "-p", "elastic"], "--policy:"),
    (["-p", "lottery"], "--policy:"),
    (["-p", "elastic", "--fault", "gpu:x"], "--fault:"),
    (["-p", "elastic", "--fault", "gpu:nope@1-3"], "--fault:"),
    (["-p", "elastic", "--fault", "node:nope@1-3"], "--fault:"),
])
def test_options_are_checked_and_named(args: list[str], option: str, capsys) -> None:
    err = _bad(["synthetic:n=4", *args], capsys)
    assert option in err
    assert "MarketConfig" not in err and "until must" not in err and "lease must" not in err


# ------------------------------------------------------------------ 9. no matplotlib warning
def test_out_prints_no_warning_when_no_job_finishes(too_big: Path, tmp_path: Path) -> None:
    proc = _run_script("simulate", str(too_big), "-p", "elastic", "--out", str(tmp_path / "res"))
    assert proc.returncode == 0, proc.stderr
    assert "Warning" not in proc.stderr, proc.stderr
    assert (tmp_path / "res" / "jct_cdf.png").stat().st_size > 0


# ------------------------------------------------------------------ 10. --seed
@pytest.mark.parametrize("seed", ["-1", str(2**31), str(2**32)])
def test_seed_range_names_the_option(seed: str, capsys) -> None:
    assert "--seed:" in _bad(["synthetic:n=4", "-p", "elastic", "--seed", seed], capsys)


def test_seed_seeds_a_synthetic_workload_without_a_seed_key() -> None:
    from gensolver.cli.sim_cmd import load_workload
    from gensolver.sim import parse_synthetic

    assert load_workload("synthetic:n=6", seed=3).tasks == parse_synthetic("synthetic:n=6,seed=3").tasks
    assert load_workload("synthetic:n=6", seed=3).tasks != parse_synthetic("synthetic:n=6").tasks
    assert load_workload("synthetic:n=6,seed=1", seed=3).tasks == parse_synthetic("synthetic:n=6,seed=1").tasks


# ------------------------------------------------------------------ 11. progress on a terminal
def _run_with_tty_stderr(*args: str) -> tuple[int, str, str]:
    pty = pytest.importorskip("pty")
    if not SCRIPT.exists():
        pytest.skip("the gensolver script is not installed beside this interpreter")
    master, slave = pty.openpty()
    env = dict(os.environ, TERM="xterm", COLUMNS="120")
    env.pop("NO_COLOR", None)
    proc = subprocess.Popen([str(SCRIPT), *args], stdout=subprocess.PIPE, stderr=slave, env=env)
    os.close(slave)
    out = proc.stdout.read()  # type: ignore[union-attr]
    proc.wait(timeout=120)
    err = b""
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:
            break
        if not chunk:
            break
        err += chunk
    os.close(master)
    return proc.returncode, out.decode(), err.decode(errors="replace")


def test_progress_shows_on_a_terminal_only() -> None:
    rc, out, err = _run_with_tty_stderr("simulate", "synthetic:n=6", "-p", "elastic")
    assert rc == 0 and "elastic" in out
    assert "elastic: done" in err and "6/6" in err
    rc, out, err = _run_with_tty_stderr("simulate", "synthetic:n=6", "-p", "elastic", "--json")
    assert rc == 0 and _strict_json(out)[0]["done"] == "6/6"
    assert "done" not in err and "simulating" not in err


def test_progress_wrapper_changes_no_result() -> None:
    from gensolver.cli.sim_cmd import _Progress
    from gensolver.sim import get_policy, parse_synthetic, simulate

    w = parse_synthetic("synthetic:n=10,seed=2,rate=1")
    for name in ("elastic", "market"):
        plain = simulate(w, policy=name)
        with _Progress(len(w.tasks)) as progress:
            watched = simulate(w, policy=progress.wrap(get_policy(name)))
        assert watched.policy == plain.policy and watched.events == plain.events
        assert watched.metrics.completed == plain.metrics.completed and len(watched.rounds) == len(plain.rounds)
        assert dict(watched.balances) == dict(plain.balances)
