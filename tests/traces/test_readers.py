"""Trace readers on the real files in ../shared/traces and on malformed CSVs."""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import pytest

from gensolver.traces import (
    GPU_MODEL_MEMORY_GIB,
    TraceError,
    read_alibaba,
    read_alibaba_nodes,
    read_alibaba_pods,
    read_philly,
)


@pytest.fixture(scope="module")
def alibaba_dir(shared_dir: Path) -> Path:
    return shared_dir / "traces" / "alibaba-gpu-2023"


@pytest.fixture(scope="module")
def philly_path(shared_dir: Path) -> Path:
    return shared_dir / "traces" / "philly" / "philly.csv"


@pytest.fixture(scope="module")
def philly(philly_path: Path):
    return read_philly(philly_path, seed=3)


def _raw_rows(path: Path) -> list[dict[str, str]]:
    with open(path, newline="") as fh:
        return [r for r in csv.DictReader(fh) if any(v for v in r.values())]


def test_alibaba_counts_and_ranges(alibaba_dir: Path) -> None:
    raw = _raw_rows(alibaba_dir / "openb_pod_list_default.csv")
    trace = read_alibaba(alibaba_dir, seed=1)
    assert len(trace.nodes) == 1213
    assert trace.gpus == sum(int(r["gpu"]) for r in _raw_rows(alibaba_dir / "openb_node_list_gpu_node.csv"))
    n_gpu_pods = sum(1 for r in raw if int(r["num_gpu"]) > 0)
    assert len(trace.jobs) == n_gpu_pods
    all_pods = read_alibaba_pods(alibaba_dir / "openb_pod_list_default.csv", gpu_only=False)
    assert len(all_pods) == len(raw) == 8152
    jobs = trace.jobs
    assert all(0 < j.gpu_fraction <= 1 for j in jobs)
    assert sum(1 for j in jobs if j.num_gpus == 1 and j.gpu_fraction < 1) == 3078  # README figure
    assert {j.num_gpus for j in jobs} <= {1, 2, 4, 8}
    for j in jobs:
        cap = GPU_MODEL_MEMORY_GIB[j.gpu_model]
        assert j.memory_gib_preferred == pytest.approx(j.gpu_fraction * cap, abs=1e-3)
        assert 0 < j.memory_gib_min <= j.memory_gib_preferred
        assert j.memory_gib_min >= 0.5 * j.memory_gib_preferred - 0.125 - 1e-9
        assert j.duration_s >= 0
    arrivals = [j.arrival_s for j in jobs]
    assert arrivals == sorted(arrivals)
    # models are drawn in proportion to the cluster's GPUs: G2 holds ~71% of them
    share = np.mean([j.gpu_model == "G2" for j in jobs])
    assert 0.66 < share < 0.75


def test_alibaba_seed_and_scaling(alibaba_dir: Path) -> None:
    a = read_alibaba(alibaba_dir, seed=5)
    b = read_alibaba(alibaba_dir, seed=5)
    c = read_alibaba(alibaba_dir, seed=6)
    assert a == b
    assert a.jobs != c.jobs
    window = read_alibaba(alibaba_dir, seed=5, window=(1e6, 2e6), max_jobs=50)
    assert 0 < len(window.jobs) <= 50
    assert all(1e6 <= j.arrival_s < 2e6 for j in window.jobs)
    full = {j.id: j for j in a.jobs}
    assert all(full[j.id] == j for j in window.jobs)  # filters never change a kept job's draws
    sub = read_alibaba(alibaba_dir, seed=5, models=["T4"], nodes=10)
    assert len(sub.nodes) == 10 and {n.gpu_model for n in sub.nodes} == {"T4"}
    assert {j.gpu_model for j in sub.jobs} == {"T4"}
    ids = [n.id for n in sub.nodes[:3]]
    assert [n.id for n in read_alibaba_nodes(alibaba_dir / "openb_node_list_gpu_node.csv", nodes=ids)] == ids


def test_philly_counts_and_ranges(philly_path: Path, philly) -> None:
    raw = _raw_rows(philly_path)
    assert len(philly) == len(raw)
    assert min(j.arrival_s for j in philly) == 0.0
    assert sum(j.num_gpus for j in philly) == sum(int(r["num_gpus"]) for r in raw)
    assert all(j.gpu_fraction == 1.0 for j in philly)
    pref = np.array([j.memory_gib_preferred for j in philly])
    assert pref.min() >= 2.0 and pref.max() <= 80.0
    assert np.all(np.round(pref * 2) == pref * 2)
    single = np.median([j.memory_gib_preferred for j in philly if j.num_gpus == 1])
    big = np.median([j.memory_gib_preferred for j in philly if j.num_gpus >= 8])
    assert 7.0 <= single <= 9.0 and 14.0 <= big <= 18.0  # documented medians 8 and 16 GiB
    assert all(0 < j.memory_gib_min <= j.memory_gib_preferred for j in philly)
    # span: Aug-Dec 2017 per the trace README
    assert 90 * 86400 < max(j.arrival_s for j in philly) < 150 * 86400


def test_philly_scaling_and_seed(philly_path: Path, philly) -> None:
    pick = philly[len(philly) // 2]
    lo, hi = pick.arrival_s - 86400, pick.arrival_s + 86400
    sub = read_philly(philly_path, seed=3, window=(lo, hi), max_jobs=20, clusters=[pick.group])
    assert 0 < len(sub) <= 20
    assert all(lo <= j.arrival_s < hi and j.group == pick.group for j in sub)
    full = {j.id: j for j in philly}
    assert all(full[j.id] == j for j in sub)
    other = read_philly(philly_path, seed=4, max_jobs=100)
    assert [j.memory_gib_preferred for j in other] != [full[j.id].memory_gib_preferred for j in other]


def _write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


POD_HEADER = "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time\n"
GOOD_POD = "p0,1000,1024,1,500,,LS,Running,0,100,0\n"


@pytest.mark.parametrize(
    "bad_row, match",
    [
        ("p1,1000,1024,one,500,,LS,Running,0,100,0\n", "num_gpu.*not a number"),
        ("p1,1000,1024,1,1500,,LS,Running,0,100,0\n", "gpu_milli.*0..1000"),
        ("p1,1000,1024,1,500,,LS,Running,50,10,50\n", "deletion_time"),
        ("p1,1000,1024,1,500,,LS,Running,0,100\n", "expected 11 fields"),
        ("p1,1000,1024,1,500,H100X,LS,Running,0,100,0\n", "unknown GPU model"),
        ("p1,1000,1024,1,500,,LS,Running,,100,0\n", "creation_time.*empty"),
    ],
)
def test_alibaba_bad_rows_name_file_and_line(tmp_path: Path, bad_row: str, match: str) -> None:
    path = _write(tmp_path / "pods.csv", POD_HEADER + GOOD_POD + bad_row)
    with pytest.raises(TraceError, match=match) as info:
        read_alibaba_pods(path)
    assert info.value.line == 3
    assert str(path) in str(info.value) and f"{path}:3" in str(info.value)


def test_bad_headers_and_missing_files(tmp_path: Path) -> None:
    with pytest.raises(TraceError, match="header lacks column.*gpu_milli"):
        read_alibaba_pods(_write(tmp_path / "p.csv", "name,cpu_milli\np0,1\n"))
    with pytest.raises(TraceError, match="empty file"):
        read_philly(_write(tmp_path / "e.csv", ""))
    with pytest.raises(TraceError, match="no such file"):
        read_philly(tmp_path / "absent.csv")
    with pytest.raises(TraceError, match=r"n.csv:2.*unknown GPU model 'X1'"):
        read_alibaba_nodes(_write(tmp_path / "n.csv", "sn,cpu_milli,memory_mib,gpu,model\nn0,1,1,2,X1\n"))
    with pytest.raises(TraceError, match=r"n2.csv:3.*duplicate node"):
        read_alibaba_nodes(_write(tmp_path / "n2.csv", "sn,cpu_milli,memory_mib,gpu,model\nn0,1,1,2,T4\nn0,1,1,2,T4\n"))


@pytest.mark.parametrize(
    "bad_row, match",
    [
        ("2017-13-01 00:00:00,10.0,1,10.0,c\n", "timestamp"),
        ("2017-10-01 00:00:00,-5,1,10.0,c\n", "duration.*>= 0"),
        ("2017-10-01 00:00:00,5,0,10.0,c\n", "num_gpus.*>= 1"),
        ("2017-10-01 00:00:00,5,1.5,10.0,c\n", "num_gpus.*not an integer"),
        ("2017-10-01 00:00:00,nan,1,10.0,c\n", "duration.*not finite"),
    ],
)
def test_philly_bad_rows(tmp_path: Path, bad_row: str, match: str) -> None:
    header = "timestamp,duration,num_gpus,gpu_time,cluster\n2017-10-01 00:00:00,10.0,1,10.0,c\n\n"
    path = _write(tmp_path / "philly.csv", header + bad_row)
    with pytest.raises(TraceError, match=match) as info:
        read_philly(path)
    assert info.value.line == 4  # a blank line is skipped but still counted


def test_bad_options(tmp_path: Path) -> None:
    path = _write(tmp_path / "pods.csv", POD_HEADER + GOOD_POD)
    with pytest.raises(ValueError, match="window"):
        read_alibaba_pods(path, window=(10, 0))
    with pytest.raises(ValueError, match="max_jobs"):
        read_alibaba_pods(path, max_jobs=-1)
    with pytest.raises(ValueError, match="model_gpus"):
        read_alibaba_pods(path, model_gpus={"H100X": 1})
    (job,) = read_alibaba_pods(path, model_gpus={"V100M32": 1})
    assert job.memory_gib_preferred == 16.0 and job.gpu_model == "V100M32"


def test_a_byte_order_mark_is_not_part_of_the_header(tmp_path: Path) -> None:
    """Spreadsheet exports start with a UTF-8 BOM; it used to glue itself to the first column
    ("header lacks column(s) timestamp"). The rows must read exactly as without it."""
    text = "timestamp,duration,num_gpus,gpu_time,cluster\n2017-10-01 00:00:00,10.0,1,10.0,c\n"
    plain = read_philly(_write(tmp_path / "plain.csv", text))
    bom = tmp_path / "bom.csv"
    bom.write_bytes(b"\xef\xbb\xbf" + text.encode())
    assert read_philly(bom) == plain
