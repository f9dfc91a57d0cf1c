"""``gensolver solve`` and ``gensolver methods``.

Exit codes are checked on the real installed script, run as a subprocess (the script sits
beside the interpreter in the virtual environment); the rest goes through
:func:`gensolver.cli.main` in-process.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from gensolver.cli import main
from gensolver.model import read_instance, write_instance
from gensolver.model.instance import Bid, Instance, Slot
from gensolver.solvers import get_method, list_methods
from gensolver.verify import brute_force, check_allocation

SCRIPT = Path(sys.executable).parent / "gensolver"

DOC = {
    "schema": "gensolver.instance/v1",
    "name": "cli-round",
    "slots": [{"id": "g0t0", "capacity": {"memory": 80, "compute": 1.0}},
              {"id": "g0t1", "capacity": {"memory": 80, "compute": 1.0}}],
    "bids": [
        {"id": "a1", "bidder": "A", "value": 5, "demand": {"g0t0": {"memory": 50}}},
        {"id": "a2", "bidder": "A", "value": 7, "demand": {"g0t0": {"memory": 50}, "g0t1": {"memory": 20}}},
        {"id": "b", "bidder": "B", "value": 4, "demand": {"g0t0": {"memory": 40, "compute": 0.5}}},
        {"id": "c", "bidder": "C", "value": 3.5, "demand": {"g0t1": {"memory": 70}}},
    ],
}


@pytest.fixture()
def instance_file(tmp_path: Path) -> Path:
    path = tmp_path / "round.json"
    path.write_text(json.dumps(DOC))
    return path


def run_script(*args: str) -> subprocess.CompletedProcess[str]:
    if not SCRIPT.exists():
        pytest.skip("the gensolver script is not installed beside this interpreter")
    return subprocess.run([str(SCRIPT), *args], capture_output=True, text=True, timeout=120)


# ------------------------------------------------------------------ real script, exit codes
def test_script_solves_and_prints_one_json_object(instance_file: Path) -> None:
    proc = run_script("solve", str(instance_file), "--method", "cpsat", "--time-limit", "10", "--json")
    assert proc.returncode == 0, proc.stderr
    lines = [ln for ln in proc.stdout.splitlines() if ln.strip()]
    assert len(lines) == 1, proc.stdout
    doc = json.loads(lines[0])
    assert {"status", "welfare", "bound", "gap", "winners", "method", "seconds"} <= set(doc)
    assert doc["schema"] == "gensolver.result/v1"
    inst = read_instance(instance_file)
    opt, _ = brute_force(inst)
    assert doc["status"] == "optimal" and doc["method"] == "cpsat"
    assert check_allocation(inst, doc["winners"], welfare=doc["welfare"]).feasible
    assert doc["welfare"] == pytest.approx(opt)
    assert doc["bound"] >= opt - 1e-9 and doc["gap"] == 0.0
    assert doc["seconds"]["total"] >= 0.0


@pytest.mark.parametrize("method", ["highs", "pulp-highs", "pulp-cbc", "auto"])
def test_script_json_is_clean_with_chatty_backends(instance_file: Path, method: str) -> None:
    """Backends that print banners from native code must not corrupt ``--json`` output."""
    proc = run_script("solve", str(instance_file), "-m", method, "--json")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["method"] == method and doc["status"] == "optimal"


@pytest.mark.parametrize(
    "content, args, message",
    [
        (None, [], r"no such file"),
        ("{\"schema\": \"gensolver.instance/v1\", \"slots\": [", [], r"invalid or truncated JSON"),
        (json.dumps({**DOC, "bids": [{**DOC["bids"][0], "value": -3}]}), [], r"/bids/0/value: must be non-negative"),
        (json.dumps(DOC), ["--method", "gurobi"], r"unknown method 'gurobi'; valid methods: "),
        (json.dumps(DOC), ["--time-limit", "-1"], r"--time-limit must be a positive"),
    ],
    ids=["missing-file", "invalid-json", "invalid-instance", "unknown-method", "bad-time-limit"],
)
def test_script_bad_input_exits_2(tmp_path: Path, content, args, message) -> None:
    path = tmp_path / "in.json"
    if content is not None:
        path.write_text(content)
    proc = run_script("solve", str(path), *args, "--json")
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    assert proc.stdout == ""
    assert "error" in proc.stderr
    import re

    assert re.search(message, " ".join(proc.stderr.split())), proc.stderr


@pytest.mark.parametrize(
    "args, message",
    [
        (["simulat"], r"No such command 'simulat'"),
        (["solve", "--bogus", "x"], r"No such option: --bogus"),
        (["solve"], r"Missing argument 'FILE'"),
        (["solve", "in.json", "--threads", "many"], r"Invalid value for .*--threads"),
        ([], r"Usage: gensolver"),
    ],
    ids=["unknown-command", "unknown-option", "missing-argument", "bad-option-type", "no-arguments"],
)
def test_script_usage_errors_exit_2_without_traceback(args: list[str], message: str) -> None:
    """Command-line mistakes are bad input too: click's message on stderr, exit status 2 (typer
    0.20+ vendors click, so catching ``click.ClickException`` alone let them crash)."""
    proc = run_script(*args)
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stderr
    import re

    # the help shown for no arguments at all may go to either stream
    assert re.search(message, " ".join((proc.stderr + proc.stdout).split()), re.IGNORECASE), proc.stderr


def test_main_returns_2_on_usage_errors_in_process() -> None:
    assert main(["no-such-command"]) == 2
    assert main(["solve", "--bogus"]) == 2


def test_script_help_and_methods() -> None:
    proc = run_script("--help")
    assert proc.returncode == 0
    assert "solve" in proc.stdout and "methods" in proc.stdout
    proc = run_script("methods")
    assert proc.returncode == 0
    for m in list_methods():
        assert m.name in proc.stdout


# ------------------------------------------------------------------ in-process
def test_main_summary_output(instance_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["solve", str(instance_file), "--method", "greedy"]) == 0
    out = capsys.readouterr().out
    assert "cli-round" in out and "method greedy" in " ".join(out.split())
    assert "winning bids" in out


@pytest.mark.parametrize("method", [m.name for m in list_methods()])
def test_main_json_every_method(instance_file: Path, method: str, capsys: pytest.CaptureFixture[str]) -> None:
    ok, why = get_method(method).available()
    if not ok:
        pytest.skip(why)
    assert main(["solve", str(instance_file), "-m", method, "-t", "20", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    inst = read_instance(instance_file)
    assert doc["method"] == method
    assert check_allocation(inst, doc["winners"], welfare=doc["welfare"]).feasible
    if doc["bound"] is not None:
        assert doc["bound"] >= brute_force(inst)[0] - 1e-9


def test_main_reads_cats_and_gzip(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    slots = tuple(Slot(f"g{k}", {"units": 1.0}) for k in range(3))
    bids = (Bid("b0", "b0", 3.0, {"g0": {"units": 1.0}, "g1": {"units": 1.0}}),
            Bid("b1", "b1", 2.0, {"g1": {"units": 1.0}, "g2": {"units": 1.0}}),
            Bid("b2", "b2", 2.5, {"g2": {"units": 1.0}}))
    inst = Instance(slots, bids)
    for name in ("x.txt", "x.json.gz"):
        path = write_instance(inst, tmp_path / name)
        assert main(["solve", str(path), "--json"]) == 0
        doc = json.loads(capsys.readouterr().out)
        assert doc["welfare"] == pytest.approx(5.5)


def test_main_bad_input_returns_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["solve", str(tmp_path / "missing.json")]) == 2
    err = capsys.readouterr().err
    assert "no such file" in err


def test_main_methods_available_only(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["methods", "--available"]) == 0
    out = capsys.readouterr().out
    for m in list_methods():
        if m.available()[0]:
            assert m.name in out


def test_typer_runner_usage_error() -> None:
    from typer.testing import CliRunner

    from gensolver.cli import app

    result = CliRunner().invoke(app, ["solve"])
    assert result.exit_code == 2
    result = CliRunner().invoke(app, ["solve", "x.json", "--time-limit", "soon"])
    assert result.exit_code == 2


def test_main_deterministic_auto_repeats_and_rejects_other_methods(tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    from gensolver.instances.cats import arbitrary

    path = tmp_path / "cats.json"
    write_instance(arbitrary(30, 120, seed=2), path)
    docs = []
    for _ in range(2):
        assert main(["solve", str(path), "-t", "0.3", "--threads", "2", "--deterministic", "--json"]) == 0
        docs.append(json.loads(capsys.readouterr().out))
    assert docs[0]["winners"] == docs[1]["winners"] and docs[0]["bound"] == docs[1]["bound"]
    assert check_allocation(read_instance(path), docs[0]["winners"], welfare=docs[0]["welfare"]).feasible
    assert main(["solve", str(path), "-m", "greedy", "--deterministic"]) == 2
    assert "--deterministic" in capsys.readouterr().err


@pytest.mark.parametrize("args, message", [
    (["--mechanism", "vcg", "--threads", "0"], "--threads: must be a positive integer"),
    (["--mechanism", "vcg", "--seed", "3"], "--seed: with --mechanism, only lavi-swamy"),
    (["--mechanism", "greedy-critical", "--threads", "2"], "does not take a thread count"),
])
def test_mechanism_options_are_not_silently_ignored(instance_file: Path, args, message, capsys) -> None:
    assert main(["solve", str(instance_file), *args]) == 2
    assert message in " ".join(capsys.readouterr().err.split())


def test_mechanism_threads_reach_vcg(instance_file: Path, capsys) -> None:
    assert main(["solve", str(instance_file), "--mechanism", "vcg", "--threads", "1", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["mechanism"] == "vcg" and set(doc["payments"]) == {"A", "B", "C"}
