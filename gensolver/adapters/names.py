"""One id and name policy for every emitter (Slurm scripts, Kubernetes objects).

A plan's ids (tasks, devices) and the options an emitter takes (nodes, partition, log folder)
end up in shell scripts, ``#SBATCH`` directives, file names, Slurm job names, Kubernetes names,
label values and node selectors. The rule, the same for every emitter:

- **Refused by name** (:class:`~gensolver.adapters.common.AdapterError`, before anything is
  written or submitted): a task or device id with a control character (a newline, a tab, ...);
  a node name that is not a valid host name for the target (Slurm: ``[A-Za-z0-9._-]``, a letter
  or digit first, at most 64 characters; Kubernetes: a lower-case DNS-1123 subdomain of at most
  63 characters, as the ``kubernetes.io/hostname`` label value must be); a Slurm partition that
  is not ``[A-Za-z0-9._-]`` (a letter or digit first); a log folder with white space, quotes or
  shell characters.
- **Encoded**: everything else. A task id becomes a file name and a job-name part by
  :func:`safe_token` (kept as is when it is already ``[A-Za-z0-9][A-Za-z0-9._+-]*`` and short,
  else its unsafe characters replaced and a digest of the original appended, so that distinct
  ids stay distinct); Kubernetes names and label values by ``dns_name``/``label_value`` of
  :mod:`gensolver.adapters.k8s`.
- **Quoted**: every value that reaches a shell command is passed through :func:`shlex.quote`;
  every value in a comment through :func:`comment_text` (JSON string escapes, ASCII only), so
  no input ever starts a line of its own.

References
----------
.. [RFC1123] Kubernetes object names and IDs (DNS-1123 label and subdomain),
   https://kubernetes.io/docs/concepts/overview/working-with-objects/names/
.. [SLURMCONF] ``slurm.conf(5)``: ``NodeName``, ``PartitionName``,
   https://slurm.schedmd.com/slurm.conf.html
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import Callable

from .common import AdapterError

__all__ = ["check_id", "safe_token", "comment_text", "slurm_node", "k8s_node", "slurm_partition", "log_folder",
           "NodeRule", "k8s_quantity", "slurm_memory", "positive_int", "gpu_uuid", "GPU_UUID"]

#: a node-name rule: ``rule(node, field)`` raises :class:`AdapterError` naming ``field``
NodeRule = Callable[[str, str], None]

_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")
_SAFE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._+-]*$")
_SLURM_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_PATH = re.compile(r"^[A-Za-z0-9._/%@+,:=-]+$")


def check_id(kind: str, value: str, field: str) -> None:
    """Refuse an id with a control character (it would start a line of its own in a script).

    >>> check_id("task", "train-7", "/tasks/train-7")
    >>> check_id("task", "a\\nb", "/tasks/0")
    Traceback (most recent call last):
    ...
    gensolver.adapters.common.AdapterError: /tasks/0: task id 'a\\nb' has a control character ...
    """
    if _CONTROL.search(value):
        raise AdapterError(field, f"{kind} id {value!r} has a control character (a newline, a tab, ...); "
                                  f"rename it in the plan")


def safe_token(text: str, limit: int = 40) -> str:
    """``text`` as a file-name and job-name part: ``[A-Za-z0-9._+-]``, a letter or digit first.

    Kept as is when already so (and at most ``limit`` characters); otherwise the unsafe
    characters become ``_`` and ``-`` plus 8 hex digits of the original's SHA-256 is appended.

    >>> safe_token("train-7")
    'train-7'
    >>> safe_token("-rm -rf /")
    'rm_-rf-0bdecab7'
    """
    if _SAFE.match(text) and len(text) <= limit:
        return text
    digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:8]
    body = re.sub(r"[^A-Za-z0-9._+-]+", "_", text)
    body = re.sub(r"^[^A-Za-z0-9]+", "", body)[: limit - 9].rstrip("_")
    return f"{body}-{digest}" if body else f"x-{digest}"


def comment_text(text: str) -> str:
    """``text`` quoted for a comment line: a JSON string, ASCII only (no line breaks possible).

    >>> comment_text('a"b\\nc')
    '"a\\\\"b\\\\nc"'
    """
    return json.dumps(text, ensure_ascii=True)


def slurm_node(node: str, field: str) -> None:
    """Refuse ``node`` unless it is a Slurm node name (``[A-Za-z0-9._-]``, 64 characters at most)."""
    if not _SLURM_NAME.match(node) or len(node) > 64:
        raise AdapterError(field, f"node {node!r} is not a Slurm node name (letters, digits, '.', '_' and '-', "
                                  f"a letter or digit first, at most 64 characters)")


def k8s_node(node: str, field: str) -> None:
    """Refuse ``node`` unless it is a Kubernetes node name usable as the ``kubernetes.io/hostname``
    label value: a lower-case DNS-1123 subdomain of at most 63 characters [RFC1123]_."""
    if len(node) > 63 or not all(_DNS_LABEL.match(part) for part in node.split(".")):
        raise AdapterError(field, f"node {node!r} is not a Kubernetes node name (lower-case DNS-1123 subdomain: "
                                  f"letters, digits, '-' and '.', at most 63 characters)")


def slurm_partition(name: str | None) -> None:
    """Refuse a ``--partition`` that is not a Slurm partition name."""
    if name is not None and (not _SLURM_NAME.match(name) or len(name) > 64):
        raise AdapterError("--partition", f"{name!r} is not a Slurm partition name (letters, digits, '.', '_' "
                                          f"and '-', a letter or digit first, at most 64 characters)")


#: the Slurm settings a tenant map may give a tenant
TENANT_KEYS = ("account", "qos", "partition")


def tenant_map(doc: object, source: str = "--tenant-map") -> dict[str, dict[str, str]]:
    """Check a tenant map: ``{tenant: {account: A, qos: Q, partition: P}}`` (each key optional),
    every value a Slurm name (as :func:`slurm_partition`); returns a plain copy.

    >>> tenant_map({"team-a": {"account": "ml", "qos": "high"}})
    {'team-a': {'account': 'ml', 'qos': 'high'}}
    >>> tenant_map({"team-a": {"account": "ml; rm -rf /"}})  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    gensolver.adapters.common.AdapterError: --tenant-map: /team-a/account: 'ml; rm -rf /' is not a Slurm name ...
    """
    if not isinstance(doc, dict):
        raise AdapterError(source, "expected a mapping of tenant to {account, qos, partition}")
    out: dict[str, dict[str, str]] = {}
    for tenant, entry in doc.items():
        if not isinstance(tenant, str) or not tenant:
            raise AdapterError(source, f"tenant {tenant!r} is not a non-empty string")
        if not isinstance(entry, dict) or not entry:
            raise AdapterError(source, f"/{tenant}: expected a mapping with some of {', '.join(TENANT_KEYS)}")
        for key, value in entry.items():
            if key not in TENANT_KEYS:
                raise AdapterError(source, f"/{tenant}: unknown key {key!r} (one of {', '.join(TENANT_KEYS)})")
            if not isinstance(value, str) or not _SLURM_NAME.match(value) or len(value) > 64:
                raise AdapterError(source, f"/{tenant}/{key}: {value!r} is not a Slurm name (letters, digits, '.', "
                                           f"'_' and '-', a letter or digit first, at most 64 characters)")
        out[tenant] = dict(entry)
    return out


def log_folder(path: str | None) -> None:
    """Refuse a ``--log-dir`` that a ``#SBATCH --output=`` directive cannot carry unquoted."""
    if path is not None and (not _PATH.match(path) or path.startswith("-")):
        raise AdapterError("--log-dir", f"{path!r}: use a folder name of letters, digits and ._/%@+,:=- only "
                                        f"(it goes into an #SBATCH directive)")


_QUANTITY = re.compile(r"^[0-9]+(\.[0-9]+)?(m|k|M|G|T|P|Ki|Mi|Gi|Ti|Pi)?$")
_SLURM_MEM = re.compile(r"^[1-9][0-9]*[KMGT]?$")


def k8s_quantity(value: str | None, field: str) -> None:
    """Refuse a CPU or memory amount that is not a plain Kubernetes quantity (``500m``, ``2``,
    ``4Gi``); ``None`` passes."""
    if value is not None and not _QUANTITY.match(value):
        raise AdapterError(field, f"{value!r} is not a Kubernetes quantity (e.g. 500m, 2, 4Gi)")


def slurm_memory(value: str | None, field: str = "--mem") -> None:
    """Refuse a ``--mem`` that is not a Slurm memory size (``4096``, ``16G``); ``None`` passes."""
    if value is not None and not _SLURM_MEM.match(value):
        raise AdapterError(field, f"{value!r} is not a Slurm memory size (a positive integer, optionally K, M, G "
                                  f"or T, e.g. 16G)")


#: a GPU's UUID as NVML reports it (``nvidia-smi -L``) and HAMi registers it: ``GPU-`` and 32
#: lower-case hex digits in groups of 8-4-4-4-12
GPU_UUID = re.compile(r"^GPU-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")


def gpu_uuid(value: str, field: str) -> None:
    """Refuse anything but a GPU UUID as NVML writes it (see :data:`GPU_UUID`): HAMi compares the
    pinned UUIDs with its cards' ids as exact strings, so another spelling matches no card.

    >>> gpu_uuid("GPU-0f95da43-eab5-e7f3-252e-39f9353f7bb2", "--gpu-uuid")
    >>> gpu_uuid("GPU-0F95DA43-EAB5-E7F3-252E-39F9353F7BB2", "--gpu-uuid")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    gensolver.adapters.common.AdapterError: --gpu-uuid: 'GPU-0F95...' is not a GPU UUID as nvidia-smi -L prints it ...
    """
    if not isinstance(value, str) or not GPU_UUID.match(value):
        shown = value if not isinstance(value, str) or len(value) <= 12 else value[:8] + "..."
        raise AdapterError(field, f"{shown!r} is not a GPU UUID as nvidia-smi -L prints it ('GPU-' and lower-case "
                                  f"hex digits 8-4-4-4-12)")


def positive_int(value: int | None, field: str) -> None:
    """Refuse anything but ``None`` or a positive integer."""
    if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
        raise AdapterError(field, f"must be a positive integer, got {value!r}")
