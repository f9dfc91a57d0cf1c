"""``gensolver verify``: bad input exits 2; a real run prints one JSON object."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from gensolver.model import Bid, Instance, Slot, write_instance

SCRIPT = Path(sys.executable).parent / "gensolver"


@pytest.fixture()
def small(tmp_path: Path) -> Path:
    inst = Instance((Slot("s", {"units": 1.0}),), (Bid("a", "A", 5.0, {"s": {"units": 1.0}}),
                                                   Bid("b", "B", 3.0, {"s": {"units": 1.0}})))
    path = tmp_path / "small.json"
    write_instance(inst, path)
    return path


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    if not SCRIPT.exists():
        pytest.skip("the gensolver script is not installed beside this interpreter")
    return subprocess.run([str(SCRIPT), *args], capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("families", [",", "", " , "])
def test_an_empty_family_list_is_bad_input(small: Path, families: str) -> None:
    """Used to try no misreport at all and report 'max regret 0' with exit 0."""
    proc = _run("verify", str(small), "--families", families)
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    assert "--families" in proc.stderr and "Traceback" not in proc.stderr


def test_unknown_family_is_bad_input(small: Path) -> None:
    proc = _run("verify", str(small), "--families", "scale,bogus")
    assert proc.returncode == 2 and "bogus" in proc.stderr


def test_verify_json_on_a_real_instance(small: Path) -> None:
    proc = _run("verify", str(small), "--families", "scale,bid", "--json")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    # VCG on one good: A wins and pays B's value; no scaling of a bid helps anyone
    assert doc["max_regret"] == 0.0 and set(doc["bidders"]) == {"A", "B"}
    assert all(b["misreports_tried"] > 0 for b in doc["bidders"].values())


def test_method_and_its_deprecated_alias(small: Path) -> None:
    new = _run("verify", str(small), "--families", "scale", "--method", "greedy", "--json")
    old = _run("verify", str(small), "--families", "scale", "--solver", "greedy", "--json")
    assert new.returncode == 0 and old.returncode == 0, (new.stderr, old.stderr)
    assert json.loads(new.stdout) == json.loads(old.stdout)
    assert "--solver is deprecated" in old.stderr and "deprecated" not in new.stderr
    both = _run("verify", str(small), "--method", "cpsat", "--solver", "greedy")
    assert both.returncode == 2 and "--method only" in both.stderr and "Traceback" not in both.stderr
    bad = _run("verify", str(small), "--method", "nope")
    assert bad.returncode == 2 and "nope" in bad.stderr
