"""``solve``, ``plan`` and ``verify`` accept a bundled instance's name (``smoke/smoke-L3``)."""

from __future__ import annotations

import gzip
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from gensolver.cli import main
from gensolver.executor import check_plan, read_plan
from gensolver.model import from_dict
from gensolver.verify import check_allocation

ROOT = Path(__file__).resolve().parents[2]
SMOKE = ROOT / "gensolver" / "data" / "suites" / "smoke"
SCRIPT = Path(sys.executable).parent / "gensolver"


def _manifest_entry(name: str) -> dict:
    return next(e for e in json.loads((SMOKE / "manifest.json").read_text())["instances"] if e["name"] == name)


def _committed(name: str):
    return from_dict(json.loads(gzip.decompress((SMOKE / _manifest_entry(name)["file"]).read_bytes())))


@pytest.mark.parametrize("spelling", ["smoke/smoke-L3", "bundled:smoke/L3"])
def test_solve_a_bundled_name(spelling: str, capsys: pytest.CaptureFixture[str], tmp_path: Path,
                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # no file of that name here
    assert main(["solve", spelling, "--method", "cpsat", "-t", "30", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    inst = _committed("smoke-L3")
    assert check_allocation(inst, doc["winners"], welfare=doc["welfare"]).feasible
    best = _manifest_entry("smoke-L3")["best_known"]  # proven optimal when the suite was built
    assert best["status"] == "optimal"
    assert doc["status"] == "optimal" and doc["welfare"] == pytest.approx(best["welfare"], rel=1e-6)


def test_a_file_of_that_name_wins(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """``smoke/x`` is a path first: only when no such file exists is it a bundled name."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "smoke").mkdir()
    other = _committed("smoke-matching")
    (tmp_path / "smoke" / "smoke-L3").write_text(json.dumps(other.to_dict()))
    assert main(["solve", "smoke/smoke-L3", "--method", "greedy", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert set(doc["winners"]) <= {b.id for b in other.bids}
    assert check_allocation(other, doc["winners"], welfare=doc["welfare"]).feasible


def test_plan_a_bundled_name(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    out = tmp_path / "plan.json"
    assert main(["plan", "smoke/smoke-gpu-0", "-o", str(out), "-m", "cpsat", "-t", "30"]) == 0
    plan = read_plan(out)
    assert plan.tasks and check_plan(plan).ok


def test_verify_a_bundled_name(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(["verify", "bundled:smoke/smoke-L3", "-M", "vcg", "--families", "scale", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["mechanism"] == "vcg" and doc["max_regret"] == pytest.approx(0.0, abs=1e-6)
    assert len(doc["bidders"]) == _committed("smoke-L3").n_bidders


@pytest.mark.parametrize("command", [["solve"], ["verify"], ["plan", "-o", "p.json"]])
@pytest.mark.parametrize("name, message", [
    ("smoke/nope", r"suite 'smoke' has no instance 'nope'; valid: smoke/smoke-arbitrary"),
    ("bundled:nosuite/x", r"not a bundled instance; write <suite>/<instance> with a suite among"),
])
def test_an_unknown_name_exits_2_listing_the_valid_ones(command: list[str], name: str, message: str,
                                                       tmp_path: Path) -> None:
    if not SCRIPT.exists():
        pytest.skip("the gensolver script is not installed beside this interpreter")
    proc = subprocess.run([str(SCRIPT), command[0], name, *command[1:]], capture_output=True, text=True,
                          timeout=120, cwd=tmp_path)
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stderr
    assert re.search(message, " ".join(proc.stderr.split())), proc.stderr
    assert not (tmp_path / "p.json").exists()
