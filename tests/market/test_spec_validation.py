"""GenTask YAML: wrong types are refused naming the field path and line, never coerced.

Each case changes one field of a valid GenTask (dumped to YAML and read back through the real
parser) and checks the field path and the reason in the :class:`SpecError`.
"""

from __future__ import annotations

import copy
import math
from pathlib import Path
from typing import Any

import pytest
import yaml

from gensolver.market.spec import SpecError, load_gentasks, loads_gentasks

BASE: dict[str, Any] = {
    "apiVersion": "scheduling.gen.io/v1alpha1",
    "kind": "GenTask",
    "metadata": {"name": "job", "namespace": "team-a", "labels": {"app": "x"}},
    "spec": {
        "containers": [{"name": "trainer", "image": "pytorch:latest", "command": ["python", "train.py"],
                        "args": ["--epochs", "10"],
                        "resources": {"requests": {"cpu": 8, "memory": "32Gi"}, "limits": {"nvidia.com/gpu": 1}}}],
        "genResources": {
            "gpuMemory": {"preferred": "30Gi", "minRequired": "18Gi", "urgencyFactor": 0.8, "elasticity": 1.0},
            "computeTime": {"preemptible": True, "duration": "2h", "arrival": "10m", "deadline": "6h"},
            "gpuCompute": 0.5,
            "value": 40,
        },
    },
}


def _yaml(path: str | None = None, value: Any = None, *, delete: bool = False) -> str:
    doc = copy.deepcopy(BASE)
    if path is not None:
        *parents, last = path.split(".")
        cur: Any = doc
        for p in parents:
            cur = cur[int(p)] if isinstance(cur, list) else cur[p]
        if delete:
            del cur[last]
        else:
            cur[last] = value
    return yaml.safe_dump(doc, sort_keys=False)


def test_base_document_reads() -> None:
    (t,) = loads_gentasks(_yaml(), step_seconds=60)
    assert t.command == ("python", "train.py", "--epochs", "10")
    assert t.tenant == "team-a" and t.compute == 0.5 and t.value == 40.0
    assert (t.duration, t.release, t.deadline) == (120, 10, 360)


BAD = [
    # metadata
    ("metadata.namespace", ["x"], "metadata.namespace", "must be a string, got list ['x']"),
    ("metadata.namespace", 5, "metadata.namespace", "must be a string, got int 5 (quote it)"),
    ("metadata.namespace", True, "metadata.namespace", "must be a string, got bool True"),
    ("metadata.labels", ["tenant"], "metadata.labels", "must be a mapping, got list"),
    ("metadata.labels", "tenant=a", "metadata.labels", "must be a mapping, got str"),
    ("metadata.labels", {"tenant": 7}, "metadata.labels.tenant", "must be a string, got int 7 (quote it)"),
    ("metadata.labels", {"tenant": ["a"]}, "metadata.labels.tenant", "must be a string, got list"),
    # containers[0].command / args
    ("spec.containers.0.command", ["python", 1], "spec.containers[0].command[1]", "must be a string, got int 1 (quote it)"),
    ("spec.containers.0.command", [["python"]], "spec.containers[0].command[0]", "must be a string, got list"),
    ("spec.containers.0.command", [None], "spec.containers[0].command[0]", "must be a string, got NoneType"),
    ("spec.containers.0.command", 5, "spec.containers[0].command", "must be a list of strings or a string, got int 5"),
    ("spec.containers.0.command", False, "spec.containers[0].command", "must be a list of strings or a string"),
    ("spec.containers.0.command", {"run": "x"}, "spec.containers[0].command", "must be a list of strings or a string"),
    ("spec.containers.0.command", "python 'train.py", "spec.containers[0].command", "cannot split"),
    ("spec.containers.0.args", ["--epochs", 10], "spec.containers[0].args[1]", "must be a string, got int 10 (quote it)"),
    ("spec.containers.0.args", 10, "spec.containers[0].args", "must be a list of strings or a string"),
    # containers[*].resources: a falsy non-mapping is not "no resources"
    ("spec.containers.0.resources", [], "spec.containers[0].resources", "must be a mapping"),
    ("spec.containers.0.resources", 0, "spec.containers[0].resources", "must be a mapping"),
    ("spec.containers.0.resources.requests", "", "spec.containers[0].resources.requests", "must be a mapping"),
    ("spec.containers.0.resources.limits", [], "spec.containers[0].resources.limits", "must be a mapping"),
    # misspelt genResources fields are not silently ignored (the default would be used instead)
    ("spec.genResources.gpuMemory.urgencyfactor", 0.9, "spec.genResources.gpuMemory.urgencyfactor",
     "unknown field (did you mean 'urgencyFactor'?"),
    ("spec.genResources.computeTime.deadLine", "3h", "spec.genResources.computeTime.deadLine",
     "unknown field (did you mean 'deadline'?"),
    ("spec.genResources.gpucompute", 0.5, "spec.genResources.gpucompute", "unknown field (did you mean 'gpuCompute'?"),
    # a memory number without a unit is bytes: 30 is 30 bytes, not 30 GiB
    ("spec.genResources.gpuMemory.preferred", 30, "spec.genResources.gpuMemory.preferred",
     "30 is 30 bytes (a number without a unit is bytes); write the unit, e.g. '30Gi'"),
    ("spec.genResources.gpuMemory.minRequired", "18", "spec.genResources.gpuMemory.minRequired", "'18' is 18 bytes"),
    ("spec.genResources.gpuMemory.minRequired", 0.5, "spec.genResources.gpuMemory.minRequired", "0.5 is 0.5 bytes"),
]


@pytest.mark.parametrize("path,value,field,message", BAD, ids=[f"{f}={v!r}" for _, v, f, _ in BAD])
def test_bad_field_is_named(path: str, value: Any, field: str, message: str) -> None:
    with pytest.raises(SpecError) as exc:
        loads_gentasks(_yaml(path, value), source="t.yaml")
    assert exc.value.field == field, str(exc.value)
    assert message in str(exc.value), str(exc.value)
    assert exc.value.line is not None and str(exc.value).startswith("t.yaml: document 1 (line ")


def test_a_field_unlike_any_known_one_is_ignored() -> None:
    """Only likely typos are refused: a field this version does not model (another
    scheduler's setting, a newer schema) leaves the task as it would be without it."""
    base = loads_gentasks(yaml.safe_dump(BASE))
    assert loads_gentasks(_yaml("spec.genResources.priority", 3)) == base
    assert loads_gentasks(_yaml("spec.genResources.computeTime.checkpointEvery", "10m")) == base


@pytest.mark.parametrize("command,args,argv", [
    ("python train.py", None, ("python", "train.py")),
    ("python train.py --name 'my run'", None, ("python", "train.py", "--name", "my run")),
    (["python", "train.py"], "--epochs 10", ("python", "train.py", "--epochs", "10")),
    ("python", ["-c", "print(1)"], ("python", "-c", "print(1)")),
    ("", None, ()),
    ([], [], ()),
])
def test_command_and_args_strings_are_split_like_a_shell(command: Any, args: Any, argv: tuple[str, ...]) -> None:
    doc = copy.deepcopy(BASE)
    doc["spec"]["containers"][0]["command"] = command
    doc["spec"]["containers"][0]["args"] = args
    (t,) = loads_gentasks(yaml.safe_dump(doc))
    assert t.command == argv


def test_tenant_label_wins_over_namespace_and_name_is_the_fallback() -> None:
    assert loads_gentasks(_yaml("metadata.labels", {"tenant": "acme"}))[0].tenant == "acme"
    assert loads_gentasks(_yaml("metadata.namespace", delete=True))[0].tenant == "job"
    assert loads_gentasks(_yaml("metadata.labels", None))[0].tenant == "team-a"


def test_memory_with_unit_or_in_plain_bytes_still_reads() -> None:
    (t,) = loads_gentasks(_yaml("spec.genResources.gpuMemory.preferred", 30 * 2**30))
    assert t.preferred_memory == 30.0
    (t,) = loads_gentasks(_yaml("spec.genResources.gpuMemory.minRequired", "1Mi"))
    assert t.min_memory == 1 / 1024


def test_bad_step_seconds_is_refused() -> None:
    for bad in (0, -60, float("nan"), "60"):
        with pytest.raises(SpecError, match="step_seconds must be a finite positive number"):
            loads_gentasks(_yaml(), step_seconds=bad)


def test_binary_file_names_the_file(tmp_path: Path) -> None:
    path = tmp_path / "tasks.yaml"
    path.write_bytes(b"\xff\xfe\x00binary\x80")
    with pytest.raises(SpecError) as exc:
        load_gentasks(path)
    assert str(exc.value).startswith("tasks.yaml: not a UTF-8 text file (byte 0xff at offset 0)")
    assert exc.value.source == "tasks.yaml"


def test_latin1_file_names_the_file_and_offset(tmp_path: Path) -> None:
    path = tmp_path / "latin.yaml"
    text = _yaml().replace("app: x", "owner: josé")
    assert "josé" in text
    path.write_bytes(text.encode("latin-1"))
    with pytest.raises(SpecError, match=r"^latin\.yaml: not a UTF-8 text file \(byte 0xe9 at offset \d+\)"):
        load_gentasks(path)


def test_a_gentask_duration_is_bounded(monkeypatch) -> None:
    """99999999999h would cost the simulator 10**12 round boundaries (issue 20, item 4)."""
    from gensolver.market.spec import SpecError, loads_gentasks

    doc = ("apiVersion: scheduling.gen.io/v1alpha1\nkind: GenTask\nmetadata: {name: t0}\nspec:\n  genResources:\n"
           "    gpuMemory: {preferred: 8Gi}\n    computeTime: {duration: %s}\n")
    with pytest.raises(SpecError, match=r"computeTime.duration: .* over the limit of 31622400 s"):
        loads_gentasks(doc % "99999999999h")
    assert loads_gentasks(doc % "366d")[0].duration == 366 * 24 * 60
    monkeypatch.setenv("GENSOLVER_MAX_TASK_SECONDS", "60")
    with pytest.raises(SpecError, match="over the limit of 60 s"):
        loads_gentasks(doc % "2m")


@pytest.mark.parametrize("part, key", [(p, k) for p in ("requests", "limits") for k in ("cpu", "memory", "nvidia.com/gpu")])
def test_a_null_resource_is_the_field_left_out(part: str, key: str) -> None:
    """A ``null`` is an absent field everywhere, container resources included (the API server
    prunes nulls from non-nullable fields, so the cluster's object has no such key either); a
    value of the wrong type there is still refused."""
    doc = copy.deepcopy(BASE)
    res = doc["spec"]["containers"][0]["resources"]
    res.setdefault(part, {}).pop(key, None)
    without = loads_gentasks(yaml.safe_dump(doc))
    res[part][key] = None
    assert loads_gentasks(yaml.safe_dump(doc)) == without
    res[part][key] = "lots" if key != "nvidia.com/gpu" else "2"
    with pytest.raises(SpecError) as exc:
        loads_gentasks(yaml.safe_dump(doc))
    assert exc.value.field == f"spec.containers[0].resources.{part}.{key}", str(exc.value)


def test_a_too_large_elasticity_names_its_yaml_field() -> None:
    """The speed at minRequired, (minRequired/preferred)**elasticity, must stay above exp(-700):
    18Gi of 30Gi allows elasticity up to 700 / ln(30/18) = 1370.3; the error names the YAML field
    and its line, not the task model's JSON pointer."""
    limit = 700 / math.log(30 / 18)
    assert loads_gentasks(_yaml("spec.genResources.gpuMemory.elasticity", math.floor(limit)))[0].elasticity \
        == math.floor(limit)
    with pytest.raises(SpecError) as exc:
        loads_gentasks(_yaml("spec.genResources.gpuMemory.elasticity", math.ceil(limit)), source="t.yaml")
    assert exc.value.field == "spec.genResources.gpuMemory.elasticity", str(exc.value)
    assert str(exc.value).startswith("t.yaml: document 1 (line ") and "/tasks/" not in str(exc.value)
    assert "minRequired '18Gi' of preferred '30Gi'" in str(exc.value)


def test_a_task_rule_the_reader_does_not_check_still_names_a_yaml_field(monkeypatch: pytest.MonkeyPatch) -> None:
    """Should the task model gain a rule the reader does not check first, its error still names
    the GenTask field (mapped from the model's JSON pointer), never ``/tasks/<id>/...``."""
    from gensolver.market import spec
    from gensolver.model.validate import InstanceError

    def refuses(**kw: Any) -> Any:
        raise InstanceError(f"/tasks/{kw['id']}/release", "a new rule")

    monkeypatch.setattr(spec, "Task", refuses)
    with pytest.raises(SpecError) as exc:
        loads_gentasks(_yaml("metadata.name", "a/b"), source="t.yaml")
    assert exc.value.field == "spec.genResources.computeTime.arrival" and "a new rule" in str(exc.value)
    assert "/tasks/" not in str(exc.value) and exc.value.line is not None
    monkeypatch.setattr(spec, "Task", lambda **kw: (_ for _ in ()).throw(InstanceError("/tasks/x/other", "y")))
    with pytest.raises(SpecError) as exc:
        loads_gentasks(_yaml())
    assert exc.value.field == "spec"
