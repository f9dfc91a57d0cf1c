"""GenTask YAML -> Task: quantities, defaults, multi-document files, errors naming fields."""

from __future__ import annotations

import pytest

from gensolver.market.spec import SpecError, load_gentasks, loads_gentasks, parse_duration, parse_quantity

DOC = """\
apiVersion: scheduling.gen.io/v1alpha1
kind: GenTask
metadata:
  name: {name}
spec:
  containers:
    - name: trainer
      command: ["python", "train.py"]
      resources:
        requests: {{cpu: 8, memory: 32Gi, nvidia.com/gpu: 1}}
  genResources:
    gpuMemory:
      preferred: {pref}
      minRequired: {mini}
      urgencyFactor: 0.8
    computeTime:
      preemptible: false
      duration: 90m
"""


def test_quantities():
    assert parse_quantity("30Gi") == 30 * 2**30
    assert parse_quantity("500Mi") == 500 * 2**20
    assert parse_quantity("1G") == 1e9
    assert parse_quantity("500m") == 0.5
    assert parse_quantity(1024) == 1024.0
    assert parse_quantity("1.5e3") == 1500.0
    for bad in ("30Gx", "", "Gi", "-1Gi", True, None):
        with pytest.raises(SpecError, match="bad quantity"):
            parse_quantity(bad)
    assert parse_duration("1h30m") == 5400.0
    assert parse_duration(120) == 120.0
    with pytest.raises(SpecError, match="bad duration"):
        parse_duration("soon")


def test_shared_example(shared_dir):
    (t,) = load_gentasks(shared_dir / "examples" / "gentask.yaml")
    assert t.id == "llm-finetune-001"
    assert t.preferred_memory == 30.0 and t.min_memory == 18.0
    assert t.urgency == 0.8 and t.preemptible is True
    assert t.command == ("python", "train.py")


def test_multi_document_and_units():
    text = DOC.format(name="a", pref="30Gi", mini="500Mi") + "---\n" + DOC.format(name="b", pref="16G", mini="8G") + "---\n"
    a, b = loads_gentasks(text, step_seconds=60)
    assert a.preferred_memory == 30.0 and a.min_memory == pytest.approx(500 / 1024)
    assert b.preferred_memory == pytest.approx(16e9 / 2**30)
    assert a.duration == 90 and a.preemptible is False and a.gpus == 1 and a.urgency == 0.8


@pytest.mark.parametrize("pref,mini,field,msg", [
    ("30Gi", "30Gx", "spec.genResources.gpuMemory.minRequired", "bad quantity '30Gx'"),
    ("abc", "1Gi", "spec.genResources.gpuMemory.preferred", "bad quantity 'abc'"),
    ("10Gi", "20Gi", "spec.genResources.gpuMemory.minRequired", "exceeds preferred"),
])
def test_bad_fields_name_the_path(pref, mini, field, msg):
    text = DOC.format(name="x", pref=pref, mini=mini)
    with pytest.raises(SpecError, match=f"document 1 \\(line \\d+\\): {field}: .*{msg}") as exc:
        loads_gentasks(text, source="t.yaml")
    assert exc.value.field == field and exc.value.line is not None


def test_missing_and_bad_documents():
    with pytest.raises(SpecError, match="metadata.name: missing required field"):
        loads_gentasks("apiVersion: scheduling.gen.io/v1alpha1\nkind: GenTask\nspec: {genResources: {}}\n")
    with pytest.raises(SpecError, match="spec.genResources.gpuMemory.preferred: missing required field"):
        loads_gentasks("apiVersion: scheduling.gen.io/v1alpha1\nkind: GenTask\nmetadata: {name: a}\n"
                       "spec: {genResources: {gpuMemory: {minRequired: 1Gi}}}\n")
    with pytest.raises(SpecError, match="kind: expected 'GenTask'"):
        loads_gentasks("apiVersion: scheduling.gen.io/v1alpha1\nkind: Pod\n")
    with pytest.raises(SpecError, match=r"line \d+: invalid YAML"):
        loads_gentasks("a: 1\nb: [1, 2\nc: 3\n")
    with pytest.raises(SpecError, match="urgencyFactor: must be in"):
        loads_gentasks(DOC.format(name="x", pref="1Gi", mini="1Gi").replace("0.8", "1.5"))
    with pytest.raises(SpecError, match="duplicate task name 'x'"):
        loads_gentasks(DOC.format(name="x", pref="1Gi", mini="1Gi") + "---\n" + DOC.format(name="x", pref="1Gi", mini="1Gi"))
    with pytest.raises(SpecError, match="no GenTask documents"):
        loads_gentasks("---\n")
