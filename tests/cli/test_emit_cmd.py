"""``gensolver emit`` (:mod:`gensolver.cli.emit_cmd`): Slurm scripts and Kubernetes objects of a
plan, read back here (the scripts' ``#SBATCH`` lines, the YAML with the standard parser): one
job per run of the plan on the node asked for; the GenTask CRD a valid CRD; and bad options
exit 2 naming them, writing nothing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from gensolver.cli import main

GIB = 2**30
PLAN = {"schema": "gensolver.plan/v1", "time_unit": "s", "name": "two", "horizon": 100,
        "tasks": [{"id": "a", "command": ["python", "-c", "print(1)"]}, {"id": "b", "command": ["true"]}],
        "devices": [{"id": "gpu0", "memory": 80 * GIB, "compute": 1.0, "entries": [
            {"task": "a", "start": 0, "end": 50, "memory": 40 * GIB, "compute": 0.5},
            {"task": "b", "start": 0, "end": 30, "memory": 20 * GIB, "compute": 0.5},
            {"task": "b", "start": 60, "end": 90, "memory": 20 * GIB, "compute": 0.5}]}]}


@pytest.fixture
def plan(tmp_path) -> Path:
    path = tmp_path / "plan.json"
    path.write_text(json.dumps(PLAN))
    return path


def test_slurm_writes_one_script_per_run_on_the_node(tmp_path, plan, capsys) -> None:
    out = tmp_path / "slurm"
    assert main(["emit", "slurm", str(plan), "--out", str(out), "--node", "n7"]) == 0
    scripts = sorted(p for p in out.iterdir() if p.suffix == ".sbatch")
    assert [s.name for s in scripts] == ["a.0.sbatch", "b.0.sbatch", "b.1.sbatch"]  # b: two runs, a gap between
    for s in scripts:
        sbatch = [line for line in s.read_text().splitlines() if line.startswith("#SBATCH")]
        assert "#SBATCH --nodelist=n7" in sbatch, sbatch
        assert "#SBATCH --gres=shard:50" in sbatch  # half the GPU's compute, 100 shards a GPU
    assert (out / "submit.sh").exists() and json.loads((out / "jobs.json").read_text())


def test_k8s_objects_parse_and_name_each_run(tmp_path, plan) -> None:
    out = tmp_path / "objects.yaml"
    assert main(["emit", "k8s", str(plan), "--flavor", "nvidia", "--node", "n7", "--out", str(out)]) == 0
    jobs = [d for d in yaml.safe_load_all(out.read_text()) if d and d.get("kind") == "Job"]
    assert len(jobs) == 3
    for job in jobs:
        pod = job["spec"]["template"]["spec"]
        assert pod.get("nodeName") == "n7" or "n7" in json.dumps(pod.get("nodeSelector", {})) \
            or "n7" in json.dumps(pod.get("affinity", {}))


def test_the_crd_is_a_custom_resource_definition(tmp_path) -> None:
    out = tmp_path / "crd.yaml"
    assert main(["emit", "crd", "--out", str(out)]) == 0
    (crd,) = [d for d in yaml.safe_load_all(out.read_text()) if d]
    assert crd["kind"] == "CustomResourceDefinition" and crd["spec"]["names"]["kind"] == "GenTask"


@pytest.mark.parametrize(("args", "option"), [
    (["k8s", "--flavor", "hami", "--gpu-uuid", "gpu0"], "--gpu-uuid"),
    (["k8s", "--flavor", "hami", "--gpu-uuid", "gpu0=GPU-1", "--gpu-uuid", "gpu0=GPU-2"], "--gpu-uuid"),
    (["slurm", "--time-scale", "0"], "--time-scale"),
])
def test_bad_options_exit_2_naming_them(tmp_path, plan, capsys, args: list[str], option: str) -> None:
    out = tmp_path / "out"
    assert main(["emit", args[0], str(plan), "--node", "n7", "--out", str(out), *args[1:]]) == 2
    assert option in capsys.readouterr().err and not out.exists()
