"""Readers and writers: JSON (plain, gzip), CATS text, truncation, atomic writes."""

from __future__ import annotations

import gzip
import json
import os
from pathlib import Path

import pytest
from hypothesis import given, settings

from gensolver import solve
from gensolver.model import (
    Bid,
    Instance,
    InstanceError,
    Slot,
    atomic_write,
    format_cats,
    from_dict,
    parse_cats,
    read_cats,
    read_instance,
    write_cats,
    write_instance,
)
from gensolver.solvers import Status
from gensolver.verify import brute_force, check_allocation
from tests.strategies import multi_resource_instances, single_unit_instances

SETTINGS = settings(max_examples=50, deadline=None, derandomize=True)


# ------------------------------------------------------------------ CATS round trip
@SETTINGS
@given(inst=single_unit_instances(max_goods=8, max_bidders=6))
def test_cats_round_trip_is_a_fixed_point(inst: Instance) -> None:
    text = format_cats(inst)
    read = parse_cats(text)
    assert format_cats(read) == text
    again = parse_cats(format_cats(read))
    assert again.to_dict() == read.to_dict()
    # Same auction up to renaming: bids by position, goods by position, same XOR partition.
    assert [b.value for b in read.bids] == [b.value for b in inst.bids]
    pos = inst.slot_index
    for orig, new in zip(inst.bids, read.bids):
        assert {f"g{pos[s]}" for s in orig.demand} == set(new.demand)
    groups = lambda i: sorted(sorted(inst.bid_index[b] for b in g) for g in i.bids_of_bidder.values())  # noqa: E731
    assert sorted(sorted(read.bid_index[b] for b in g) for g in read.bids_of_bidder.values()) == groups(inst)
    assert brute_force(read)[0] == pytest.approx(brute_force(inst)[0])


@SETTINGS
@given(inst=single_unit_instances(max_goods=6, max_bidders=4))
def test_cats_file_round_trip(tmp_path_factory, inst: Instance) -> None:
    folder = tmp_path_factory.mktemp("cats")
    canonical = parse_cats(format_cats(inst), name="round")
    for name in ("round.txt", "round.cats.gz"):
        path = write_cats(canonical, folder / name)
        assert read_cats(path).to_dict() == canonical.to_dict()
        assert read_instance(path).to_dict() == canonical.to_dict()


def test_format_cats_refuses_non_single_unit() -> None:
    inst = Instance((Slot("s", {"memory": 80.0}),), (Bid("a", "A", 1.0, {"s": {"memory": 8.0}}),))
    with pytest.raises(ValueError, match=r"slot 's' is not a single-unit good; CATS cannot express it"):
        format_cats(inst)
    inst = Instance((Slot("s", {"units": 1.0}),), (Bid("a", "A", 1.0, {"s": {"units": 0.5}}),))
    with pytest.raises(ValueError, match=r"bid 'a' demands \{'units': 0.5\} of 's'; CATS needs one unit"):
        format_cats(inst)


# One small hand-written text per classic CATS distribution shape (Leyton-Brown et al. 2000).
CATS_SHAPES = {
    # time slots as goods; one XOR set (dummy 8) of windows of length 2 ending by deadlines
    "scheduling": """% scheduling: 6 time slots, two jobs
goods 6
bids 7
dummy 2

0\t4.0\t0\t1\t6\t#
1\t4.0\t1\t2\t6\t#
2\t3.6\t2\t3\t6\t#
3\t5.1\t1\t2\t3\t7\t#
4\t4.8\t2\t3\t4\t7\t#
5\t4.4\t3\t4\t5\t7\t#
6\t2.5\t5\t#
""",
    # arbitrary: random bundles, substitutable XOR bids sharing a dummy good
    "arbitrary": """% arbitrary
goods 5
bids 6
dummy 2
0 120.5 0 2 4 5 #
1 80.25 2 5 #
2 95.0 1 3 6 #
3 60.0 3 6 #
4 70.0 0 1 #
5 33.3 4 #
""",
    # regions: goods on a 3x3 grid, bundles of adjacent cells
    "regions": """% regions 3x3 grid
goods 9
bids 6
dummy 2
0 31.0 0 1 3 9 #
1 24.0 1 2 9 #
2 40.0 4 5 7 8 10 #
3 22.5 6 7 10 #
4 18.0 3 4 #
5 12.0 8 #
""",
    # paths: goods are edges, a bidder XORs a few alternative paths between two cities
    "paths": """% paths
goods 7
bids 5
dummy 2
0 10.0 0 1 7 #
1 11.0 2 3 4 7 #
2 9.0 1 5 8 #
3 8.5 6 8 #
4 4.0 0 #
""",
    # matching: 4 airports x 2 times; a take-off and a landing slot per bid
    "matching": """% matching
goods 8
bids 6
dummy 3
0 5.0 0 5 8 #
1 4.5 1 6 8 #
2 4.8 0 6 9 #
3 4.1 2 7 9 #
4 3.9 1 4 10 #
5 3.0 3 4 10 #
""",
    # legacy (L2-style): single-minded bids on uniformly drawn goods, no dummy goods
    "legacy": """% legacy
goods 4
bids 5
0 3.0 0 1 #
1 2.0 1 2 #
2 2.5 2 3 #
3 1.5 0 #
4 4.5 0 1 2 3 #
""",
}


@pytest.mark.parametrize("shape", sorted(CATS_SHAPES))
@pytest.mark.parametrize("method", ["cpsat", "scip", "greedy", "auto"])
def test_cats_shapes_read_and_solve(shape: str, method: str) -> None:
    inst = parse_cats(CATS_SHAPES[shape], name=shape)
    assert inst.metadata["format"] == "cats"
    assert all(dict(s.capacity) == {"units": 1.0} for s in inst.slots)
    res = solve(inst, method=method)
    assert check_allocation(inst, res.winners, welfare=res.welfare).feasible
    opt, _ = brute_force(inst)
    assert res.welfare <= opt + 1e-9
    if method != "greedy":
        assert res.status is Status.OPTIMAL and res.welfare == pytest.approx(opt)
    # the text re-reads identically after one canonical rewrite
    assert parse_cats(format_cats(inst)).to_dict() == parse_cats(format_cats(parse_cats(format_cats(inst)))).to_dict()


def test_cats_dummy_goods_become_xor_bidders() -> None:
    inst = parse_cats(CATS_SHAPES["scheduling"])
    assert inst.bids_of_bidder == {"d0": ("b0", "b1", "b2"), "d1": ("b3", "b4", "b5"), "b6": ("b6",)}
    assert set(inst.bids[3].demand) == {"g1", "g2", "g3"}


# ------------------------------------------------------------------ CATS errors
@pytest.mark.parametrize(
    "text, pointer, message",
    [
        ("goods 3\nbids 1\n0 1.0 0 1\n", "/line/3", r"bid line must end with '#' \(truncated file\?\)"),
        ("goods 3\nbids 1\n0 1.0 0 5 #\n", "/line/3", r"good 5 out of range 0..2"),
        ("goods 3\nbids 1\ndummy 1\n0 1.0 0 4 #\n", "/line/4", r"good 4 out of range 0..3"),
        ("goods 3\nbids 1\n0 1.0 -1 #\n", "/line/3", r"good -1 out of range 0..2"),
        ("goods 3\nbids 1\n0 1.0 1 1 #\n", "/line/3", r"good 1 repeated"),
        ("goods 3\nbids 1\ndummy 2\n0 1.0 0 3 4 #\n", "/line/4", r"more than one dummy good"),
        ("goods 3\nbids 1\ndummy 1\n0 1.0 3 #\n", "/line/4", r"bid names no real good"),
        ("goods 3\nbids 1\n0 -1.0 0 #\n", "/line/3", r"price must be finite and non-negative, got -1.0"),
        ("goods 3\nbids 1\n0 nan 0 #\n", "/line/3", r"price must be finite and non-negative, got nan"),
        ("goods 3\nbids 1\n0 inf 0 #\n", "/line/3", r"price must be finite and non-negative, got inf"),
        ("goods 3\nbids 1\n0 x 0 #\n", "/line/3", r"not a number: could not convert string to float: 'x'"),
        ("goods 3\nbids 1\n0 1.0 a #\n", "/line/3", r"not a number: invalid literal for int\(\)"),
        ("goods 3\nbids 1\n0 1.0 #\n", "/line/3", r"expected '<index> <price> <good> ... #'"),
        ("goods 3\nbids 2\n0 1.0 0 #\n0 2.0 1 #\n", "/line/4", r"duplicate bid index 0"),
        ("0 1.0 0 #\ngoods 3\nbids 1\n", "/line/1", r"bid line before the 'goods N' and 'bids M' header"),
        ("goods 3\nbids 3\n0 1.0 0 #\n1 1.0 1 #\n", "/bids", r"header says 3 bids, file has 2 \(truncated file\?\)"),
        ("bids 1\n", "/goods", r"missing 'goods N' header"),
        ("goods 2\n", "/bids", r"missing 'bids M' header"),
        ("goods 0\nbids 0\n", "/goods", r"must be positive"),
        ("goods 2\nbids 0\n", "/bids", r"must not be empty"),
    ],
)
def test_cats_errors(text: str, pointer: str, message: str) -> None:
    with pytest.raises(InstanceError, match=rf"^{pointer}: {message}") as info:
        parse_cats(text)
    assert info.value.pointer == pointer


def test_truncated_cats_file(tmp_path: Path) -> None:
    text = CATS_SHAPES["arbitrary"]
    # cut inside the last bid line: the '#' is missing
    cut = tmp_path / "cut.txt"
    cut.write_text(text[: text.rindex("#")])
    with pytest.raises(InstanceError, match=r"^/line/\d+: bid line must end with '#' \(truncated file\?\)"):
        read_instance(cut)
    # cut after a whole line: fewer bids than the header says
    lines = text.splitlines(keepends=True)
    short = tmp_path / "short.txt"
    short.write_text("".join(lines[:-2]))
    with pytest.raises(InstanceError, match=r"^/bids: header says 6 bids, file has 4 \(truncated file\?\)"):
        read_instance(short)


# ------------------------------------------------------------------ JSON files
@SETTINGS
@given(inst=multi_resource_instances())
def test_json_write_read_round_trip(tmp_path_factory, inst: Instance) -> None:
    folder = tmp_path_factory.mktemp("json")
    for name in ("i.json", "i.json.gz", "deeper/i.gz"):
        path = write_instance(inst, folder / name)
        assert read_instance(path).to_dict() == inst.to_dict()
    assert gzip.decompress((folder / "i.json.gz").read_bytes()) == (folder / "i.json").read_bytes()


def test_write_instance_unknown_format(tmp_path: Path) -> None:
    inst = parse_cats(CATS_SHAPES["legacy"])
    with pytest.raises(ValueError, match=r"unknown format 'xml'; valid: 'json', 'cats'"):
        write_instance(inst, tmp_path / "x.xml", format="xml")
    assert not any(tmp_path.iterdir())


def _valid_json() -> str:
    return json.dumps(parse_cats(CATS_SHAPES["regions"], name="r").to_dict(), indent=1)


def test_truncated_json_file(tmp_path: Path) -> None:
    path = tmp_path / "t.json"
    text = _valid_json()
    path.write_text(text[: len(text) // 2])
    with pytest.raises(InstanceError, match=r"^/: t.json: invalid or truncated JSON at line \d+ column \d+"):
        read_instance(path)


def test_invalid_json_document_names_the_place(tmp_path: Path) -> None:
    path = tmp_path / "bad.json"
    doc = json.loads(_valid_json())
    doc["bids"][3]["demand"]["g6"]["units"] = "one"
    path.write_text(json.dumps(doc))
    with pytest.raises(InstanceError, match=r"^/bids/3/demand/g6/units: expected a number, got str 'one'"):
        read_instance(path)


def test_json_nan_literal_is_rejected(tmp_path: Path) -> None:
    path = tmp_path / "nan.json"
    path.write_text(_valid_json().replace('"value": 31.0', '"value": NaN'))
    with pytest.raises(InstanceError, match=r"^/bids/0/value: NaN is not allowed"):
        read_instance(path)


def test_truncated_gzip_file(tmp_path: Path) -> None:
    path = tmp_path / "t.json.gz"
    data = gzip.compress(_valid_json().encode())
    path.write_bytes(data[: len(data) - 12])
    with pytest.raises(InstanceError, match=r"^/: truncated or corrupt gzip file t.json.gz: "):
        read_instance(path)


def test_corrupt_gzip_file(tmp_path: Path) -> None:
    path = tmp_path / "c.gz"
    data = bytearray(gzip.compress(_valid_json().encode()))
    data[20:40] = b"\x00" * 20
    path.write_bytes(bytes(data))
    with pytest.raises(InstanceError, match=r"^/: truncated or corrupt gzip file c.gz: "):
        read_instance(path)


def test_missing_empty_directory_and_binary_files(tmp_path: Path) -> None:
    with pytest.raises(InstanceError, match=r"^/: no such file: .*nope.json$"):
        read_instance(tmp_path / "nope.json")
    with pytest.raises(InstanceError, match=r"^/: is a directory: "):
        read_instance(tmp_path)
    (tmp_path / "e.json").write_text("  \n")
    with pytest.raises(InstanceError, match=r"^/: e.json is empty$"):
        read_instance(tmp_path / "e.json")
    (tmp_path / "b.bin").write_bytes(b"\xff\xfe\x00\x01")
    with pytest.raises(InstanceError, match=r"^/: b.bin is not UTF-8 text"):
        read_instance(tmp_path / "b.bin")


def test_format_is_chosen_by_content_not_name(tmp_path: Path) -> None:
    json_named_txt = tmp_path / "really-json.txt"
    json_named_txt.write_text(_valid_json())
    assert read_instance(json_named_txt).name == "r"
    cats_named_json = tmp_path / "really-cats.json"
    cats_named_json.write_text(CATS_SHAPES["legacy"])
    assert read_instance(cats_named_json).n_bids == 5


# ------------------------------------------------------------------ atomic writes
def _leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.endswith(".tmp"))


def test_atomic_write_leaves_target_untouched_on_error(tmp_path: Path) -> None:
    target = tmp_path / "inst.json"
    target.write_text("old content")
    with pytest.raises(RuntimeError, match="boom"):
        with atomic_write(target, "w") as fh:
            fh.write("partial new cont")
            raise RuntimeError("boom")
    assert target.read_text() == "old content"
    assert _leftovers(tmp_path) == []


def test_failing_write_instance_keeps_old_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A disk error while syncing (simulated) leaves the previous file whole."""
    inst = parse_cats(CATS_SHAPES["paths"], name="p")
    target = tmp_path / "p.json"
    write_instance(inst, target)
    before = target.read_bytes()
    other = parse_cats(CATS_SHAPES["legacy"], name="l")

    def no_space(fd: int) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fsync", no_space)
    with pytest.raises(OSError, match="No space left on device"):
        write_instance(other, target)
    with pytest.raises(OSError, match="No space left on device"):
        write_cats(other, tmp_path / "new.txt")
    monkeypatch.undo()
    assert target.read_bytes() == before
    assert read_instance(target).to_dict() == inst.to_dict()
    assert not (tmp_path / "new.txt").exists()
    assert _leftovers(tmp_path) == []


def test_unwritable_cats_leaves_no_file(tmp_path: Path) -> None:
    inst = from_dict({"schema": "gensolver.instance/v1", "slots": [{"id": "s", "capacity": {"memory": 8}}],
                      "bids": [{"id": "a", "bidder": "A", "value": 1, "demand": {"s": {"memory": 1}}}]})
    with pytest.raises(ValueError, match="CATS cannot express it"):
        write_cats(inst, tmp_path / "x.txt")
    assert list(tmp_path.iterdir()) == []


def test_atomic_write_gives_the_mode_a_plain_open_would(tmp_path: Path) -> None:
    """The temporary file is created 0600; the result must not stay that private: a new file
    gets 0666 less the umask, an existing one keeps its own mode."""
    import os
    import stat

    mask = os.umask(0o027)
    try:
        target = tmp_path / "new.json"
        with atomic_write(target, "w") as fh:
            fh.write("{}")
        assert stat.S_IMODE(target.stat().st_mode) == 0o640
    finally:
        os.umask(mask)
    os.chmod(target, 0o604)
    with atomic_write(target, "w") as fh:
        fh.write("[]")
    assert stat.S_IMODE(target.stat().st_mode) == 0o604 and target.read_text() == "[]"


def test_cats_comments_may_carry_any_bytes(tmp_path: Path) -> None:
    """A CATS build's banner may be Latin-1; only bid and header lines must be UTF-8."""
    path = tmp_path / "latin.cats"
    path.write_bytes(b"%% generated by CATS \xe9t\xe9\ngoods 2\nbids 2\ndummy 0\n0\t1.5\t0\t#\n1\t2.5\t0\t1\t#\n")
    for inst in (read_instance(path), read_cats(path)):
        assert inst.n_bids == 2 and sorted(b.value for b in inst.bids) == [1.5, 2.5]
    bad = tmp_path / "bad.cats"
    bad.write_bytes(b"goods 2\nbids 1\n0\t1.\xe95\t0\t#\n")
    with pytest.raises(InstanceError, match="not UTF-8"):
        read_instance(bad)
