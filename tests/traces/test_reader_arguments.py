"""Bad arguments and out-of-range trace values: clear errors naming the argument / file:line."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from gensolver.traces import TraceError, read_alibaba, read_alibaba_nodes, read_alibaba_pods, read_philly

PHILLY_HEAD = "timestamp,duration,num_gpus,gpu_time,cluster\n"
PHILLY_ROW = "2017-10-09 07:01:55,66.0,1,66.0,11cb48\n"
NODE_HEAD = "sn,cpu_milli,memory_mib,gpu,model\n"
POD_HEAD = ("name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,"
            "deletion_time,scheduled_time\n")
POD_ROW = "openb-pod-0000,12000,16384,1,1000,,LS,Running,0,100,0\n"


def _write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def _alibaba_dir(tmp_path: Path, node_gpu: str = "2", pod_gpu: str = "1") -> Path:
    d = tmp_path / "alibaba"
    d.mkdir()
    _write(d / "openb_node_list_gpu_node.csv", NODE_HEAD + f"n0,64000,262144,{node_gpu},P100\nn1,64000,262144,2,T4\n")
    _write(d / "openb_pod_list_default.csv", POD_HEAD + POD_ROW.replace(",1,1000,", f",{pod_gpu},1000,"))
    return d


# ---------------------------------------------------------------- 1. huge GPU counts
def test_philly_huge_num_gpus_is_a_trace_error(tmp_path: Path) -> None:
    p = _write(tmp_path / "p.csv", PHILLY_HEAD + PHILLY_ROW + "2017-10-09 07:01:55,66.0,1e20,66.0,x\n")
    with pytest.raises(TraceError, match=r"p\.csv:3: column 'num_gpus': must be <= 65536"):
        read_philly(p)


def test_alibaba_huge_node_gpu_and_pod_num_gpu_are_trace_errors(tmp_path: Path) -> None:
    d = _alibaba_dir(tmp_path, node_gpu="1e20")
    with pytest.raises(TraceError, match=r"openb_node_list_gpu_node\.csv:2: column 'gpu': must be <= 1024"):
        read_alibaba_nodes(d / "openb_node_list_gpu_node.csv")
    with pytest.raises(TraceError, match="column 'gpu'"):
        read_alibaba(d)
    (tmp_path / "b").mkdir()
    d2 = _alibaba_dir(tmp_path / "b", pod_gpu="1e20")
    with pytest.raises(TraceError, match=r"openb_pod_list_default\.csv:2: column 'num_gpu': must be <= 65536"):
        read_alibaba_pods(d2 / "openb_pod_list_default.csv")


def test_alibaba_pod_cpu_column_is_checked(tmp_path: Path) -> None:
    p = _write(tmp_path / "p.csv", POD_HEAD + POD_ROW.replace("12000", "inf"))
    with pytest.raises(TraceError, match=r"p\.csv:2: column 'cpu_milli'"):
        read_alibaba_pods(p)


def _cli(args: list[str], traces: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "GENSOLVER_TRACES": str(traces)}
    code = "import sys; from gensolver.cli import main; sys.exit(main(sys.argv[1:]))"
    # a subprocess with a timeout: the old reader made `simulate alibaba` hang on a huge node
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, env=env,
                          timeout=120)


def test_cli_huge_gpu_counts_exit_2_without_traceback(tmp_path: Path) -> None:
    (tmp_path / "philly").mkdir()
    _write(tmp_path / "philly" / "philly.csv", PHILLY_HEAD + "2017-10-09 07:01:55,66.0,1e20,66.0,x\n")
    d = tmp_path / "alibaba-gpu-2023"
    d.mkdir()
    _write(d / "openb_node_list_gpu_node.csv", NODE_HEAD + "n0,64000,262144,1e20,P100\n")
    _write(d / "openb_pod_list_default.csv", POD_HEAD + POD_ROW)
    for trace, col in (("philly", "num_gpus"), ("alibaba", "gpu")):
        r = _cli(["simulate", trace], tmp_path)
        assert r.returncode == 2, (trace, r.returncode, r.stderr[-2000:])
        assert "Traceback" not in r.stderr + r.stdout
        assert col in r.stderr + r.stdout


# ---------------------------------------------------------------- 2. bare strings for sequences
def test_bare_string_for_a_sequence_argument_is_rejected(tmp_path: Path) -> None:
    p = _write(tmp_path / "p.csv", PHILLY_HEAD + PHILLY_ROW)
    with pytest.raises(ValueError, match="clusters.*bare string"):
        read_philly(p, clusters="11cb48")
    assert len(read_philly(p, clusters=["11cb48"])) == 1
    d = _alibaba_dir(tmp_path)
    with pytest.raises(ValueError, match="models.*bare string"):
        read_alibaba_nodes(d / "openb_node_list_gpu_node.csv", models="P100")
    with pytest.raises(ValueError, match="models.*bare string"):
        read_alibaba(d, models="P100")
    assert [n.id for n in read_alibaba_nodes(d / "openb_node_list_gpu_node.csv", models=["P100"])] == ["n0"]


# ---------------------------------------------------------------- 3. argument checks
@pytest.mark.parametrize("seed", [None, "x", 1.5, -1, True])
def test_seed_must_be_a_non_negative_int(tmp_path: Path, seed: object) -> None:
    p = _write(tmp_path / "p.csv", PHILLY_HEAD + PHILLY_ROW)
    with pytest.raises(ValueError, match=r"seed must be an integer"):
        read_philly(p, seed=seed)  # type: ignore[arg-type]
    d = _alibaba_dir(tmp_path)
    with pytest.raises(ValueError, match=r"seed must be an integer"):
        read_alibaba(d, seed=seed)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"seed must be an integer"):
        read_alibaba_pods(d / "openb_pod_list_default.csv", seed=seed)  # type: ignore[arg-type]


def test_numpy_integer_seed_and_nodes_are_accepted(tmp_path: Path) -> None:
    p = _write(tmp_path / "p.csv", PHILLY_HEAD + PHILLY_ROW)
    assert read_philly(p, seed=np.int64(3)) == read_philly(p, seed=3)
    d = _alibaba_dir(tmp_path)
    assert [n.id for n in read_alibaba_nodes(d / "openb_node_list_gpu_node.csv", nodes=np.int64(1))] == ["n0"]
    assert len(read_alibaba(d, nodes=np.int64(2)).nodes) == 2


def test_gpu_only_must_be_a_bool(tmp_path: Path) -> None:
    d = _alibaba_dir(tmp_path)
    with pytest.raises(ValueError, match="gpu_only must be True or False"):
        read_alibaba_pods(d / "openb_pod_list_default.csv", gpu_only="no")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="gpu_only must be True or False"):
        read_alibaba(d, gpu_only="no")  # type: ignore[arg-type]


@pytest.mark.parametrize("kw,arg", [({"window": 5}, "window"), ({"window": ("a", "b")}, "window"),
                                    ({"window": (True, 5)}, "window"), ({"clusters": 5}, "clusters"),
                                    ({"clusters": [5]}, "clusters"), ({"max_jobs": 2.5}, "max_jobs")])
def test_philly_bad_options_name_the_argument(tmp_path: Path, kw: dict, arg: str) -> None:
    p = _write(tmp_path / "p.csv", PHILLY_HEAD + PHILLY_ROW)
    with pytest.raises(ValueError, match=arg):
        read_philly(p, **kw)


@pytest.mark.parametrize("nodes", [2.5, True, float("nan"), "n0", [1]])
def test_bad_nodes_name_the_argument(tmp_path: Path, nodes: object) -> None:
    d = _alibaba_dir(tmp_path)
    with pytest.raises(ValueError, match="nodes"):
        read_alibaba_nodes(d / "openb_node_list_gpu_node.csv", nodes=nodes)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="nodes"):
        read_alibaba(d, nodes=nodes)  # type: ignore[arg-type]


def test_path_must_be_a_path(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="path must be a path"):
        read_philly(None)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="directory must be a path"):
        read_alibaba(None)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="path must be a path"):
        read_alibaba_pods(5)  # type: ignore[arg-type]


def test_read_alibaba_on_a_file_is_a_trace_error(tmp_path: Path) -> None:
    f = _write(tmp_path / "file.csv", PHILLY_HEAD)
    with pytest.raises(TraceError, match=r"file\.csv: not a directory"):
        read_alibaba(f)


def test_repeated_header_column_is_rejected(tmp_path: Path) -> None:
    p = _write(tmp_path / "p.csv", "timestamp,duration,num_gpus,gpu_time,cluster,cluster\n"
               "2017-10-09 07:01:55,66.0,1,66.0,11cb48,zz\n")
    with pytest.raises(TraceError, match=r"p\.csv:1: header repeats column 'cluster'"):
        read_philly(p)
    q = _write(tmp_path / "q.csv", POD_HEAD.rstrip("\n") + ",name\n" + POD_ROW.rstrip("\n") + ",dup\n")
    with pytest.raises(TraceError, match=r"q\.csv:1: header repeats column 'name'"):
        read_alibaba_pods(q)


def test_unterminated_quote_at_end_of_file_is_rejected(tmp_path: Path) -> None:
    p = _write(tmp_path / "p.csv", PHILLY_HEAD + PHILLY_ROW + '2017-10-09 07:01:55,66.0,1,66.0,"unterminated\n')
    with pytest.raises(TraceError, match=r"p\.csv:3: unreadable row"):
        read_philly(p)
    # a properly quoted field is still fine
    ok = _write(tmp_path / "ok.csv", PHILLY_HEAD + '2017-10-09 07:01:55,66.0,1,66.0,"11cb48"\n')
    assert read_philly(ok)[0].group == "11cb48"
