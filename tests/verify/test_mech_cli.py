"""``gensolver verify`` and ``gensolver solve --mechanism`` (JSON contract, bad input)."""

from __future__ import annotations

import json

from gensolver import write_instance
from gensolver.cli import main
from tests.mechanisms.helpers import goods_instance


def _llg(tmp_path):
    inst = goods_instance([("l1", "L1", 8, ["A"]), ("l2", "L2", 6, ["B"]), ("g", "G", 10, ["A", "B"])], ["A", "B"])
    return str(write_instance(inst, tmp_path / "llg.json"))


def test_verify_json_reports_worst_misreport(tmp_path, capsys):
    path = _llg(tmp_path)
    assert main(["verify", path, "--mechanism", "pay-as-bid", "--method", "cpsat", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    # L2: 6 * (1 - 0.5) = 3; L1 at 4 ties the locals with G (10 = 4 + 6), and the canonical
    # (id-sorted) order the solvers see breaks the tie for the locals: 8 - 4 = 4
    assert doc["max_regret"] == 4.0
    assert doc["worst"] == {"bidder": "L1", "regret": 4.0, "misreport": "scale all values by 0.5", "family": "scale"}
    assert doc["bidders"]["L2"]["regret"] == 3.0
    assert set(doc["bidders"]) == {"L1", "L2", "G"}


def test_verify_table_for_vcg(tmp_path, capsys):
    path = _llg(tmp_path)
    assert main(["verify", path, "--mechanism", "vcg", "--families", "scale,subset"]) == 0
    assert "max regret 0" in capsys.readouterr().out


def test_verify_bad_input_exits_2(tmp_path, capsys):
    path = _llg(tmp_path)
    assert main(["verify", path, "--mechanism", "nope"]) == 2
    assert "valid mechanisms" in capsys.readouterr().err
    assert main(["verify", str(tmp_path / "missing.json")]) == 2
    assert main(["verify", path, "--families", "lies"]) == 2


def test_solve_with_mechanism_json_has_payments(tmp_path, capsys):
    path = _llg(tmp_path)
    assert main(["solve", path, "--mechanism", "core", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["payments"] == {"L1": 6.0, "L2": 4.0, "G": 0.0}
    assert doc["revenue"] == 10.0
