"""Generator size limits (issue 32): a suite manifest asking for 10**9 bids is refused by name
before anything is drawn, by the documented environment variables."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gensolver.cli import main
from gensolver.instances import generate
from gensolver.model.inputs import SizeLimitError


@pytest.mark.parametrize("family, params, field", [
    ("regions", {"n_goods": 16, "n_bids": 10**9}, "n_bids"),
    ("arbitrary", {"n_goods": 10**6, "n_bids": 10}, "n_goods"),
    ("paths", {"n_cities": 10**7, "n_bids": 10}, "n_cities"),
    ("gpu", {"n_gpus": 4, "n_tasks": 10**9}, "n_tasks"),
    ("gpu", {"n_gpus": 10**8, "n_tasks": 4}, "n_gpus"),
])
def test_huge_generator_sizes_are_refused_by_name(family: str, params: dict[str, int], field: str) -> None:
    with pytest.raises(SizeLimitError, match=field) as info:
        generate(family, seed=0, **params)
    assert info.value.field == field


def test_the_limit_follows_its_variable(monkeypatch) -> None:
    monkeypatch.setenv("GENSOLVER_MAX_TASKS", "10")
    with pytest.raises(SizeLimitError, match="GENSOLVER_MAX_TASKS"):
        generate("regions", seed=0, n_goods=8, n_bids=11)
    inst = generate("regions", seed=0, n_goods=8, n_bids=10)
    assert inst.n_bids >= 1


def test_a_suite_manifest_of_a_billion_bids_fails_by_name(tmp_path: Path, capsys) -> None:
    f = tmp_path / "huge.json"
    f.write_text(json.dumps({"schema": "gensolver.suite/v1", "name": "huge", "instances": [
        {"name": "a", "family": "regions", "params": {"n_goods": 16, "n_bids": 10**9}, "seed": 0,
         "file": "a.json.gz"}]}))
    rc = main(["suite", "materialize", str(f)])
    out, err = capsys.readouterr()
    assert rc != 0 and "GENSOLVER_MAX_TASKS" in " ".join((out + err).split())
    assert "Traceback" not in err
