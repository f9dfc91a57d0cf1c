"""Hostile and malformed input files: deep nesting, huge numbers, bombs, duplicates, sniffing.

Each case is what an outside audit met (issue 20, items 2, 4, 5, 6): the reader must answer with
an :class:`InstanceError` naming the problem, within bounded memory, never another exception.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from gensolver.model import InstanceError, read_instance
from gensolver.model.inputs import ReadError, decompress_limited, loads_json, loads_yaml_all, read_limited

GOOD = {"schema": "gensolver.instance/v1",
        "slots": [{"id": "s", "capacity": {"memory": 80}}],
        "bids": [{"id": "a", "bidder": "A", "value": 5, "demand": {"s": {"memory": 30}}}]}


def _write(tmp_path: Path, name: str, data: bytes | str) -> Path:
    p = tmp_path / name
    p.write_bytes(data.encode() if isinstance(data, str) else data)
    return p


def test_the_good_instance_reads(tmp_path: Path) -> None:  # the baseline the cases below spoil
    inst = read_instance(_write(tmp_path, "ok.json", json.dumps(GOOD)))
    assert inst.slots[0].capacity["memory"] == 80.0


# ------------------------------------------------------------------ item 2: depth and digits
@pytest.mark.parametrize("opener", ["[", '{"a":'])
def test_deep_nesting_is_an_instance_error(tmp_path: Path, opener: str) -> None:
    p = _write(tmp_path, "deep.json", opener * 100_000)
    with pytest.raises(InstanceError, match="nested too deeply"):
        read_instance(p)


def test_a_5000_digit_capacity_is_an_instance_error(tmp_path: Path) -> None:
    text = json.dumps(GOOD).replace('"memory": 80', '"memory": ' + "9" * 5000)
    with pytest.raises(InstanceError, match="integer with 5000 digits"):
        read_instance(_write(tmp_path, "big.json", text))


def test_a_300_digit_capacity_is_refused_as_out_of_range_not_a_traceback(tmp_path: Path) -> None:
    text = json.dumps(GOOD).replace('"memory": 80', '"memory": ' + "9" * 350)
    with pytest.raises(InstanceError, match=r"/slots/0/capacity/memory.*(too large|infinite)"):
        read_instance(_write(tmp_path, "big.json", text))


# ------------------------------------------------------------------ item 4: bounded sizes
def test_dev_zero_is_refused_within_the_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GENSOLVER_MAX_FILE_BYTES", str(1 << 20))
    with pytest.raises(InstanceError, match="over the limit of 1048576 bytes.*GENSOLVER_MAX_FILE_BYTES"):
        read_instance("/dev/zero")


def test_a_file_over_the_limit_is_refused_before_reading(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    p = _write(tmp_path, "ok.json", json.dumps(GOOD))
    monkeypatch.setenv("GENSOLVER_MAX_FILE_BYTES", "10")
    with pytest.raises(InstanceError, match=r"ok.json: file is \d+ bytes, over the limit of 10"):
        read_instance(p)
    monkeypatch.setenv("GENSOLVER_MAX_FILE_BYTES", "ten")
    with pytest.raises(InstanceError, match="GENSOLVER_MAX_FILE_BYTES must be a positive integer"):
        read_instance(p)


def test_a_gzip_bomb_is_refused_at_the_inflate_limit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    bomb = gzip.compress(b" " * (64 << 20), compresslevel=9)  # 64 MiB of spaces in ~64 KiB
    assert len(bomb) < 200_000
    monkeypatch.setenv("GENSOLVER_MAX_INFLATED_BYTES", str(4 << 20))
    with pytest.raises(InstanceError, match="inflates to more than the limit of 4194304 bytes"):
        read_instance(_write(tmp_path, "bomb.json.gz", bomb))
    with pytest.raises(ReadError, match="more than the limit of 100"):
        decompress_limited(gzip.compress(b"x" * 101), limit=100)
    assert decompress_limited(gzip.compress(b"x" * 100), limit=100) == b"x" * 100
    # several members, as gzip.decompress reads them
    assert decompress_limited(gzip.compress(b"ab") + gzip.compress(b"cd")) == b"abcd"


def test_a_cats_header_with_huge_counts_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    p = _write(tmp_path, "huge.txt", "goods 99999999999\nbids 1\n0 1.0 0 #\n")
    with pytest.raises(InstanceError, match="/goods.*99999999999.*over the limit of 1000000.*GENSOLVER_MAX_CATS_GOODS"):
        read_instance(p)
    p = _write(tmp_path, "dummy.txt", "goods 2\nbids 1\ndummy 99999999999\n0 1.0 0 #\n")
    with pytest.raises(InstanceError, match="/dummy.*over the limit"):
        read_instance(p)
    p = _write(tmp_path, "bids.txt", "goods 2\nbids " + "9" * 5000 + "\n0 1.0 0 #\n")
    with pytest.raises(InstanceError, match="/bids: a count of 5000 digits"):
        read_instance(p)
    monkeypatch.setenv("GENSOLVER_MAX_CATS_GOODS", "5")
    with pytest.raises(InstanceError, match="/goods.*over the limit of 5"):
        read_instance(_write(tmp_path, "six.txt", "goods 6\nbids 1\n0 1.0 0 #\n"))


def test_read_limited_reads_a_fifo_like_source_up_to_the_limit() -> None:
    with pytest.raises(ReadError, match="over the limit of 4096 bytes"):
        read_limited("/dev/zero", limit=4096)
    with pytest.raises(IsADirectoryError):
        read_limited("/")


# ------------------------------------------------------------------ item 5: duplicates
def test_a_duplicate_json_key_is_refused(tmp_path: Path) -> None:
    text = json.dumps(GOOD).replace('"memory": 80', '"memory": 80, "memory": 1')
    with pytest.raises(InstanceError, match="duplicate key 'memory'"):
        read_instance(_write(tmp_path, "dup.json", text))


def test_duplicate_cats_headers_are_refused(tmp_path: Path) -> None:
    p = _write(tmp_path, "dup.txt", "goods 2\ngoods 3\nbids 1\n0 1.0 0 #\n")
    with pytest.raises(InstanceError, match=r"/line/2.*'goods' header repeated \(first at line 1\)"):
        read_instance(p)


def test_yaml_loader_refuses_aliases_and_duplicate_keys() -> None:
    assert loads_yaml_all("a: 1\nb: [1, 2]\n") == [{"a": 1, "b": [1, 2]}]
    bomb = "a: &a [x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]\n"
    with pytest.raises(Exception, match=r"aliases \(\*a\) are not accepted"):
        loads_yaml_all(bomb)
    with pytest.raises(Exception, match="duplicate key 'a'"):
        loads_yaml_all("a: 1\na: 2\n")


def test_loads_json_names_a_bom_and_reads_nan_for_the_validator() -> None:
    assert loads_json('{"a": NaN}')["a"] != 0  # NaN: the validator names its place
    with pytest.raises(ReadError, match="byte-order mark"):
        loads_json('\ufeff{"a": 1}')


# ------------------------------------------------------------------ item 6: sniffing
def test_a_bom_json_file_is_named_as_such(tmp_path: Path) -> None:
    p = _write(tmp_path, "bom.json", b"\xef\xbb\xbf" + json.dumps(GOOD).encode())
    with pytest.raises(InstanceError, match="byte-order mark"):
        read_instance(p)


def test_a_gz_name_that_is_not_gzip_is_named_as_such(tmp_path: Path) -> None:
    p = _write(tmp_path, "x.json.gz", "this is not gzip\n")
    with pytest.raises(InstanceError, match=r"x.json.gz: named \.gz but not gzip data"):
        read_instance(p)


@pytest.mark.parametrize("body", ["null", "42", '"text"', "true", "[]"])
def test_a_json_scalar_or_list_is_not_an_instance(tmp_path: Path, body: str) -> None:
    p = _write(tmp_path, "scalar.json", body)
    with pytest.raises(InstanceError) as info:
        read_instance(p)
    assert "bid line before the header" not in str(info.value)
    assert "expected a JSON object" in str(info.value)


def test_a_json_name_holding_garbage_is_reported_as_json(tmp_path: Path) -> None:
    p = _write(tmp_path, "junk.json", "hello world\n")
    with pytest.raises(InstanceError, match="junk.json: invalid or truncated JSON"):
        read_instance(p)


@pytest.mark.parametrize("place", ['"value": 5', '"memory": 30'])
@pytest.mark.parametrize("sign", ["", "-"])
def test_an_integer_beyond_a_double_is_an_instance_error_at_its_place(tmp_path: Path, place: str, sign: str) -> None:
    doc = dict(GOOD)
    text = json.dumps(doc).replace(place, place.split(":")[0] + ": " + sign + "9" * 309)
    with pytest.raises(InstanceError, match="/bids/0/(value|demand/s/memory)"):
        read_instance(_write(tmp_path, "big.json", text))
