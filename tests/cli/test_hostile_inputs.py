"""Hostile inputs through the command line (issue 20): every one exits 2 with a message on
stderr naming the problem, never a traceback and never exit 0 with data silently lost."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from gensolver.cli import main

DOC = {"schema": "gensolver.instance/v1",
       "slots": [{"id": "s", "capacity": {"memory": 80}}],
       "bids": [{"id": "a", "bidder": "A", "value": 5, "demand": {"s": {"memory": 30}}}]}

COMMANDS = {
    "solve": lambda f: ["solve", str(f), "--method", "greedy"],
    "verify": lambda f: ["verify", str(f), "--mechanism", "vcg"],
    "plan": lambda f: ["plan", str(f), "--method", "greedy", "--output", str(f.parent / "plan-out.json")],
}


def _exit(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    rc = main(argv)
    out, err = capsys.readouterr()
    assert "Traceback" not in err
    return rc, out, err


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_deep_nesting_exits_2_from_every_reader(tmp_path: Path, capsys, command: str) -> None:
    f = tmp_path / "deep.json"
    f.write_text("[" * 100_000)
    rc, _, err = _exit(COMMANDS[command](f), capsys)
    assert rc == 2 and "nested too deeply" in err


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_a_5000_digit_capacity_exits_2(tmp_path: Path, capsys, command: str) -> None:
    f = tmp_path / "big.json"
    f.write_text(json.dumps(DOC).replace('"memory": 80', '"memory": ' + "7" * 5000))
    rc, _, err = _exit(COMMANDS[command](f), capsys)
    assert rc == 2 and "5000 digits" in err


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_a_duplicate_key_is_refused_not_solved(tmp_path: Path, capsys, command: str) -> None:
    f = tmp_path / "dup.json"
    f.write_text(json.dumps(DOC).replace('"memory": 80', '"memory": 80, "memory": 1'))
    rc, _, err = _exit(COMMANDS[command](f), capsys)
    assert rc == 2 and "duplicate key 'memory'" in err


def test_bom_gz_and_null_get_their_own_messages(tmp_path: Path, capsys) -> None:
    cases = {
        "bom.json": (b"\xef\xbb\xbf" + json.dumps(DOC).encode(), "byte-order mark"),
        "x.json.gz": (b"plain text, not gzip", "named .gz but not gzip data"),
        "null.json": (b"null", "expected a JSON object (an instance), got null"),
    }
    for name, (data, message) in cases.items():
        f = tmp_path / name
        f.write_bytes(data)
        rc, _, err = _exit(["solve", str(f)], capsys)
        assert rc == 2 and message in " ".join(err.split()), (name, err)
        assert "bid line before" not in err


def test_dev_zero_and_a_gzip_bomb_exit_2_within_the_limits(tmp_path: Path, capsys, monkeypatch) -> None:
    monkeypatch.setenv("GENSOLVER_MAX_FILE_BYTES", str(1 << 20))
    rc, _, err = _exit(["solve", "/dev/zero"], capsys)
    assert rc == 2 and "over the limit" in err
    monkeypatch.setenv("GENSOLVER_MAX_INFLATED_BYTES", str(1 << 20))
    bomb = tmp_path / "bomb.json.gz"
    bomb.write_bytes(gzip.compress(b" " * (8 << 20)))
    rc, _, err = _exit(["solve", str(bomb)], capsys)
    assert rc == 2 and "inflates to more than the limit" in err


def test_a_cats_header_with_huge_counts_exits_2(tmp_path: Path, capsys) -> None:
    f = tmp_path / "huge.txt"
    f.write_text("goods 99999999999\nbids 1\n0 1.0 0 #\n")
    rc, _, err = _exit(["solve", str(f)], capsys)
    assert rc == 2 and "over the limit" in err
    f.write_text("goods 2\ngoods 3\nbids 1\n0 1.0 0 #\n")
    rc, _, err = _exit(["solve", str(f)], capsys)
    assert rc == 2 and "'goods' header repeated" in err


GENTASK = """apiVersion: scheduling.gen.io/v1alpha1
kind: GenTask
metadata: {name: t0}
spec:
  genResources:
    gpuMemory: {preferred: 8Gi}
    computeTime: {duration: 2m}
"""


def test_simulate_refuses_a_yaml_alias_bomb_and_duplicate_keys(tmp_path: Path, capsys) -> None:
    ok = tmp_path / "ok.yaml"
    ok.write_text(GENTASK)
    rc, _, err = _exit(["simulate", str(ok), "--policy", "fcfs-packing"], capsys)
    assert rc == 0, err
    levels = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    levels += [f"a{k}: &a{k} [" + ", ".join([f"*a{k - 1}"] * 10) + "]" for k in range(1, 9)]
    bomb = tmp_path / "bomb.yaml"
    bomb.write_text(GENTASK.replace("kind: GenTask", "kind: GenTask\n" + "\n".join(levels)))
    rc, _, err = _exit(["simulate", str(bomb), "--policy", "fcfs-packing"], capsys)
    assert rc == 2 and "aliases" in err
    dup = tmp_path / "dup.yaml"
    dup.write_text(GENTASK.replace("metadata: {name: t0}", "metadata: {name: t0}\nmetadata: {name: t1}"))
    rc, _, err = _exit(["simulate", str(dup), "--policy", "fcfs-packing"], capsys)
    assert rc == 2 and "duplicate key 'metadata'" in err


# ------------------------------------------------------------------ item 3: sums that overflow
OVERFLOW = {"schema": "gensolver.instance/v1",
            "slots": [{"id": "s", "capacity": {"m": 1}}, {"id": "t", "capacity": {"m": 1}}],
            "bids": [{"id": "a", "bidder": "A", "value": 1e308, "demand": {"s": {"m": 1}}},
                     {"id": "b", "bidder": "B", "value": 1e308, "demand": {"t": {"m": 1}}}]}


@pytest.mark.parametrize("argv", [["solve", "--method", "greedy"], ["solve", "--method", "lp", "--json"],
                                  ["solve", "--method", "auto", "--json"], ["verify", "--mechanism", "vcg"],
                                  ["plan", "--method", "greedy", "--output", "{d}/p.json"]])
def test_values_whose_sum_overflows_are_refused_naming_the_field(tmp_path: Path, capsys, argv) -> None:
    f = tmp_path / "ovf.json"
    f.write_text(json.dumps(OVERFLOW))
    rc, out, err = _exit([argv[0], str(f), *[a.format(d=tmp_path) for a in argv[1:]]], capsys)
    assert rc == 2 and "/bids: bid values overflow" in " ".join(err.split()), err
    assert "inf" not in out


def test_one_bidders_values_may_be_huge_when_only_one_can_win(tmp_path: Path, capsys) -> None:
    """XOR bids of one bidder never add up: 1e308 twice for bidder A is a valid instance."""
    doc = json.loads(json.dumps(OVERFLOW))
    doc["bids"][1]["bidder"] = "A"
    f = tmp_path / "xor.json"
    f.write_text(json.dumps(doc))
    rc, out, err = _exit(["solve", str(f), "--method", "greedy", "--json"], capsys)
    assert rc == 0, err
    assert json.loads(out)["welfare"] == 1e308


def test_demands_whose_sum_overflows_are_refused(tmp_path: Path, capsys) -> None:
    doc = {"schema": "gensolver.instance/v1", "slots": [{"id": "s", "capacity": {"m": 1e308}}],
           "bids": [{"id": f"b{k}", "bidder": f"B{k}", "value": 1, "demand": {"s": {"m": 1e308}}} for k in range(2)]}
    f = tmp_path / "dem.json"
    f.write_text(json.dumps(doc))
    rc, _, err = _exit(["solve", str(f), "--json"], capsys)
    assert rc == 2 and "/bids/1/demand/s/m" in err and "sum to more than the largest double" in " ".join(err.split())


def test_print_json_never_raises_on_a_non_finite_number(capsys) -> None:
    from gensolver.cli.common import print_json

    print_json({"welfare": float("inf"), "gap": float("nan"), "ok": 1.5})
    assert json.loads(capsys.readouterr().out) == {"welfare": None, "gap": None, "ok": 1.5}
