"""The README's pipeline with the command line alone: GenTask YAML -> ``round`` -> ``solve``
(and ``--mechanism vcg``) -> ``plan`` -> ``run`` / ``emit``, each step reading the file the
previous one wrote. Every step's answer is checked by an independent certificate
(:func:`check_allocation`, :func:`brute_force`, :func:`check_plan`), not by re-running it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from gensolver.executor import check_plan, read_plan
from gensolver.model import GpuRound
from gensolver.verify import brute_force, check_allocation

SCRIPT = Path(sys.executable).parent / "gensolver"
JOB = """apiVersion: scheduling.gen.io/v1alpha1
kind: GenTask
metadata:
  name: {name}
  labels:
    tenant: {tenant}
spec:
  containers:
    - name: main
      image: python:3.11
      command: ["true"]
  genResources:
    gpuMemory:
      preferred: {mem}Gi
      minRequired: {low}Gi
    computeTime:
      duration: 1m
    value: {value}
"""
JOBS = [("train", "a", 30, 20, 9), ("serve", "b", 24, 24, 7), ("sweep", "c", 20, 10, 4), ("eval", "c", 16, 8, 3)]


def cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    if not SCRIPT.exists():
        pytest.skip("the gensolver script is not installed beside this interpreter")
    res = subprocess.run([str(SCRIPT), *args], capture_output=True, text=True, timeout=300, cwd=cwd)
    assert "Traceback" not in res.stderr, res.stderr
    return res


def test_gentask_yaml_to_a_run_with_the_cli_alone(tmp_path: Path) -> None:
    (tmp_path / "jobs.yaml").write_text("---\n".join(JOB.format(name=n, tenant=t, mem=m, low=lo, value=v)
                                                     for n, t, m, lo, v in JOBS))
    shape = ["--gpus", "40,32", "--steps", "1", "--step-seconds", "60"]
    # 1. GenTask YAML -> round
    res = cli("round", "jobs.yaml", *shape, "-o", "round.json", cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    rnd = GpuRound.from_dict(json.loads((tmp_path / "round.json").read_text()))
    assert [t.id for t in rnd.tasks] == [j[0] for j in JOBS] and len(rnd.gpus) == 2
    instance = rnd.expand()
    optimum, _ = brute_force(instance)
    # 2. round -> solve, and the VCG mechanism
    res = cli("solve", "round.json", "--json", cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    doc = json.loads(res.stdout)
    assert check_allocation(instance, doc["winners"], welfare=doc["welfare"]).feasible
    assert doc["status"] == "optimal" and doc["welfare"] == pytest.approx(optimum)
    res = cli("solve", "round.json", "--mechanism", "vcg", "--json", cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout)["welfare"] == pytest.approx(optimum)
    # 3. round -> plan, and GenTask YAML -> the same plan directly
    res = cli("plan", "round.json", "-o", "plan.json", cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    plan = read_plan(tmp_path / "plan.json")
    assert check_plan(plan).ok
    won = {instance.bids[instance.bid_index[w]].bidder for w in doc["winners"]}
    assert {t.id for t in plan.tasks} == won and all(t.command == ("true",) for t in plan.tasks)
    res = cli("plan", "jobs.yaml", *shape, "-o", "direct.json", cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    assert read_plan(tmp_path / "direct.json").to_dict() == plan.to_dict()
    # 4. plan -> run (simulated devices; each window 3 s of wall time, each command exits at once)
    res = cli("run", "plan.json", "--backend", "sim", "--time-scale", "0.05", "--poll", "0.02", "--json",
              cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    outcomes = {t["task"]: t["outcome"] for t in json.loads(res.stdout)["tasks"]}
    assert outcomes == dict.fromkeys(won, "completed")
    # 5. plan -> emit (Slurm batch scripts)
    res = cli("emit", "slurm", "plan.json", "--out", "slurm", "--node", "n0", cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    scripts = sorted((tmp_path / "slurm").glob("*.sbatch"))
    assert sorted(s.name.split(".")[0] for s in scripts) == sorted(won)
    assert all(subprocess.run(["bash", "-n", str(s)]).returncode == 0 for s in [*scripts, tmp_path / "slurm" / "submit.sh"])


def test_a_bad_gentask_file_or_shape_names_what_is_wrong(tmp_path: Path) -> None:
    (tmp_path / "bad.yaml").write_text("kind: GenTask\nspec: [\n")
    res = cli("round", "bad.yaml", "-o", "r.json", cwd=tmp_path)
    assert res.returncode == 2 and "bad.yaml" in res.stderr and "YAML" in res.stderr, res.stderr
    (tmp_path / "ok.yaml").write_text(JOB.format(name="x", tenant="a", mem=8, low=8, value=1))
    for args, option in ((["--gpus", "80,zero"], "--gpus"), (["--steps", "0"], "--steps"),
                         (["--step-seconds", "-5"], "--step-seconds")):
        res = cli("plan", "ok.yaml", *args, "-o", "p.json", cwd=tmp_path)
        assert res.returncode == 2 and res.stderr.startswith(f"error: {option}"), (args, res.stderr)
    assert not (tmp_path / "r.json").exists() and not (tmp_path / "p.json").exists()
