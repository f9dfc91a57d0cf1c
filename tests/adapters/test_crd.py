"""The GenTask CRD against the YAML reader (gensolver.market.spec): on a set of examples built
from shared/examples/gentask.yaml, a document the reader accepts is accepted by the CRD schema
and one it refuses is refused, except the documented differences (crd.READER_ONLY, CRD_ONLY),
which are checked to differ in the documented direction. The schema is applied with the
``jsonschema`` package (independent of both the reader and the CRD builder); the CRD object
itself is validated against Kubernetes' own CustomResourceDefinition schema."""

from __future__ import annotations

import copy
import re
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml

from gensolver.adapters.crd import CRD_ONLY, READER_ONLY, gentask_crd, gentask_schema, validate_document
from gensolver.market.spec import SpecError, parse_gentask

DELETE = object()


def _id(changes: dict[str, Any]) -> str:
    """A test id that is the same in every pytest-xdist worker (no object addresses)."""
    return ", ".join(f"{k}={'<deleted>' if v is DELETE else repr(v)}" for k, v in changes.items()) or "as is"


def _set(doc: dict, path: str, value: Any) -> None:
    parts = [p for p in re.split(r"\.(?![^\[]*\])|(?=\[)", path) if p]
    cur: Any = doc
    for part in parts[:-1]:
        if part.startswith("["):
            cur = cur[int(part[1:-1])]
        else:
            cur = cur.setdefault(part, {})
    last = parts[-1]
    if value is DELETE:
        cur.pop(last, None)
    elif last.startswith("["):
        cur[int(last[1:-1])] = value
    else:
        cur[last] = value


def variant(base: dict, changes: dict[str, Any]) -> dict:
    doc = copy.deepcopy(base)
    for path, value in changes.items():
        _set(doc, path, value)
    return doc


def reader_accepts(doc: dict) -> bool:
    try:
        parse_gentask(doc)
    except SpecError:
        return False
    return True


G = "spec.genResources"
C0 = "spec.containers[0]"
#: accepted by both
GOOD = [{}, {f"{G}.gpuCompute": "500m"}, {f"{G}.gpuCompute": "0.5"}, {f"{G}.gpuCompute": 1},
        {f"{G}.gpuCompute": "1"}, {f"{G}.computeTime.duration": "90m"}, {f"{G}.computeTime.duration": 3600},
        {f"{G}.computeTime.duration": "1h30m", f"{G}.computeTime.arrival": "10m", f"{G}.computeTime.deadline": "3h"},
        {f"{C0}.resources.limits": {"nvidia.com/gpu": 2}}, {f"{G}.gpuMemory.minRequired": DELETE},
        {f"{G}.gpuMemory.minRequired": None}, {f"{G}.gpuMemory.urgencyFactor": 0},
        {f"{G}.gpuMemory.urgencyFactor": 1}, {f"{G}.gpuMemory.elasticity": 2.5}, {f"{G}.value": 12.5},
        {"metadata.labels": {"tenant": "team-a"}, "metadata.namespace": "ml"},
        {f"{G}.gpuMemory.preferred": "32212254720", f"{G}.gpuMemory.minRequired": DELETE},
        {f"{G}.gpuMemory.preferred": 32212254720, f"{G}.gpuMemory.minRequired": "1.5e9"},
        {f"{G}.priorityClass": "batch"}, {"spec.schedulerName": "gensolver"},
        {f"{C0}.command": ["python"], f"{C0}.args": ["train.py", "--epochs", "3"]},
        {f"{C0}.resources.requests.cpu": "500m", f"{C0}.resources.requests.memory": "1.5Gi"},
        {f"{G}.computeTime.preemptible": False}, {"spec.containers": DELETE},
        {f"{C0}.resources.limits": {"nvidia.com/gpu": None}},  # a null is the field left out, on both sides
        {f"{C0}.resources.requests": {"cpu": None, "memory": None}}]
#: refused by both
BAD = [{"spec.genResources": DELETE}, {f"{G}.gpuMemory.preferred": DELETE}, {f"{G}.gpuMemory": DELETE},
       {f"{G}.gpuMemory.preferred": "30Gx"}, {f"{G}.gpuMemory.preferred": "abc"},
       {f"{G}.gpuMemory.preferred": "-5Gi"}, {f"{G}.gpuMemory.preferred": 0}, {f"{G}.gpuMemory.preferred": "0Gi"},
       {f"{G}.gpuMemory.preferred": 30}, {f"{G}.gpuMemory.minRequired": True},
       {f"{G}.gpuMemory.urgencyFactor": 1.5}, {f"{G}.gpuMemory.urgencyFactor": "high"},
       {f"{G}.gpuMemory.urgencyFactor": True}, {f"{G}.gpuMemory.elasticity": -1},
       {f"{G}.computeTime.preemptible": "yes"}, {f"{G}.computeTime.duration": "ten minutes"},
       {f"{G}.computeTime.duration": 0}, {f"{G}.computeTime.duration": -5}, {f"{G}.computeTime.arrival": "soon"},
       {f"{G}.gpuCompute": 0}, {f"{G}.gpuCompute": "1500m"}, {f"{G}.gpuCompute": 2}, {f"{G}.gpuCompute": "0"},
       {f"{G}.gpuCompute": "abc"}, {f"{G}.value": -1}, {f"{G}.value": "lots"}, {"spec.containers": "trainer"},
       {"spec.containers": ["trainer"]}, {f"{C0}.resources.limits": {"nvidia.com/gpu": 0}},
       {f"{C0}.resources.limits": {"nvidia.com/gpu": "2"}}, {f"{C0}.resources.limits": {"nvidia.com/gpu": True}},
       {f"{C0}.resources.requests.cpu": "lots"}, {f"{C0}.resources": "big"}, {f"{C0}.command": ["python", 3]},
       {"apiVersion": "scheduling.gen.io/v1"}, {"kind": "Task"}, {"metadata.name": DELETE},
       {"metadata.labels": {"tenant": 5}}, {f"{G}": "lots"}, {f"{G}.gpuMemory": ["30Gi"]}, {"spec": DELETE}]


@pytest.fixture(scope="module")
def base(shared_dir: Path) -> dict:
    doc = yaml.safe_load((shared_dir / "examples" / "gentask.yaml").read_text())
    assert reader_accepts(doc) and validate_document(doc) == []
    return doc


@pytest.mark.parametrize("changes", GOOD, ids=[_id(c) for c in GOOD])
def test_what_the_reader_accepts_the_crd_accepts(base: dict, changes: dict) -> None:
    doc = variant(base, changes)
    assert reader_accepts(doc)
    assert validate_document(doc) == []


@pytest.mark.parametrize("changes", BAD, ids=[_id(c) for c in BAD])
def test_what_the_reader_refuses_the_crd_refuses(base: dict, changes: dict) -> None:
    doc = variant(base, changes)
    assert not reader_accepts(doc)
    assert validate_document(doc) != []


@pytest.mark.parametrize("why, changes", READER_ONLY, ids=[w for w, _ in READER_ONLY])
def test_documented_refusals_of_the_reader_only(base: dict, why: str, changes: dict) -> None:
    doc = variant(base, changes)
    assert not reader_accepts(doc) and validate_document(doc) == [], why


@pytest.mark.parametrize("why, changes", CRD_ONLY, ids=[w for w, _ in CRD_ONLY])
def test_documented_refusals_of_the_crd_only(base: dict, why: str, changes: dict) -> None:
    doc = variant(base, changes)
    assert reader_accepts(doc) and validate_document(doc) != [], why


def test_the_crd_is_a_valid_kubernetes_object_with_a_structural_schema() -> None:
    crd = gentask_crd()
    kubernetes_validate.validate(crd, kubernetes_validate.latest_version(), strict=True)
    assert crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"] == gentask_schema()
    with pytest.raises(kubernetes_validate.ValidationError):  # the validator can fail
        kubernetes_validate.validate(dict(crd, spec=dict(crd["spec"], versions="v1alpha1")),
                                     kubernetes_validate.latest_version(), strict=True)

    def walk(node: dict, where: str) -> list[str]:
        """Kubernetes' structural-schema rules: a type everywhere (or int-or-string / preserved
        unknown fields), no type inside anyOf except int-or-string's."""
        bad = []
        if "type" not in node and not node.get("x-kubernetes-int-or-string") \
                and not node.get("x-kubernetes-preserve-unknown-fields"):
            bad.append(f"{where}: no type")
        for branch in node.get("anyOf", []):
            if "type" in branch and not node.get("x-kubernetes-int-or-string"):
                bad.append(f"{where}: type inside anyOf")
        for key, child in node.get("properties", {}).items():
            bad += walk(child, f"{where}.{key}")
        if isinstance(node.get("items"), dict):
            bad += walk(node["items"], f"{where}[]")
        return bad

    assert walk(gentask_schema(), "") == []
    assert walk({"type": "object", "properties": {"x": {"anyOf": [{"type": "string"}]}}}, "") != []


def test_kubectl_style_documents_of_the_crd_kind_load_through_the_reader(base: dict) -> None:
    """The same YAML text is one GenTask for the reader and one valid object for the cluster."""
    from gensolver.market.spec import loads_gentasks

    text = yaml.safe_dump_all([variant(base, {"metadata.name": f"job-{k}"}) for k in range(3)])
    assert [t.id for t in loads_gentasks(text)] == ["job-0", "job-1", "job-2"]
    assert all(validate_document(d) == [] for d in yaml.safe_load_all(text))


def test_the_tutorials_gentasks_apply_against_the_crd() -> None:
    """Every GenTask the tutorial writes passes the CRD's schema and the reader."""
    text = (Path(__file__).resolve().parents[2] / "docs" / "tutorial" / "first-round.md").read_text()
    docs = [d for block in re.findall(r'YAML = """\n(.*?)"""', text, re.S) for d in yaml.safe_load_all(block)]
    assert len(docs) == 3
    for doc in docs:
        assert validate_document(doc) == [], doc["metadata"]["name"]
        assert reader_accepts(doc), doc["metadata"]["name"]
    # the check can fail: the bare number the tutorial once used is refused by the CRD
    bare = copy.deepcopy(docs[0])
    bare["spec"]["genResources"]["gpuCompute"] = 0.5
    assert validate_document(bare) != []
