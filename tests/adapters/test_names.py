"""The id and name policy of every emitter, fuzzed: ids and option values (task and device ids,
``--node``, ``--partition``, ``--node-map``) full of shell syntax, newlines, leading ``-``,
spaces and ``/`` go through ``gensolver emit slurm`` and ``gensolver emit k8s``.

Each case is either refused (exit 2, naming the field, nothing written) exactly when an
independent statement of the rules says so, or emitted, and then:

- every script passes ``bash -n``;
- every logical line of every script, with its single-quoted strings blanked out, is one of the
  known template lines whose holes are shell-safe words (:func:`script_problems`): no input
  reaches the shell unquoted;
- ``submit.sh`` and every batch script, *run* by bash against stub ``sbatch``/``timeout``/
  ``sleep`` programs that record their arguments, create no file (the payloads ``touch`` one)
  and pass exactly the expected arguments (the plan's command, word for word);
- every Kubernetes node selector is the node asked for, every name a DNS-1123 label and every
  label value a label value.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from gensolver.adapters.k8s_apply import RELABEL_FN
from gensolver.adapters.names import safe_token
from gensolver.cli import main
from gensolver.executor import write_plan
from tests.executor.helpers import plan_of

PAYLOADS = ("$(touch PWNED)", "`touch PWNED`", ";touch PWNED", "\ntouch PWNED", "-x", "a b", "a/b", "' ; touch PWNED'",
            '" ; touch PWNED"', "\\", "#c", "x=y", "*", "-", "n1/g0", "Rack 1", "a" * 70)
ALPHABET = list("ab09-_./ $`'\";|&(){}*?#=,~!%@:+<>\\[]") + ["é"]
CONTROLS = ["\n", "\t", "\x00", "\u2028", "\r"]
ID = st.one_of(st.sampled_from(PAYLOADS),
               st.text(st.sampled_from(ALPHABET), min_size=1, max_size=12),
               st.text(st.sampled_from(ALPHABET + CONTROLS), min_size=1, max_size=12),
               st.text(st.characters(exclude_categories=("Cs",)), min_size=1, max_size=8),
               st.tuples(st.sampled_from(["cn1", "node-a", "x"]), st.sampled_from(PAYLOADS)).map("".join))
#: option values: mostly good names (so that most cases are emitted and checked), else anything but NUL
GOOD = st.sampled_from(["cn1", "node-a", "n1.example", "gpu-node-7"])
NODE = st.integers(0, 9).flatmap(lambda k: GOOD if k < 7 else st.one_of(
    st.sampled_from(["Node_7", "-n", "", "a" * 63, "a" * 65]), ID.filter(lambda v: "\x00" not in v)))
DEVICE = st.one_of(st.sampled_from(["gpu0", "n1/g0", "cn1/GPU-0a:1", "-g", "g 0"]), ID)
#: shlex.quote leaves these unquoted (Python's shlex: ``[^\w@%+=:,./-]`` with re.ASCII is unsafe)
WORD = r"(?:Q|\"'\"|[A-Za-z0-9_@%+=:,./-])+"  # Q: a single-quoted string; "'": shlex.quote's quote
SLURM_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
K8S_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")

SBATCH_LINES = [re.compile(p + "$") for p in (
    r"#!/bin/bash", r"#SBATCH --(job-name|nodes|nodelist|ntasks-per-node|gres|time|comment|partition|output|cpus-per-task|mem)="
                    r"[A-Za-z0-9._:,%/@+=-]+",
    r"", r"#(?!SBATCH)[ -~]*",
    re.escape('GENSOLVER_T0="${1:-${GENSOLVER_T0:-}}"'), re.escape("export GENSOLVER_T0"),
    re.escape(': "${GENSOLVER_T0:?submit with t0 (epoch seconds) as the argument: sbatch [options] FILE T0}"'),
    re.escape('end=$(awk -v t0="$GENSOLVER_T0" Q)'),
    re.escape('left=$(awk -v e="$end" -v now="$(date +%s.%N)" Q)'),
    re.escape('if awk -v d="$left" Q; then'),
    r"  printf Q " + WORD + re.escape(' "$left" >&2'), r"  exit (75|0)", r"fi", r"  fi",
    r"export (GENSOLVER|CUDA)_[A-Z_]+=" + WORD, re.escape('export GENSOLVER_RUN_END="$end"'),
    r"timeout --signal=TERM --kill-after=[0-9.e+-]+ -- \"\$left\"( " + WORD + ")+",
    re.escape('sleep "$left"'), re.escape("rc=$?"), re.escape('if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then'),
    re.escape('  if awk -v e="$end" -v now="$(date +%s.%N)" Q; then'), r"    printf Q " + WORD + " >&2",
    r"    exit 0", re.escape('exit "$rc"'))]
SUBMIT_LINES = [re.compile(p + "$") for p in (
    r"#!/bin/bash", r"#[ -~]*", re.escape("set -euo pipefail"), re.escape('cd -- "$(dirname -- "$0")"'),
    re.escape('t0="${1:-$(date +%s)}"'),
    re.escape('case "$t0" in (*[!0-9]*|"") echo "submit.sh: t0 must be epoch seconds" >&2; exit 2;; esac'),
    re.escape("declare -a id"),
    r'id\[\d+\]=\$\(sbatch --parsable --begin="\$\(date -d "@\$\(\(t0 \+ \d+\)\)" '
    r'\+%Y-%m-%dT%H:%M:%S\)"( --dependency="afterany:\$\{id\[\d+\]\}")? -- ' + WORD + r' "\$t0"\)',
    r'id\[(\d+)\]="\$\{id\[\1\]%%;\*\}"', r'printf "%s %s\\n" ' + WORD + r' "\$\{id\[\d+\]\}"')]


def logical_lines(text: str) -> list[str]:
    """``text`` split into lines at newlines outside quotes, every single-quoted string replaced by ``Q``
    (a single-quoted string is literal to bash: nothing in it is expanded)."""
    lines, cur, state, k = [], [], None, 0
    while k < len(text):
        ch = text[k]
        if state is None and ch == "#" and (not cur or cur[-1] in " \t"):  # a comment runs to the line's end
            end = text.find("\n", k)
            end = len(text) if end < 0 else end
            cur.append(text[k:end])
            k = end
            continue
        if state is None and ch == "'":
            end = text.index("'", k + 1)
            cur.append("Q")
            k = end + 1
            continue
        if ch == "\\" and state != "'":
            cur.append(text[k:k + 2])
            k += 2
            continue
        if ch == '"':
            state = None if state == '"' else '"'
        if ch == "\n" and state is None:
            lines.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
        k += 1
    assert state is None, "unbalanced quotes"
    if cur:
        lines.append("".join(cur))
    return lines


def script_problems(text: str, templates: list[re.Pattern]) -> list[str]:
    """Every logical line of a script that is not one of the known ``templates``."""
    try:
        lines = logical_lines(text)
    except (AssertionError, ValueError) as exc:
        return [f"cannot split: {exc}"]
    return [line for line in lines if not any(t.match(line) for t in templates)]


def test_the_line_checker_refuses_unquoted_input() -> None:
    good = "#!/bin/bash\nexport GENSOLVER_TASK='a b $(x)'\nsleep \"$left\"\n"
    assert script_problems(good, SBATCH_LINES) == []
    for bad in ("export GENSOLVER_TASK=a b\n", "export GENSOLVER_TASK=$(x)\n", "export GENSOLVER_TASK='a'\ntouch y\n",
                "#SBATCH --partition=a b\n", "#SBATCH --partition=a\ntouch x\n", "export GENSOLVER_TASK='a\n",
                "timeout --signal=TERM --kill-after=1 -- \"$left\" a;b\n"):
        assert script_problems(bad, SBATCH_LINES) != [], bad
    good = "#!/bin/bash\nrelabel n-1 gensolver-whole 1 1 0 default 'a b' &\nprintf '%s\\n' '{}' | \"$KUBECTL\" apply -f -\n"
    assert script_problems(good, APPLY_LINES) == []
    for bad in ("relabel n-1 $(x) 1 1 0 default d &\n", "relabel n-1 c 1 1 0 default d; touch x &\n",
                "printf '%s\\n' {} | \"$KUBECTL\" apply -f -\n", "wait_until 1; touch x\n", "relabel a b &\n"):
        assert script_problems(bad, APPLY_LINES) != [], bad


def _stubs(folder: Path) -> Path:
    """``sbatch``, ``timeout`` and ``sleep`` that append their argv (JSON) to ``$STUB_LOG``."""
    bin_ = folder / "bin"
    bin_.mkdir()
    for name, tail in (("sbatch", 'echo "$((1000 + $(wc -l < "$STUB_LOG")))"'), ("timeout", ""), ("sleep", "")):
        (bin_ / name).write_text("#!/bin/bash\n" + f'{sys.executable} -c \'import json, sys; print(json.dumps(["{name}"] + '
                                 f'sys.argv[1:]))\' "$@" >> "$STUB_LOG"\n{tail}\n')
        (bin_ / name).chmod(0o755)
    return bin_


def _emit(args: list[str]) -> tuple[int, str]:
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        rc = main(args)
    return rc, err.getvalue()


def _case(task_a: str, task_b: str, dev: str, node: str, partition: str, mapped: str, *, run: bool) -> None:
    command = ["printf", "%s\\n", task_a, "$(touch PWNED)"]
    plan = plan_of({dev: 8, "gpu1": 8}, {task_a: {"at": [(dev, 0, 4)], "memory": 4, "compute": 0.5,
                                                  "command": command},
                                         task_b: {"at": [("gpu1", 0, 2), (dev, 4, 6)], "memory": 8}})
    head = dev.rpartition("/")[0]
    node_a = head if "/" in dev and head else node
    ids_ok = not any(CONTROL.search(x) for x in (task_a, task_b, dev))
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        path = root / "plan.json"
        write_plan(plan, path)
        out = root / "out"
        rc, err = _emit(["emit", "slurm", str(path), "--out", str(out), "--node", node, "--partition", partition,
                         "--node-map", f"gpu1={mapped}", "--time-scale", "0.5", "--grace", "1"])
        slurm_ok = ids_ok and all(SLURM_NAME.match(n) for n in (node, partition, mapped, node_a))
        assert rc == (0 if slurm_ok else 2), err
        event(f"slurm {'emitted' if rc == 0 else 'refused'}")
        if rc == 2:
            assert re.search(r"--node|--partition|--node-map|/devices/|/tasks/", err), err
            assert not out.exists()
        else:
            _check_slurm(out, root, command, task_b, node_a, mapped, run=run)
        yaml_out = root / "jobs.yaml"
        rc, err = _emit(["emit", "k8s", str(path), "--flavor", "kai", "--out", str(yaml_out), "--node", node,
                         "--node-map", f"gpu1={mapped}"])
        k8s_ok = ids_ok and all(len(n) <= 63 and all(K8S_LABEL.match(p) for p in n.split("."))
                                for n in (node, mapped, node_a))
        assert rc == (0 if k8s_ok else 2), err
        event(f"k8s {'emitted' if rc == 0 else 'refused'}")
        if rc == 2:
            assert re.search(r"--node|--node-map|/devices/|/tasks/", err), err
            assert not yaml_out.exists()
        else:
            _check_k8s(yaml_out, node_a, mapped)
        # the nvidia flavor's apply script: dev shares [0, 4) then is whole [4, 6) on node_a, so
        # node_a is relabelled at 4 s; gpu1 is whole [0, 2) on mapped, which cannot share
        # node_a's time while dev shares (refused by name when they are one node)
        script = root / "apply.sh"
        rc, err = _emit(["emit", "k8s", str(path), "--flavor", "nvidia", "--out", str(root / "nv.yaml"), "--node",
                         node, "--node-map", f"gpu1={mapped}", "--start-at", str(T0), "--apply-script", str(script)])
        assert rc == (0 if k8s_ok and mapped != node_a else 2), err
        if rc == 2:
            assert re.search(r"--node|--node-map|/devices/|/tasks/|--flavor", err), err
            assert not script.exists()
        else:
            _check_apply(script, root, task_a, node_a, mapped, run=run)


def _check_slurm(out: Path, root: Path, command: list[str], task_b: str, node_a: str, mapped: str, *,
                 run: bool) -> None:
    index = json.loads((out / "jobs.json").read_text())
    files = sorted(p.name for p in out.iterdir())
    assert files == sorted([j["script"] for j in index["jobs"]] + ["jobs.json", "submit.sh"])
    for j in index["jobs"]:
        assert j["nodes"] == ([mapped] if j["task"] == task_b and j["run"] == 0 else [node_a])
        key = j["key"]
        assert j["script"] == f"{safe_token(key.rpartition('.')[0])}.{key.rpartition('.')[2]}.sbatch"
    for name in files:
        if name == "jobs.json":
            continue
        text = (out / name).read_text()
        checked = subprocess.run(["bash", "-n", str(out / name)], capture_output=True, text=True, timeout=30)
        assert checked.returncode == 0, (name, checked.stderr)
        assert script_problems(text, SUBMIT_LINES if name == "submit.sh" else SBATCH_LINES) == [], name
    if not run:
        return
    bin_ = _stubs(root)
    log = root / "stub.log"
    log.touch()
    env = dict(os.environ, PATH=f"{bin_}:{os.environ['PATH']}", STUB_LOG=str(log), GENSOLVER_T0="1000000")
    done = subprocess.run(["bash", str(out / "submit.sh"), "1000000"], capture_output=True, text=True, env=env,
                          timeout=60, cwd=root)
    assert done.returncode == 0, done.stderr
    calls = [json.loads(line) for line in log.read_text().splitlines()]
    assert [c[-2] for c in calls] == [j["script"] for j in index["jobs"]] and all(c[-3] == "--" for c in calls)
    assert all(c[-1] == "1000000" for c in calls)  # t0, the script's argument
    printed = [shlex.split(line) for line in done.stdout.splitlines()]
    assert [p[0] for p in printed] == [j["key"] for j in index["jobs"]]
    log.write_text("")
    for j in index["jobs"]:
        ran = subprocess.run(["bash", str(out / j["script"])], capture_output=True, text=True, env=env, timeout=60,
                             cwd=out)
        # t0 is long past: not started (75; 0 for task_b, which has no command: nothing was to run)
        assert ran.returncode == (0 if j["task"] == task_b else 75), ran.stderr
    assert log.read_text() == ""
    env["GENSOLVER_T0"] = repr(time.time() + 3600)  # now: plenty of time left
    first = next(j for j in index["jobs"] if j["run"] == 0 and j["gres"].startswith("shard"))
    ran = subprocess.run(["bash", str(out / first["script"])], capture_output=True, text=True, env=env, timeout=60,
                         cwd=out)
    assert ran.returncode == 0, ran.stderr
    (call,) = [json.loads(line) for line in log.read_text().splitlines()]
    assert call[:4] == ["timeout", "--signal=TERM", "--kill-after=1", "--"] and call[5:] == command
    assert not (out / "PWNED").exists() and not (root / "PWNED").exists()


def _check_k8s(path: Path, node_a: str, mapped: str) -> None:
    docs = list(yaml.safe_load_all(path.read_text()))
    assert docs
    for doc in docs:
        assert K8S_LABEL.match(doc["metadata"]["name"]) and len(doc["metadata"]["name"]) <= 63
        if doc["kind"] != "Job":  # the PriorityClasses of the plan's urgency bands
            assert doc["kind"] == "PriorityClass"
            continue
        labels = dict(doc["metadata"].get("labels", {}), **doc["spec"]["template"]["metadata"].get("labels", {}))
        assert all(LABEL_VALUE.match(v) and len(v) <= 63 for v in labels.values()), labels
        host = doc["spec"]["template"]["spec"]["nodeSelector"]["kubernetes.io/hostname"]
        devices = doc["metadata"]["annotations"]["gensolver.io/devices"]
        assert host == (mapped if devices == "gpu1" else node_a)


T0 = 1_900_000_000
#: the apply script's lines (emit k8s --apply-script): constant lines, and lines whose holes are
#: numbers or shell-safe words
APPLY_LINES = [re.compile(p + "$") for p in (
    r"#!/bin/bash", r"#[ -~]*", re.escape("set -euo pipefail"), re.escape('KUBECTL="${KUBECTL:-kubectl}"'),
    *(re.escape(line) for line in logical_lines("\n".join(
        ["wait_until() {", "  local now", "  now=$(date +%s)", '  if [ "$now" -lt "$1" ]; then sleep $(( $1 - now )); fi',
         "}"] + list(RELABEL_FN)))),
    r"wait_until \d+", r"relabel( " + WORD + "){7} &", r"r\d+=\$!", r'wait "\$r\d+"',
    r"printf Q " + WORD + re.escape(' | "$KUBECTL" apply -f -'))]


def _check_apply(script: Path, root: Path, task_a: str, node_a: str, mapped: str, *, run: bool) -> None:
    """The apply script: bash -n, only known lines; run against a recording kubectl stub: node_a
    relabelled to the shared config at the start and to the whole one at 4 s, mapped to the
    whole one; the task id reaches kubectl intact; no payload runs."""
    checked = subprocess.run(["bash", "-n", str(script)], capture_output=True, text=True, timeout=30)
    assert checked.returncode == 0, checked.stderr
    assert script_problems(script.read_text(), APPLY_LINES) == []
    if not run:
        return
    bin_ = root / "kbin"
    bin_.mkdir()
    # one record a line, written by one append (the script relabels nodes in the background, so
    # stubs run at once: a print through a shell redirection could be cut by another's record)
    (bin_ / "kubectl").write_text("#!/bin/bash\n" + f"{sys.executable} -c 'import json, os, sys; os.write("
                                  "os.open(os.environ[\"STUB_LOG\"], os.O_WRONLY | os.O_APPEND), (json.dumps("
                                  f"[sys.argv[1:], sys.stdin.read() if sys.argv[1] == \"apply\" else \"\"]) + \"\\n\")"
                                  ".encode())' \"$@\"\n")
    (bin_ / "kubectl").chmod(0o755)
    (bin_ / "sleep").write_text("#!/bin/bash\n")
    (bin_ / "sleep").chmod(0o755)
    log = root / "kubectl.log"
    log.touch()
    env = dict(os.environ, PATH=f"{bin_}:{os.environ['PATH']}", STUB_LOG=str(log))
    done = subprocess.run(["bash", str(script)], capture_output=True, text=True, env=env, timeout=120, cwd=root)
    assert done.returncode == 0, done.stderr
    calls = [json.loads(line) for line in log.read_text().splitlines()]
    labels = sorted((argv[2], argv[4]) for argv, _ in calls if argv[:2] == ["label", "node"])
    key = "nvidia.com/device-plugin.config="
    assert labels == sorted([(node_a, key + "gensolver-shared"), (node_a, key + "gensolver-whole"),
                             (mapped, key + "gensolver-whole")]), labels
    tasks = {item["metadata"]["annotations"]["gensolver.io/task"] for argv, text in calls if argv[0] == "apply"
             for item in json.loads(text)["items"] if item["kind"] == "Job"}
    assert task_a in tasks
    assert not list(root.rglob("PWNED"))


@settings(max_examples=150, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much])
@given(task_a=ID, task_b=ID, dev=DEVICE, node=NODE, partition=NODE, mapped=NODE, run=st.integers(0, 3))
def test_fuzzed_ids_and_options_are_refused_by_name_or_emitted_quoted(task_a, task_b, dev, node, partition, mapped,
                                                                       run) -> None:
    if task_a == task_b:  # one plan cannot hold duplicate ids
        task_b += "-2"
    if dev == "gpu1":
        dev = "gpu1-0"
    _case(task_a, task_b, dev, node, partition, mapped, run=run == 0)


@pytest.mark.slow
@settings(max_examples=1000, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much])
@given(task_a=ID, task_b=ID, dev=DEVICE, node=NODE, partition=NODE, mapped=NODE, run=st.integers(0, 3))
def test_a_thousand_fuzzed_cases(task_a, task_b, dev, node, partition, mapped, run) -> None:
    test_fuzzed_ids_and_options_are_refused_by_name_or_emitted_quoted.hypothesis.inner_test(  # type: ignore[attr-defined]
        task_a, task_b, dev, node, partition, mapped, run)


def test_named_cases_are_refused_before_anything_is_written(tmp_path: Path) -> None:
    """The audit's cases, each by name: a newline in an id or an option, a space in a node."""
    cases = [("a\nb", "t2", "gpu0", "cn1", "p", "cn1", "/tasks/"),
             ("t1", "t2", "gpu\n0", "cn1", "p", "cn1", "/devices/"),
             ("t1", "t2", "gpu0", "cn1\ntouch x", "p", "cn1", "--node"),
             ("t1", "t2", "gpu0", "cn1", "p\nq", "cn1", "--partition"),
             ("t1", "t2", "gpu0", "cn1", "p", "Rack 1", "--node-map"),
             ("t1", "t2", "Rack 1/g0", "cn1", "p", "cn1", "/devices/")]
    for task_a, task_b, dev, node, part, mapped, field in cases:
        plan = plan_of({dev: 8, "gpu1": 8}, {task_a: {"at": [(dev, 0, 4)], "memory": 4},
                                             task_b: {"at": [("gpu1", 0, 2)], "memory": 8}})
        path = tmp_path / "plan.json"
        write_plan(plan, path)
        rc, err = _emit(["emit", "slurm", str(path), "--out", str(tmp_path / "o"), "--node", node, "--partition",
                         part, "--node-map", f"gpu1={mapped}"])
        assert rc == 2 and field in err, (field, err)
        assert not (tmp_path / "o").exists()
    # a leading '-', a space and a '/' in task ids are encoded, not refused: distinct safe file names
    plan = plan_of({"gpu0": 8}, {"-rf": {"at": [("gpu0", 0, 1)], "memory": 1},
                                 "a b": {"at": [("gpu0", 1, 2)], "memory": 1},
                                 "x/y": {"at": [("gpu0", 2, 3)], "memory": 1}})
    write_plan(plan, tmp_path / "ok.json")
    rc, err = _emit(["emit", "slurm", str(tmp_path / "ok.json"), "--out", str(tmp_path / "ok"), "--node", "cn1"])
    assert rc == 0, err
    names = sorted(p.name for p in (tmp_path / "ok").iterdir())
    assert len(names) == 5 and all(re.match(r"^[A-Za-z0-9][A-Za-z0-9._+-]*$", n) for n in names), names


#: a GPU UUID as nvidia-smi -L prints it (restated here, independent of the adapter's pattern)
UUID_TEXT = re.compile(r"GPU-[0-9a-f]{8}(-[0-9a-f]{4}){3}-[0-9a-f]{12}")
UUID = st.one_of(st.from_regex(UUID_TEXT, fullmatch=True), ID,
                 st.from_regex(UUID_TEXT, fullmatch=True).map(lambda u: u.upper()),
                 st.from_regex(UUID_TEXT, fullmatch=True).map(lambda u: u + "\nx: y"))


@settings(max_examples=60, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(uuid=UUID)
def test_fuzzed_gpu_uuids_are_refused_by_name_or_pinned_as_given(uuid: str) -> None:
    plan = plan_of({"gpu0": 8}, {"a": {"at": [("gpu0", 0, 2)], "memory": 4, "compute": 0.5}})
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "plan.json"
        write_plan(plan, path)
        out = Path(tmp) / "jobs.yaml"
        rc, err = _emit(["emit", "k8s", str(path), "--flavor", "hami", "--node", "n", "--gpu-uuid", f"gpu0={uuid}",
                         "--out", str(out)])
        ok = UUID_TEXT.fullmatch(uuid) is not None
        event("pinned" if rc == 0 else "refused")
        assert rc == (0 if ok else 2), err
        if not ok:
            assert "--gpu-uuid" in err and not out.exists()
            return
        (job,) = [d for d in yaml.safe_load_all(out.read_text()) if d["kind"] == "Job"]
        assert job["spec"]["template"]["metadata"]["annotations"] == {"nvidia.com/use-gpuuuid": uuid}
