"""``gensolver round`` (:mod:`gensolver.cli.round_cmd`): GenTask YAML made a market round. The
written round is checked against the YAML read here with the standard YAML parser (names,
memories in GiB, durations in steps, values) and the GPUs asked for; bad options exit 2 naming
them and write nothing."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
import yaml

from gensolver.cli import main
from gensolver.cli.round_cmd import gentask_round, is_gentask_file
from gensolver.errors import InputError

JOBS = Path(__file__).resolve().parents[2] / "gensolver" / "data" / "demo" / "jobs.yaml"


def _gib(text: str) -> float:
    assert text.endswith("Gi")
    return float(text[:-2])


def _minutes(text: str) -> float:
    assert text.endswith("m")
    return float(text[:-1])


def test_the_round_holds_each_gentask_as_written(tmp_path, capsys) -> None:
    out = tmp_path / "round.json"
    assert main(["round", str(JOBS), "--gpus", "80,40", "--steps", "8", "--step-seconds", "900", "-o", str(out)]) == 0
    doc = json.loads(out.read_text())
    assert doc["schema"] == "gensolver.gpuround/v1" and doc["steps"] == 8 and doc["step_seconds"] == 900
    assert [g["memory"] for g in doc["gpus"]] == [80.0, 40.0]
    by_id = {t["id"]: t for t in doc["tasks"]}
    specs = [d for d in yaml.safe_load_all(JOBS.read_text()) if d]
    assert set(by_id) == {d["metadata"]["name"] for d in specs}
    for d in specs:
        t, res = by_id[d["metadata"]["name"]], d["spec"]["genResources"]
        assert t["preferred_memory"] == _gib(res["gpuMemory"]["preferred"])
        assert t["min_memory"] == _gib(res["gpuMemory"]["minRequired"])
        assert t["duration"] == math.ceil(_minutes(res["computeTime"]["duration"]) * 60 / 900)
        assert t["value"] == float(res["value"])
    assert f"{len(specs)} tasks on 2 GPUs x 8 steps" in capsys.readouterr().out


@pytest.mark.parametrize(("args", "option"), [(["--gpus", "80,x"], "--gpus"), (["--gpus", "-1"], "--gpus"),
                                               (["--steps", "0"], "--steps"), (["--step-seconds", "0"], "--step-seconds")])
def test_bad_options_exit_2_naming_them(tmp_path, capsys, args: list[str], option: str) -> None:
    out = tmp_path / "round.json"
    assert main(["round", str(JOBS), *args, "-o", str(out)]) == 2
    assert option in capsys.readouterr().err and not out.exists()


def test_a_file_without_gentasks_is_refused(tmp_path) -> None:
    empty = tmp_path / "empty.yaml"
    empty.write_text("# nothing here\n")
    assert is_gentask_file(empty) and not is_gentask_file(tmp_path / "round.json")
    with pytest.raises(InputError, match="no GenTask document"):
        gentask_round(empty)
