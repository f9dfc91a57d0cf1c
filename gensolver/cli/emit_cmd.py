"""``gensolver emit``: a plan as Slurm batch scripts or Kubernetes objects, and the GenTask CRD.

Nothing is written unless every input is good: ``emit slurm`` writes its folder all at once
(a temporary folder renamed into place), ``emit k8s``/``emit crd`` their file atomically or
print to stdout. Bad input exits with status 2 and names the option or plan field.
"""

from __future__ import annotations

import math
import time
from datetime import datetime
from pathlib import Path
from typing import List, Optional

import typer
from rich.markup import escape

from .choices import choice
from .common import check_output_file, console, fail, items_or_alias

__all__ = ["register", "FLAVORS", "SHARING", "NVIDIA_SHARING"]

#: the values of ``--flavor``, ``--sharing`` and ``--nvidia-sharing`` (kept equal to the
#: adapters' tables by a test; listed here so that ``--help`` does not import them)
FLAVORS = ("nvidia", "hami", "kai", "kueue")
SHARING = ("shard", "mps", "gpu")
NVIDIA_SHARING = ("timeSlicing", "mps")

emit_app = typer.Typer(help="Turn a plan into what Slurm or Kubernetes runs; print the GenTask CRD.",
                       no_args_is_help=True)


def _read(plan_file: Path):
    from ..executor import PlanError, check_plan, read_plan

    try:
        plan = read_plan(plan_file)
    except PlanError as exc:
        fail(str(exc))
    check = check_plan(plan)
    if not check.ok:
        fail(f"{plan_file}: the plan breaks device capacities: {check.violations[0]}")
    return plan


def _nodes(node_map: list[str], node: Optional[str]) -> tuple[dict[str, str], Optional[str], str]:
    """``--node-map`` items and ``--node``: (device -> node, default node, the option that gave
    it). ``*=NODE`` is ``--node NODE`` (as with ``run --backend slurm``): the node of every device
    that neither an entry nor a ``NODE/DEVICE`` id places."""
    out: dict[str, str] = {}
    default, field = node, "--node"
    for item in node_map:
        name, sep, target = item.rpartition("=")
        if not sep or not name or not target:
            fail(f"--node-map expects PLAN_DEVICE=NODE (or *=NODE), got {item!r}")
        if name == "*":
            if default is not None:
                fail("--node-map: '*=NODE' and --node (or a second '*=') both give the default node")
            default, field = target, "--node-map"
            continue
        if name in out:
            fail(f"--node-map: device {name!r} is mapped twice")
        out[name] = target
    return out, default, field


def _node_items(node_map: list[str], device_map: list[str]) -> list[str]:
    """``--node-map`` items, then those of its deprecated alias ``--device-map`` (a warning)."""
    return items_or_alias(node_map, device_map, option="--node-map", old="--device-map")


def _uuids(items: list[str]) -> dict[str, str]:
    """``--gpu-uuid`` items: plan device -> GPU UUID (checked by the adapter)."""
    out: dict[str, str] = {}
    for item in items:
        name, sep, uuid = item.rpartition("=")
        if not sep or not name or not uuid:
            fail(f"--gpu-uuid expects PLAN_DEVICE=GPU-UUID, got {item!r}")
        if name in out:
            fail(f"--gpu-uuid: device {name!r} is given twice")
        out[name] = uuid
    return out


def _start_at(text: Optional[str]) -> Optional[float]:
    """``--start-at``: epoch seconds, ISO 8601 (``2026-12-01T12:00:00Z``) or ``now+SECONDS``."""
    if text is None:
        return None
    value = text.strip()
    try:
        if value.startswith("now+"):
            return math.ceil(time.time() + float(value[4:]))
        if value.replace(".", "", 1).isdigit():
            return float(value)
        return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
    except ValueError:
        fail(f"--start-at: expected epoch seconds, an ISO 8601 time or now+SECONDS, got {text!r}")


def _write(text: str, out: Optional[Path], option: str) -> None:
    from ..model.io import atomic_write

    if out is None:
        typer.echo(text, nl=False)
        return
    try:
        with atomic_write(out) as fh:
            fh.write(text)
    except OSError as exc:
        fail(f"{option}: cannot write {out}: {exc.strerror or exc}")


@emit_app.command("slurm")
def emit_slurm(
    plan_file: Path = typer.Argument(..., help="A gensolver.plan/v1 JSON file."),
    out: Path = typer.Option(..., "--out", "-o", help="New folder for the batch scripts, submit.sh and jobs.json."),
    node_map: List[str] = typer.Option([], "--node-map", help="PLAN_DEVICE=NODE (repeatable); *=NODE is --node NODE."),
    device_map: List[str] = typer.Option([], "--device-map", help="Deprecated alias of --node-map (the same items)."),
    node: Optional[str] = typer.Option(None, "--node", help="Node of every device --node-map and NODE/DEVICE ids leave out."),
    partition: Optional[str] = typer.Option(None, "--partition", help="Slurm partition (default: the cluster's default)."),
    sharing: str = typer.Option("shard", "--sharing", **choice(SHARING), help="Gres of a fractional grant: shard, mps or gpu (whole GPU)."),
    shards_per_gpu: int = typer.Option(100, "--shards-per-gpu", help="Shards per GPU in the site's gres.conf."),
    mps_units: int = typer.Option(100, "--mps-units", help="MPS units per GPU in the site's gres.conf (--sharing mps)."),
    time_scale: float = typer.Option(1.0, "--time-scale", help="Wall seconds per plan second."),
    grace: float = typer.Option(10.0, "--grace", help="Seconds between SIGTERM and SIGKILL at a run's end."),
    log_dir: Optional[str] = typer.Option(None, "--log-dir", help="Folder (on the nodes) for the jobs' output; default /dev/null."),
    cpus: Optional[int] = typer.Option(None, "--cpus", help="--cpus-per-task of every job."),
    mem: Optional[str] = typer.Option(None, "--mem", help="--mem of every job (host memory per node, e.g. 16G)."),
    tenant_map: Optional[Path] = typer.Option(None, "--tenant-map", help="YAML/JSON: tenant -> {account, qos, partition}."),
) -> None:
    """Write one Slurm batch script per run of PLAN_FILE, and submit.sh to submit them in order."""
    from ..adapters.common import AdapterError
    from ..adapters.slurm import SlurmOptions, read_tenant_map, write_slurm

    try:
        nodes, default, field = _nodes(_node_items(node_map, device_map), node)
        tenants = read_tenant_map(tenant_map) if tenant_map is not None else {}
        options = SlurmOptions(nodes=nodes, default_node=default, default_field=field, partition=partition,
                               sharing=sharing,
                               shares_per_gpu=shards_per_gpu, mps_units=mps_units, time_scale=time_scale, grace=grace, log_dir=log_dir,
                               cpus=cpus, mem=mem, tenants=tenants)
    except AdapterError as exc:
        fail(str(exc))
    plan = _read(plan_file)
    try:
        jobs = write_slurm(plan, out, options)
    except AdapterError as exc:
        fail(str(exc))
    except OSError as exc:
        fail(f"--out: cannot write {out}: {exc.strerror or exc}")
    console.print(f"wrote {escape(str(out))}: {len(jobs)} batch script(s); submit with {escape(str(out / 'submit.sh'))}",
                  highlight=False)


@emit_app.command("k8s")
def emit_k8s(
    plan_file: Path = typer.Argument(..., help="A gensolver.plan/v1 JSON file."),
    flavor: str = typer.Option(..., "--flavor", "-f", **choice(FLAVORS), help="nvidia, hami, kai or kueue."),
    out: Optional[Path] = typer.Option(None, "--out", "-o", help="YAML file to write (default: stdout)."),
    node_map: List[str] = typer.Option([], "--node-map", help="PLAN_DEVICE=NODE (repeatable); *=NODE is --node NODE."),
    device_map: List[str] = typer.Option([], "--device-map", help="Deprecated alias of --node-map (the same items)."),
    node: Optional[str] = typer.Option(None, "--node", help="Node of every device --node-map and NODE/DEVICE ids leave out."),
    namespace: str = typer.Option("default", "--namespace", "-n", help="Namespace of the Jobs."),
    image: Optional[str] = typer.Option(None, "--image", help="Container image of every run (default: a CUDA base image)."),
    queue: str = typer.Option("gensolver", "--queue", help="Kueue LocalQueue / KAI queue name."),
    replicas: int = typer.Option(10, "--replicas", help="nvidia: shared replicas per GPU under time-slicing."),
    nvidia_sharing: str = typer.Option("timeSlicing", "--nvidia-sharing", **choice(NVIDIA_SHARING), help="nvidia: timeSlicing or mps."),
    start_at: Optional[str] = typer.Option(None, "--start-at", help="t0: epoch seconds, ISO 8601 or now+SECONDS; each pod waits for its start."),
    time_scale: float = typer.Option(1.0, "--time-scale", help="Wall seconds per plan second."),
    grace: float = typer.Option(10.0, "--grace", help="terminationGracePeriodSeconds."),
    cpu: Optional[str] = typer.Option(None, "--cpu", help="CPU request of every container (e.g. 2, 500m)."),
    memory: Optional[str] = typer.Option(None, "--memory", help="Host memory request and limit of every container (e.g. 16Gi)."),
    gpu_uuid: List[str] = typer.Option([], "--gpu-uuid", help="hami: PLAN_DEVICE=GPU-UUID (repeatable); pins pods to the planned GPUs."),
    apply_script: Optional[Path] = typer.Option(None, "--apply-script", help="With --start-at: write a bash script that applies each run's objects at its start (nvidia, kueue: and relabels a node between its whole and shared runs)."),
) -> None:
    """Print (or write) PLAN_FILE as Kubernetes Jobs in a GPU-sharing flavor."""
    from ..adapters.common import AdapterError
    from ..adapters.flavors import FlavorOptions
    from ..adapters.k8s import DEFAULT_IMAGE, K8sOptions, dump_yaml, k8s_objects

    check_output_file(out, "--out")
    check_output_file(apply_script, "--apply-script")
    if apply_script is not None and start_at is None:
        fail("--apply-script needs --start-at (the script applies each run at t0 + its start)")
    try:
        from ..adapters.flavors import get_flavor

        get_flavor(flavor)
        nodes, default, _field = _nodes(_node_items(node_map, device_map), node)
        options = K8sOptions(nodes=nodes, default_node=default, namespace=namespace,
                             image=DEFAULT_IMAGE if image is None else image, start_at=_start_at(start_at),
                             time_scale=time_scale, grace=grace, cpu=cpu, memory=memory, gpu_uuids=_uuids(gpu_uuid),
                             flavor=FlavorOptions(queue=queue, replicas=replicas, nvidia_sharing=nvidia_sharing,
                                                  relabel=apply_script is not None))
    except AdapterError as exc:
        fail(str(exc))
    plan = _read(plan_file)
    try:
        objects = k8s_objects(plan, flavor, options)
    except AdapterError as exc:
        fail(str(exc))
    header = (f"gensolver emit k8s --flavor {flavor}: plan {plan.name!r} (digest {plan.digest}), "
              f"{sum(o['kind'] == 'Job' for o in objects)} Job(s)"
              + (f", {jobsets} JobSet(s)" if (jobsets := sum(o['kind'] == 'JobSet' for o in objects)) else ""))
    if options.start_at is not None:
        header += f"\nt0 = {options.start_at:.0f} (epoch seconds); each pod waits for t0 + its start"
    script = None
    if apply_script is not None and options.start_at is not None:
        from ..adapters.k8s_apply import apply_script as make_script

        try:
            script = make_script(objects, start_at=options.start_at, header=header)
        except AdapterError as exc:
            fail(str(exc))
    _write(dump_yaml(objects, header=header), out, "--out")
    if script is not None and apply_script is not None:
        _write(script, apply_script, "--apply-script")
        try:
            apply_script.chmod(apply_script.stat().st_mode | 0o111)
        except OSError as exc:
            fail(f"--apply-script: cannot make {apply_script} executable: {exc.strerror or exc}")


@emit_app.command("crd")
def emit_crd(
    out: Optional[Path] = typer.Option(None, "--out", "-o", help="YAML file to write (default: stdout)."),
) -> None:
    """Print (or write) the GenTask CustomResourceDefinition."""
    from ..adapters.crd import gentask_crd
    from ..adapters.k8s import dump_yaml

    check_output_file(out, "--out")
    _write(dump_yaml([gentask_crd()], header="GenTask (scheduling.gen.io/v1alpha1): gensolver emit crd"), out, "--out")


def register(app: typer.Typer) -> None:
    """Add ``emit`` (slurm, k8s, crd) to ``app``."""
    app.add_typer(emit_app, name="emit")
