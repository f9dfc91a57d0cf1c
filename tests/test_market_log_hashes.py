"""``scripts/market_log_hashes.py --compare``: the check a decision-keeping change runs, shown
to pass on equal fingerprints and to fail on one changed run or a changed grid."""

from __future__ import annotations

import json
from pathlib import Path
from types import ModuleType

import pytest

from tests.scriptload import load_script


def _script() -> ModuleType:
    return load_script("scripts/market_log_hashes.py")


def _write(path: Path, runs: dict[str, str]) -> Path:
    path.write_text(json.dumps(runs))
    return path


def test_compare_passes_equal_runs_and_names_each_difference(tmp_path, capsys):
    main = _script().main
    runs = {"a": "00ff", "b": "11ee", "c": "00ff"}
    before = _write(tmp_path / "before.json", runs)
    assert main(["--compare", str(before), str(_write(tmp_path / "same.json", dict(runs)))]) == 0
    assert "0 of 3 runs differ (2 distinct logs)" in capsys.readouterr().out
    assert main(["--compare", str(before), str(_write(tmp_path / "one.json", {**runs, "b": "22dd"}))]) == 1
    out = capsys.readouterr().out
    assert "1 of 3 runs differ" in out and "  b" in out.splitlines()
    assert main(["--compare", str(before), str(_write(tmp_path / "grid.json", {"a": "00ff", "b": "11ee"}))]) == 1


def test_without_a_file_it_says_what_to_give(capsys):
    with pytest.raises(SystemExit) as exc:
        _script().main([])
    assert exc.value.code == 2 and "give an output file" in capsys.readouterr().err
