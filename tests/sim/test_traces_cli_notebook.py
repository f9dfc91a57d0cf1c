"""Trace replay, the CLI and the notebook (traces read from ../shared; skipped when absent)."""

from __future__ import annotations

from pathlib import Path

import pytest

from gensolver.cli import main
from gensolver.sim import audit_log, simulate
from gensolver.sim.trace_workloads import alibaba_workload, philly_workload

ROOT = Path(__file__).resolve().parents[2]


def test_alibaba_and_philly_windows_replay(shared_dir):
    w = alibaba_workload(shared_dir / "traces" / "alibaba-gpu-2023", max_jobs=60, nodes=2, compress=8.0)
    assert len(w.tasks) == 60 and w.gpus and all(0 < t.compute <= 1 for t in w.tasks)
    r = simulate(w, policy="elastic")
    audit_log(r.events, require_complete=True).raise_if_failed()
    p = philly_workload(shared_dir / "traces" / "philly" / "philly.csv", max_jobs=40, nodes=2)
    assert len(p.tasks) == 40 and all(t.gpus <= 8 and t.compute == 1.0 for t in p.tasks)
    r = simulate(p, policy="fcfs-whole-gpu")
    audit_log(r.events, require_complete=True).raise_if_failed()


def test_bad_trace_names_the_line(tmp_path):
    from gensolver.traces import TraceError

    bad = tmp_path / "philly.csv"
    bad.write_text("timestamp,duration,num_gpus,gpu_time,cluster\n2017-10-09 07:01:55,66.0,1,66.0,a\n"
                   "2017-10-09 07:01:56,abc,1,66.0,a\n")
    with pytest.raises(TraceError, match=r"philly.csv:3"):
        philly_workload(bad)


def test_cli_compares_policies_and_writes_plots(tmp_path, capsys):
    rc = main(["simulate", "synthetic:n=12,seed=1,rate=1", "--policy", "fcfs-packing", "--policy", "market",
               "--fault", "node:node0@3-9", "--out", str(tmp_path)])
    assert rc == 0
    out = capsys.readouterr().out
    assert "fcfs-packing" in out and "market" in out
    for name in ("gantt-market.png", "utilisation.png", "jct_cdf.png", "credits.png", "results.json"):
        assert (tmp_path / name).stat().st_size > 0


def test_cli_gentask_yaml_and_bad_input(tmp_path, capsys, shared_dir):
    rc = main(["simulate", str(shared_dir / "examples" / "gentask.yaml"), "--policy", "elastic", "--json"])
    assert rc == 0 and "elastic" in capsys.readouterr().out
    bad = tmp_path / "bad.yaml"
    bad.write_text("apiVersion: scheduling.gen.io/v1alpha1\nkind: GenTask\nmetadata: {name: a}\n"
                   "spec:\n  genResources:\n    gpuMemory: {preferred: 30Gx}\n")
    assert main(["simulate", str(bad)]) == 2
    assert "spec.genResources.gpuMemory.preferred: bad quantity '30Gx'" in capsys.readouterr().err
    assert main(["simulate", "synthetic:n=3", "--policy", "lottery"]) == 2
    assert "valid policies" in capsys.readouterr().err
    assert main(["simulate", "synthetic:n=3", "--fault", "gpu:x"]) == 2
    assert main(["simulate", "nonsense-trace"]) == 2
