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


def test_per_run_limit_and_its_deprecated_alias_time_limit(small: Path, capsys: pytest.CaptureFixture[str],
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """``--per-run-limit`` is the time limit of every run of the mechanism; ``--time-limit``/``-t``
    give the same regrets with a warning; both with different values exit 2."""
    import importlib

    from gensolver.cli import main

    regret_module = importlib.import_module("gensolver.verify.regret")  # the package's regret is a function

    real = regret_module.max_regret
    limits: list[object] = []

    def recording(*args: object, **kwargs: object):  # type: ignore[no-untyped-def]
        limits.append(kwargs.get("per_run_limit"))
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(regret_module, "max_regret", recording)

    def run(*args: str) -> tuple[int, str, str]:
        capsys.readouterr()
        rc = main(["verify", str(small), "--mechanism", "pay-as-bid", "--method", "greedy", "--families", "scale",
                   *args])
        cap = capsys.readouterr()
        return rc, cap.out, " ".join(cap.err.split())

    docs = {}
    for option in ("--per-run-limit", "--time-limit", "-t"):
        rc, out, err = run(option, "5", "--json")
        assert rc == 0, err
        warned = "warning: --time-limit is deprecated; use --per-run-limit" in err
        assert warned == (option != "--per-run-limit"), err
        docs[option] = json.loads(out)
    assert limits == [5.0, 5.0, 5.0]
    assert docs["--per-run-limit"] == docs["--time-limit"] == docs["-t"]
    # pay-as-bid, worked out by hand: A (value 5) shades by 0.8 to 4, beats B's 3 and pays 4
    assert docs["-t"]["max_regret"] == 1.0 and docs["-t"]["bidders"]["A"]["regret"] == 1.0
    rc, out, err = run("--per-run-limit", "4", "--time-limit", "5")
    assert rc == 2 and "error: --time-limit: give --per-run-limit only" in err, err
    assert "--per-run-limit 4.0 and --time-limit 5.0" in err, err
    rc, out, err = run("--per-run-limit", "0")
    assert rc == 2 and "error: --per-run-limit must be a positive finite number" in err, err
    assert limits == [5.0, 5.0, 5.0]  # neither bad call ran the mechanism
