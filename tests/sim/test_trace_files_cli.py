"""``gensolver simulate PATH``: trace files by format, the sampled Alibaba lists refused, no CSV read as YAML."""

from __future__ import annotations

import json
import shutil

import pytest

from gensolver.cli import main

POD_HEADER = "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time\n"


def _alibaba(tmp_path, shared_dir, rows):
    d = tmp_path / "ali"
    d.mkdir()
    (d / "pods.csv").write_text(POD_HEADER + "".join(rows))
    shutil.copy(shared_dir / "traces" / "alibaba-gpu-2023" / "openb_node_list_gpu_node.csv", d / "nodes.csv")
    return d


def _rows(capsys):
    return json.loads(capsys.readouterr().out)


def test_an_alibaba_pod_list_from_the_cli(tmp_path, shared_dir, capsys):
    rows = [f"p{i},4000,8192,1,{200 + 100 * (i % 5)},,{'LS' if i % 2 else 'BE'},Succeeded,{100 + 60 * i},"
            f"{100 + 60 * i + 900 + 300 * (i % 3)},{100 + 60 * i}\n" for i in range(12)]
    d = _alibaba(tmp_path, shared_dir, rows)
    rc = main(["simulate", str(d / "pods.csv"), "--node-list", str(d / "nodes.csv"), "--nodes", "2",
               "--policy", "market", "--policy", "finish-time-fair", "--json"])
    assert rc in (0, None)
    out = _rows(capsys)
    assert [r["policy"] for r in out] == ["market", "finish-time-fair"] and all(r["done"] == "12/12" for r in out)


def test_the_bundled_pod_list_and_philly_by_path(shared_dir, capsys):
    ali = shared_dir / "traces" / "alibaba-gpu-2023" / "openb_pod_list_default.csv"
    assert main(["simulate", str(ali), "--max-jobs", "12", "--policy", "market", "--json"]) in (0, None)
    assert _rows(capsys)[0]["done"] == "12/12"
    philly = shared_dir / "traces" / "philly" / "philly.csv"
    assert main(["simulate", str(philly), "--max-jobs", "8", "--nodes", "2", "--policy", "fcfs-packing",
                 "--json"]) in (0, None)
    assert _rows(capsys)[0]["done"] == "8/8"


def test_sampled_alibaba_lists_are_refused_naming_the_missing_columns(tmp_path, capsys):
    f = tmp_path / "openb_pod_list_multigpu50.csv"
    f.write_text("name,cpu_milli,memory_mib,num_gpu,gpu_milli\nopenb-pod-0000,12000,16384,1,1000\n")
    assert main(["simulate", str(f), "--policy", "market"]) == 2
    err = capsys.readouterr().err
    assert "creation_time" in err and "deletion_time" in err and "Traceback" not in err


def test_a_csv_is_never_read_as_yaml(tmp_path, capsys):
    f = tmp_path / "jobs.csv"
    f.write_text("a,b,c\n1,2,3\n")
    assert main(["simulate", str(f), "--policy", "market"]) == 2
    err = capsys.readouterr().err
    assert "unknown CSV header" in err and "GenTask" not in err and "mapping" not in err
    assert main(["simulate", str(f), "--format", "gentask"]) == 2
    assert "unknown CSV header" in capsys.readouterr().err
    # an Alibaba CSV with --format gentask is refused, not parsed as YAML
    g = tmp_path / "pods.csv"
    g.write_text(POD_HEADER)
    assert main(["simulate", str(g), "--format", "gentask"]) == 2
    assert "not GenTask YAML" in capsys.readouterr().err


@pytest.mark.parametrize("argv, needle", [
    (["--format", "parquet"], "--format: must be one of"),
    (["--node-list", "nodes.csv"], "--node-list: applies only to"),
])
def test_bad_file_options_exit_2(tmp_path, capsys, argv, needle):
    assert main(["simulate", "synthetic:n=5", *argv]) == 2
    assert needle in capsys.readouterr().err


def test_missing_node_list_is_named(tmp_path, capsys):
    f = tmp_path / "pods.csv"
    f.write_text(POD_HEADER + "p0,4000,8192,1,500,,BE,Succeeded,100,900,100\n")
    assert main(["simulate", str(f), "--policy", "market"]) == 2
    assert "--node-list" in capsys.readouterr().err
    assert main(["simulate", str(tmp_path / "nope.csv")]) == 2
    assert "no such file" in capsys.readouterr().err
