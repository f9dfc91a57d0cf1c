"""Bundled suites: manifests are consistent and regenerating from the seeds reproduces checksums."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from gensolver.bench import digest, instance_bytes, list_suites, load_entry, load_suite, materialize
from gensolver.bench.suites import SuiteError
from gensolver.instances import generate, list_families
from gensolver.verify import check_allocation

ROOT = Path(__file__).resolve().parents[2]
NEEDS_TRACES = {f.name for f in list_families() if f.needs_traces}
SHARED = ROOT.parent / "shared"


def _regenerate_and_compare(name: str) -> None:
    suite = load_suite(name)
    assert suite.entries
    for e in suite.entries:
        if e.family in NEEDS_TRACES and not SHARED.is_dir():
            continue
        payload = instance_bytes(generate(e.family, seed=e.seed, **dict(e.params)))
        assert digest(payload) == e.sha256, e.name
        path = suite.path_of(e)
        if path.exists():  # the committed (or materialized) file holds exactly that text
            assert digest(gzip.decompress(path.read_bytes())) == e.sha256


@pytest.mark.parametrize("name", ["smoke", "small", "medium"])
def test_suites_reproduce_from_seeds(name: str) -> None:
    _regenerate_and_compare(name)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["large"])
def test_large_suite_reproduces_from_seeds(name: str) -> None:
    _regenerate_and_compare(name)


def test_manifests_are_complete_and_best_known_is_feasible_claim() -> None:
    assert {"smoke", "small", "medium", "large"} <= set(list_suites())
    smoke = load_suite("smoke")
    assert 6 <= len(smoke.entries) <= 10
    assert len({e.family for e in smoke.entries}) >= 5
    total = 0
    for name in ("smoke", "small"):
        s = load_suite(name)
        for e in s.entries:
            total += s.path_of(e).stat().st_size
            inst = load_entry(s, e)
            assert {"slots": inst.n_slots, "bids": inst.n_bids, "bidders": inst.n_bidders} == dict(e.size)
            assert e.best_known and e.best_known["method"] and e.best_known["seconds"] >= 0
            assert e.bound_value is None or e.bound_value >= e.best_welfare - 1e-6 * max(1.0, e.best_welfare)
    assert total < 400_000  # keep the repository small
    for name in ("medium", "large"):
        s = load_suite(name)
        assert not s.committed and all(e.sha256 and e.best_known for e in s.entries)


def test_materialize_and_corrupt_files(smoke_copy: Path) -> None:
    suite = load_suite(smoke_copy)
    victim = suite.entries[0]
    suite.path_of(victim).unlink()
    if victim.family in NEEDS_TRACES and not SHARED.is_dir():
        pytest.skip("needs ../shared")
    status = materialize(suite)
    assert status[victim.name] == "generated" and list(status.values()).count("present") == len(suite.entries) - 1
    inst = load_entry(suite, victim)
    assert check_allocation(inst, ()).feasible
    # a file whose content changed fails its checksum
    path = suite.path_of(victim)
    data = bytearray(gzip.decompress(path.read_bytes()))
    data[-3] = ord("9") if data[-3] != ord("9") else ord("8")
    path.write_bytes(gzip.compress(bytes(data)))
    with pytest.raises(Exception, match="checksum mismatch"):
        load_entry(suite, victim)


def test_unknown_suite_lists_valid_ones(tmp_path: Path) -> None:
    with pytest.raises(SuiteError, match="valid: .*smoke"):
        load_suite("no-such-suite")
    bad = tmp_path / "manifest.json"
    bad.write_text('{"schema": "gensolver.suite/v1", "instances": [{"name": "a"}]}')
    with pytest.raises(SuiteError, match="/instances/0"):
        load_suite(bad)


def test_a_read_only_suite_folder_materializes_into_the_cache(smoke_copy: Path, tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """An installed package may be read-only: generated files then go to $GENSOLVER_CACHE."""
    import os

    import gensolver.bench.suites as suites_mod

    suite = load_suite(smoke_copy)
    victim = suite.entries[0]
    (smoke_copy / victim.file).unlink()
    real_access = os.access
    monkeypatch.setattr(suites_mod.os, "access",
                        lambda p, mode: False if Path(p) == smoke_copy else real_access(p, mode))
    monkeypatch.setenv("GENSOLVER_CACHE", str(tmp_path / "cache"))
    cached = tmp_path / "cache" / "suites" / suite.name / victim.file
    assert suite.path_of(victim) == cached
    assert suite.path_of(suite.entries[1]) == smoke_copy / suite.entries[1].file  # present files stay put
    status = materialize(suite)
    assert status[victim.name] == "generated" and cached.is_file()
    assert not (smoke_copy / victim.file).exists()
    # the cached file is the manifest's instance, checked by its sha256
    assert digest(instance_bytes(load_entry(suite, victim))) == victim.sha256
