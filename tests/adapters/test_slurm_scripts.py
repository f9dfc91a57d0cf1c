"""``gensolver emit slurm`` without a cluster: the scripts' directives against the plan (read back
by parsing the ``#SBATCH`` lines), a script run by bash with its command stopped at the run's
end, and bad input (exit 2, nothing written)."""

from __future__ import annotations

import json
import math
import os
import subprocess
import time
from pathlib import Path

import pytest

from gensolver.adapters.common import AdapterError
from gensolver.adapters.slurm import SlurmOptions, slurm_jobs, write_slurm
from gensolver.adapters.slurm_cluster import SlurmJournal
from gensolver.cli import main
from gensolver.executor import read_plan, write_plan
from tests.executor.helpers import plan_of


def directives(script: str) -> dict[str, str]:
    """``#SBATCH --key=value`` lines of a batch script."""
    out = {}
    for line in script.splitlines():
        if line.startswith("#SBATCH --"):
            key, _, value = line[len("#SBATCH --"):].partition("=")
            out[key] = value
    return out


def expected_gres(plan, run, shards: int) -> str:
    caps = {d.id: d.memory for d in plan.devices}
    fraction = max(max(c, m / caps[d]) for d, (m, c) in run.grants.items())
    if len(run.devices) > 1 or fraction >= 1 - 1e-9:
        return f"gpu:{len(run.devices)}"
    return f"shard:{max(1, math.ceil(fraction * shards - 1e-9))}"


def test_every_bundled_plan_gives_one_script_per_run_with_the_plans_placement(bundled_plans, tmp_path: Path) -> None:
    for name, path in bundled_plans.items():
        plan = read_plan(path)
        out = tmp_path / name
        assert main(["emit", "slurm", str(path), "--out", str(out), "--node", "cn01", "--time-scale", "0.5",
                     "--shards-per-gpu", "8"]) == 0
        index = json.loads((out / "jobs.json").read_text())
        runs = {f"{r.task}.{r.index}": r for t in plan.tasks for r in plan.runs(t.id)}
        assert sorted(j["key"] for j in index["jobs"]) == sorted(runs)
        assert sorted(p.name for p in out.iterdir()) == sorted([f"{k}.sbatch" for k in runs] + ["jobs.json", "submit.sh"])
        for key, run in runs.items():
            script = (out / f"{key}.sbatch").read_text()
            d = directives(script)
            want_nodes = sorted({dev.rpartition("/")[0] or "cn01" for dev in run.devices})
            assert d["nodelist"] == ",".join(want_nodes) and d["nodes"] == str(len(want_nodes))
            assert d["gres"] == expected_gres(plan, run, 8), key
            assert int(d["time"]) * 60 >= (run.end - run.start) * 0.5
            assert f"GENSOLVER_MEMORY_LIMIT={run.memory}" in script
            assert subprocess.run(["bash", "-n", str(out / f"{key}.sbatch")]).returncode == 0
        submit = (out / "submit.sh").read_text()
        assert subprocess.run(["bash", "-n", str(out / "submit.sh")]).returncode == 0
        # submitted in begin order: each run's sbatch line comes after those that begin earlier
        by_file = {j["script"]: j["key"] for j in index["jobs"]}
        order = [by_file[line.rsplit(" -- ", 1)[1].removesuffix(" \"$t0\")")] for line in submit.splitlines() if "(sbatch " in line]
        assert sorted(order) == sorted(runs)
        assert [runs[k].start for k in order] == sorted(runs[k].start for k in order)


def test_a_script_exports_the_grant_and_stops_its_command_at_the_runs_end(tmp_path: Path) -> None:
    marker = tmp_path / "env.json"
    child = ("import json, os, sys, time; "
             f"json.dump({{k: v for k, v in os.environ.items() if k.startswith(('CUDA_', 'GENSOLVER_'))}}, "
             f"open({str(marker)!r}, 'w')); time.sleep(30)")
    import sys

    plan = plan_of({"gpu0": 40}, {"a": {"at": [("gpu0", 0, 4)], "memory": 10, "compute": 0.25,
                                        "command": [sys.executable, "-c", child]}})
    (job,) = slurm_jobs(plan, SlurmOptions(default_node="cn01", time_scale=0.5, grace=1))
    assert job.gres == "shard:25" and job.end == 2.0
    script = tmp_path / job.file
    script.write_text(job.script)
    t0 = time.time()
    done = subprocess.run(["bash", str(script)], env=dict(os.environ, GENSOLVER_T0=repr(t0)), timeout=30,
                          capture_output=True, text=True)
    took = time.time() - t0
    # the command was stopped at the run's end: a planned stop, exit 0, said on stderr
    assert done.returncode == 0 and "stopped at its planned end" in done.stderr, done.stderr
    assert 1.5 <= took <= 6, took
    env = json.loads(marker.read_text())
    assert env["GENSOLVER_MEMORY_LIMIT"] == str(10 << 30)
    assert env["CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"] == "25"
    assert env["CUDA_MPS_PINNED_DEVICE_MEM_LIMIT"] == "0=10240M"
    assert float(env["GENSOLVER_RUN_END"]) == pytest.approx(t0 + 2.0, abs=1e-3)
    # without a t0 the script refuses to run (it cannot know when its window ends)
    bare = subprocess.run(["bash", str(script)], env={"PATH": os.environ["PATH"]}, capture_output=True, text=True,
                          timeout=30)
    assert bare.returncode != 0 and "GENSOLVER_T0" in bare.stderr


def test_a_preempted_task_becomes_runs_chained_by_dependencies(tmp_path: Path) -> None:
    plan = plan_of({"gpu0": 40, "gpu1": 40},
                   {"a": {"at": [("gpu0", 0, 2), ("gpu1", 3, 5)], "memory": 10, "compute": 1.0, "command": ["x"]}})
    jobs = slurm_jobs(plan, SlurmOptions(nodes={"gpu0": "n0", "gpu1": "n1"}, sharing="mps"))
    assert [(j.key, j.nodes, j.after, j.begin) for j in jobs] == [("a.0", ("n0",), None, 0.0),
                                                                  ("a.1", ("n1",), "a.0", 3.0)]
    assert "GENSOLVER_RESUME=1" in jobs[1].script
    half = plan_of({"gpu0": 40}, {"b": {"at": [("gpu0", 0, 1)], "memory": 4, "compute": 0.5}})
    assert slurm_jobs(half, SlurmOptions(default_node="n", sharing="mps"))[0].gres == "mps:50"
    assert slurm_jobs(half, SlurmOptions(default_node="n", sharing="gpu"))[0].gres == "gpu:1"
    assert "\nsleep \"$left\"\n" in slurm_jobs(half, SlurmOptions(default_node="n"))[0].script  # no command: hold the grant


def test_bad_input_exits_2_and_writes_nothing(tmp_path: Path, capsys, monkeypatch) -> None:
    plan = plan_of({"gpu0": 40}, {"a": {"at": [("gpu0", 0, 2)], "memory": 10}})
    path = tmp_path / "plan.json"
    write_plan(plan, path)
    cases = [(["--out", str(tmp_path / "o1")], "--node-map"),  # gpu0 has no node
             (["--out", str(tmp_path / "o2"), "--node", "n", "--node-map", "gpu7=n"], "--node-map"),
             (["--out", str(tmp_path / "o3"), "--node", "n", "--sharing", "mig"], "--sharing"),
             (["--out", str(tmp_path / "o4"), "--node", "n", "--shards-per-gpu", "0"], "--shards-per-gpu"),
             (["--out", str(tmp_path / "o5"), "--node", "n", "--time-scale", "0"], "--time-scale"),
             (["--out", str(tmp_path / "o6"), "--node", "n", "--node-map", "gpu0"], "--node-map")]
    for args, field in cases:
        assert main(["emit", "slurm", str(path), *args]) == 2, args
        assert field in capsys.readouterr().err, args
    assert sorted(p.name for p in tmp_path.iterdir()) == ["plan.json"]  # no folder, no temporary left
    # an existing folder with files is not overwritten
    keep = tmp_path / "keep"
    keep.mkdir()
    (keep / "mine.txt").write_text("mine")
    assert main(["emit", "slurm", str(path), "--out", str(keep), "--node", "n"]) == 2
    assert "--out" in capsys.readouterr().err and [p.name for p in keep.iterdir()] == ["mine.txt"]
    # an empty folder is filled
    empty = tmp_path / "empty"
    empty.mkdir()
    assert main(["emit", "slurm", str(path), "--out", str(empty), "--node", "n"]) == 0
    assert (empty / "a.0.sbatch").exists()
    # a write that fails at the last step (the rename) leaves nothing behind
    import gensolver.adapters.common as common

    def broken(src, dst):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(common.os, "replace", broken)
    with pytest.raises(OSError):
        write_slurm(plan, tmp_path / "x", SlurmOptions(default_node="n"))
    assert not (tmp_path / "x").exists() and not [p for p in tmp_path.iterdir() if p.name.startswith(".x.")]
    assert main(["emit", "slurm", str(path), "--out", str(tmp_path / "y"), "--node", "n"]) == 2
    assert "No space left" in capsys.readouterr().err and not (tmp_path / "y").exists()


def test_the_journal_refuses_other_files_and_keeps_records(tmp_path: Path) -> None:
    other = tmp_path / "exec.journal"
    other.write_text(json.dumps({"event": "plan", "digest": "x"}) + "\n")
    with pytest.raises(AdapterError, match="not a Slurm journal"):
        SlurmJournal(other)
    garbage = tmp_path / "garbage"
    garbage.write_text("not json\n")
    with pytest.raises(AdapterError, match="line 1 is not JSON"):
        SlurmJournal(garbage)
    path = tmp_path / "slurm.journal"
    book = SlurmJournal(path)
    book.append({"event": "plan", "backend": "slurm", "digest": "d", "t0": 1.0})
    book.append({"event": "submitted", "key": "a.0", "job": "17", "name": "gs-d-a.0"})
    assert SlurmJournal(path).jobs == {"a.0": "17"}


def test_run_backend_slurm_refuses_executor_only_options(tmp_path: Path, capsys) -> None:
    plan = plan_of({"gpu0": 40}, {"a": {"at": [("gpu0", 0, 2)], "memory": 10}})
    path = tmp_path / "plan.json"
    write_plan(plan, path)
    for args, field in ((["--feedback", str(tmp_path / "f.json")], "--feedback"), (["--over-grant", "terminate"],
                        "--over-grant"), (["--node-map", "gpu0"], "--node-map"), (["--mps"], "--mps"),
                        (["--sim-devices", "1:4G"], "--sim-devices")):
        assert main(["run", str(path), "--backend", "slurm", *args]) == 2, args
        assert field in capsys.readouterr().err, args


def test_run_backend_slurm_without_slurm_exits_3_and_refuses_a_foreign_journal(tmp_path: Path, capsys) -> None:
    import subprocess
    import sys

    plan = plan_of({"gpu0": 40}, {"a": {"at": [("gpu0", 0, 2)], "memory": 10}})
    path = tmp_path / "plan.json"
    write_plan(plan, path)
    run = "import sys; from gensolver.cli import main; sys.exit(main(sys.argv[1:]))"
    empty = tmp_path / "bin"
    empty.mkdir()  # a PATH without sinfo, sbatch, sacct
    out = subprocess.run([sys.executable, "-c", run, "run", str(path), "--backend", "slurm", "--node-map", "*=n1"],
                         capture_output=True, text=True, env=dict(os.environ, PATH=str(empty)), timeout=120)
    assert out.returncode == 3 and "sinfo is not installed" in out.stderr, out.stderr
    foreign = tmp_path / "exec.journal"
    foreign.write_text(json.dumps({"event": "plan", "digest": "x", "time_scale": 1.0}) + "\n")
    assert main(["run", str(path), "--backend", "slurm", "--node-map", "*=n1", "--journal", str(foreign)]) == 2
    assert "--journal" in capsys.readouterr().err


def test_cpus_and_mem_become_directives_and_bad_values_are_refused(tmp_path: Path, capsys) -> None:
    plan = plan_of({"gpu0": 40}, {"a": {"at": [("gpu0", 0, 2)], "memory": 10}})
    (job,) = slurm_jobs(plan, SlurmOptions(default_node="n", cpus=4, mem="16G"))
    d = directives(job.script)
    assert d["cpus-per-task"] == "4" and d["mem"] == "16G"
    assert "mem" not in directives(slurm_jobs(plan, SlurmOptions(default_node="n"))[0].script)
    path = tmp_path / "plan.json"
    write_plan(plan, path)
    for args, field in ((["--cpus", "0"], "--cpus"), (["--mem", "16GB"], "--mem"), (["--mem", "1G\nx"], "--mem")):
        assert main(["emit", "slurm", str(path), "--out", str(tmp_path / "o"), "--node", "n", *args]) == 2, args
        assert field in capsys.readouterr().err and not (tmp_path / "o").exists()


def test_node_map_star_is_the_default_node_for_emit_too(tmp_path: Path, capsys) -> None:
    plan = plan_of({"gpu0": 40, "rack-2/g0": 40}, {"a": {"at": [("gpu0", 0, 2)], "memory": 10},
                                                   "b": {"at": [("rack-2/g0", 0, 2)], "memory": 10}})
    path = tmp_path / "plan.json"
    write_plan(plan, path)
    assert main(["emit", "slurm", str(path), "--out", str(tmp_path / "o"), "--node-map", "*=cn7"]) == 0
    nodes = {j["key"]: j["nodes"] for j in json.loads((tmp_path / "o" / "jobs.json").read_text())["jobs"]}
    assert nodes == {"a.0": ["cn7"], "b.0": ["rack-2"]}  # a NODE/DEVICE id keeps its node (as documented)
    for args in (["--node-map", "*=cn7", "--node", "cn8"], ["--node-map", "*=cn7", "--node-map", "*=cn8"],
                 ["--node-map", "*=bad node"]):
        assert main(["emit", "slurm", str(path), "--out", str(tmp_path / "x"), *args]) == 2, args
        assert "--node-map" in capsys.readouterr().err and not (tmp_path / "x").exists()


def test_device_map_is_a_deprecated_alias_of_node_map_for_emit_and_slurm(tmp_path: Path, capsys) -> None:
    plan = plan_of({"gpu0": 40, "gpu1": 40}, {"a": {"at": [("gpu0", 0, 2)], "memory": 10},
                                             "b": {"at": [("gpu1", 0, 2)], "memory": 10}})
    path = tmp_path / "plan.json"
    write_plan(plan, path)
    for kind, extra in (("slurm", []), ("k8s", ["--flavor", "kueue"])):
        files = {}
        for option in ("--node-map", "--device-map"):
            out = tmp_path / f"{kind}{option}"
            assert main(["emit", kind, str(path), "--out", str(out), *extra, option, "gpu0=cn1", option, "*=cn2"]) == 0
            err = capsys.readouterr().err
            assert ("warning: --device-map is deprecated; use --node-map" in err) == (option == "--device-map"), err
            written = sorted(out.rglob("*")) if out.is_dir() else [out]
            files[option] = [(f.relative_to(out).as_posix() if out.is_dir() else "", f.read_bytes())
                             for f in written if f.is_file()]
        assert files["--node-map"] == files["--device-map"]  # the same items place the same runs
        text = b"".join(data for _, data in files["--node-map"])
        assert b"cn1" in text and b"cn2" in text
    # run --backend slurm: the old name warns, its items are read as --node-map's (a bad one names it)
    assert main(["run", str(path), "--backend", "slurm", "--device-map", "gpu0"]) == 2
    err = capsys.readouterr().err
    assert "--device-map with --backend slurm is deprecated; use --node-map" in err
    assert "error: --node-map expects PLAN_DEVICE=NODE" in err
    # the node map is slurm's: the executor refuses it, naming the option and the GPU map
    assert main(["run", str(path), "--backend", "sim", "--node-map", "*=n1"]) == 2
    assert "--node-map: only with --backend slurm" in capsys.readouterr().err


def test_a_two_node_gang_runs_its_command_with_srun_over_the_allocation(tmp_path: Path) -> None:
    """Script structure only: a real two-node Slurm is not available here (the test cluster has
    one node). A stand-in ``srun`` on PATH records its arguments and runs the command once per
    node rank, so the test sees that the command goes through srun over every node."""
    import sys

    marker = tmp_path / "ranks"
    child = [sys.executable, "-c", f"import os; open({str(marker)!r}, 'a').write(os.environ['FAKE_RANK'] + "
                                   f"' ' + os.environ['GENSOLVER_GANG_SIZE'] + '\\n')"]
    plan = plan_of({"n1/g0": 40, "n1/g1": 40, "n2/g0": 40, "n2/g1": 40},
                   {"gang": {"at": [("n1/g0", 0, 4), ("n1/g1", 0, 4), ("n2/g0", 0, 4), ("n2/g1", 0, 4)],
                             "memory": 40, "command": child},
                    "solo": {"at": [("n1/g0", 4, 6)], "memory": 40, "command": ["true"]}})
    jobs = {j.key: j for j in slurm_jobs(plan, SlurmOptions(time_scale=0.5, grace=1))}
    gang, solo = jobs["gang.0"], jobs["solo.0"]
    d = directives(gang.script)
    assert (d["nodes"], d["nodelist"], d["ntasks-per-node"], d["gres"]) == ("2", "n1,n2", "1", "gpu:2")
    assert "srun" not in solo.script and directives(solo.script)["nodes"] == "1"
    bindir = tmp_path / "bin"
    bindir.mkdir()
    log = tmp_path / "srun.args"
    (bindir / "srun").write_text(f"#!/bin/bash\nprintf '%s\\n' \"$*\" >> {str(log)!r}\n"
                                 "while [ \"$1\" != -- ]; do shift; done; shift\n"
                                 "for r in 0 1; do FAKE_RANK=$r \"$@\" || exit $?; done\n")
    (bindir / "srun").chmod(0o755)
    script = tmp_path / gang.file
    script.write_text(gang.script)
    assert subprocess.run(["bash", "-n", str(script)]).returncode == 0
    done = subprocess.run(["bash", str(script)], capture_output=True, text=True, timeout=30,
                          env=dict(os.environ, GENSOLVER_T0=repr(time.time()),
                                   PATH=f"{bindir}{os.pathsep}{os.environ['PATH']}"))
    assert done.returncode == 0, done.stderr
    assert log.read_text().split(" -- ")[0].split() == ["--nodes=2", "--ntasks-per-node=1", "--kill-on-bad-exit=1"]
    assert sorted(marker.read_text().split("\n")[:-1]) == ["0 2", "1 2"]


def test_mps_units_per_gpu_set_the_mps_gres(tmp_path: Path, capsys) -> None:
    plan = plan_of({"gpu0": 40}, {"a": {"at": [("gpu0", 0, 2)], "memory": 10, "compute": 0.25}})
    for units in (100, 8, 3):
        (job,) = slurm_jobs(plan, SlurmOptions(default_node="n", sharing="mps", mps_units=units))
        assert directives(job.script)["gres"] == f"mps:{math.ceil(0.25 * units)}"
    path = tmp_path / "plan.json"
    write_plan(plan, path)
    assert main(["emit", "slurm", str(path), "--out", str(tmp_path / "o"), "--node", "n", "--sharing", "mps",
                 "--mps-units", "8"]) == 0
    assert directives((tmp_path / "o" / "a.0.sbatch").read_text())["gres"] == "mps:2"
    assert main(["emit", "slurm", str(path), "--out", str(tmp_path / "x"), "--node", "n", "--mps-units", "0"]) == 2
    assert "--mps-units" in capsys.readouterr().err and not (tmp_path / "x").exists()


def test_a_tenant_map_gives_account_qos_and_partition(tmp_path: Path, capsys) -> None:
    from gensolver.executor import plan_from_dict

    doc = plan_of({"gpu0": 40, "gpu1": 40}, {"a": {"at": [("gpu0", 0, 2)], "memory": 40},
                                             "b": {"at": [("gpu1", 0, 2)], "memory": 40}}).to_dict()
    for task, tenant in zip(doc["tasks"], ("team-a", "team-b")):
        task["tenant"] = tenant
    path = tmp_path / "plan.json"
    write_plan(plan_from_dict(doc), path)
    (tmp_path / "tenants.yaml").write_text("team-a: {account: ml, qos: high, partition: gpu-a}\n")
    assert main(["emit", "slurm", str(path), "--out", str(tmp_path / "o"), "--node", "n", "--partition", "main",
                 "--tenant-map", str(tmp_path / "tenants.yaml")]) == 0
    a, b = (directives((tmp_path / "o" / f"{k}.0.sbatch").read_text()) for k in "ab")
    assert (a["account"], a["qos"], a["partition"]) == ("ml", "high", "gpu-a")
    assert "account" not in b and "qos" not in b and b["partition"] == "main"  # team-b is not in the map
    assert subprocess.run(["bash", "-n", str(tmp_path / "o" / "a.0.sbatch")]).returncode == 0
    (tmp_path / "t.json").write_text(json.dumps({"team-a": {"account": "ml"}}))
    assert main(["emit", "slurm", str(path), "--out", str(tmp_path / "j"), "--node", "n",
                 "--tenant-map", str(tmp_path / "t.json")]) == 0
    for k, text in enumerate(("team-a: {account: 'ml\nx'}\n", "team-a: {acct: ml}\n", "[1, 2]\n", "a: [\n",
                              "team-a: {qos: '-x'}\n")):
        bad = tmp_path / f"bad{k}.yaml"
        bad.write_text(text)
        assert main(["emit", "slurm", str(path), "--out", str(tmp_path / "x"), "--node", "n",
                     "--tenant-map", str(bad)]) == 2, text
        assert "--tenant-map" in capsys.readouterr().err and not (tmp_path / "x").exists()
    assert main(["emit", "slurm", str(path), "--out", str(tmp_path / "x"), "--node", "n",
                 "--tenant-map", str(tmp_path / "missing.yaml")]) == 2


def test_run_takes_a_tenant_map_only_with_the_slurm_backend(tmp_path: Path, capsys) -> None:
    plan = plan_of({"gpu0": 40}, {"a": {"at": [("gpu0", 0, 2)], "memory": 10}})
    path = tmp_path / "plan.json"
    write_plan(plan, path)
    bad = tmp_path / "bad.yaml"
    bad.write_text("team-a: {account: 'a b'}\n")
    assert main(["run", str(path), "--backend", "slurm", "--node-map", "*=n1", "--tenant-map", str(bad),
                 "--journal", str(tmp_path / "j")]) == 2
    assert "--tenant-map" in capsys.readouterr().err and not (tmp_path / "j").exists()
    good = tmp_path / "good.yaml"
    good.write_text("team-a: {account: ml}\n")
    assert main(["run", str(path), "--tenant-map", str(good)]) == 2
    assert "--tenant-map" in capsys.readouterr().err


def test_node_gres_reads_sinfos_counts_and_a_plan_that_does_not_fit_is_refused(monkeypatch) -> None:
    """``sinfo``'s %G, typed and with socket bindings, is summed per resource; a run asking a
    node for more GPUs or shards than it has, or a resource it lacks, is refused by name."""
    from gensolver.adapters import slurm_cluster as slurm

    printed = ("a|gpu:a100:4(S:0-1),gpu:v100:2(S:0,1),shard:600\nb|(null)\na|gpu:a100:4(S:0-1),gpu:v100:2(S:0,1),"
               "shard:600\n\nc|gpu:2\n")
    monkeypatch.setattr(slurm, "_call", lambda argv, **kw: printed if argv[0] == "sinfo" else "")
    assert slurm.node_gres() == {"a": {"gpu": 6, "shard": 600}, "b": {}, "c": {"gpu": 2}}
    assert slurm.known_nodes() == {"a", "b", "c"}
    plan = plan_of({f"g{k}": 40 for k in range(3)},
                   {"wide": {"at": [(f"g{k}", 0, 2) for k in range(3)], "memory": 40},
                    "half": {"at": [("g0", 2, 4)], "memory": 10, "compute": 0.5}})
    fits = slurm_jobs(plan, SlurmOptions(default_node="a"))
    slurm._check_fits(fits, slurm.node_gres())  # 3 GPUs and 50 shards on a: fits
    for node, needs in (("c", "--gres=gpu:3 on node c, which has 2 gpu"), ("b", "--gres=gpu:3 on node b, which has 0")):
        with pytest.raises(AdapterError, match=needs):
            slurm._check_fits(slurm_jobs(plan, SlurmOptions(default_node=node)), slurm.node_gres())
    # the gang fits (2 GPUs a node on a and c); the half-GPU run asks c for shards it has not
    split = slurm_jobs(plan, SlurmOptions(nodes={"g0": "c", "g1": "a", "g2": "a"}))
    assert [(j.key, j.nodes, j.gres) for j in split] == [("wide.0", ("a", "c"), "gpu:2"), ("half.0", ("c",), "shard:50")]
    with pytest.raises(AdapterError, match=r"run half\.0 needs --gres=shard:50 on node c, which has 0 shard"):
        slurm._check_fits(split, slurm.node_gres())
    with pytest.raises(AdapterError, match="run wide.0 would go to node.*d"):
        slurm._check_fits(slurm_jobs(plan, SlurmOptions(default_node="d")), slurm.node_gres())


def test_the_live_cluster_names_are_still_importable_from_the_scripts_module() -> None:
    from gensolver.adapters import slurm, slurm_cluster
    from gensolver.adapters.slurm import submit_plan

    assert submit_plan is slurm_cluster.submit_plan
    for name in slurm_cluster.__all__:
        assert getattr(slurm, name) is getattr(slurm_cluster, name)
    with pytest.raises(AttributeError, match="no_such_name"):
        slurm.no_such_name  # noqa: B018
