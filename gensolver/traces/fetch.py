"""Download the public GPU cluster traces, checking each file's SHA-256.

One table, :data:`TRACE_SOURCES`, lists every file: its upstream URL (pinned to a commit, so the
bytes cannot change under the checksum), its size and its SHA-256. :func:`fetch_trace` writes a
trace into ``DIR/<folder>/`` — the layout the readers and ``gensolver simulate --traces-dir DIR``
expect — streaming each file into a temporary name beside its destination and renaming it only
once its size and checksum match: a failed or interrupted download leaves nothing half written.

The checksums were computed from the files at the pinned commits (``git show COMMIT:PATH |
sha256sum``). An entry whose ``sha256`` is ``None`` is downloaded with an "unverified" warning.

References
----------
.. [1] Q. Weng et al. "Beware of Fragmentation: Scheduling GPU-Sharing Workloads with
   Fragmentation Gradient Descent", USENIX ATC 2023 (alibaba/clusterdata, cluster-trace-gpu-v2023).
.. [2] M. Jeon et al. "Analysis of Large-Scale Multi-Tenant GPU Clusters for DNN Training
   Workloads", USENIX ATC 2019 (the Philly trace as derived by the Pollux authors,
   petuum/adaptdl branch osdi21-artifact).
"""

from __future__ import annotations

import hashlib
import logging
import os
import tempfile
import urllib.error
import urllib.request
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Mapping

from ..errors import GensolverError, UnknownNameError

__all__ = ["TraceFile", "TraceSource", "TRACE_SOURCES", "FetchError", "UnknownTraceError", "fetch_trace",
           "file_sha256"]

logger = logging.getLogger(__name__)

_ALIBABA = ("https://raw.githubusercontent.com/alibaba/clusterdata/7a6c496e4f4b6ce6150be8f881cb051bf2abff42/"
            "cluster-trace-gpu-v2023/csv/")
_PHILLY = ("https://raw.githubusercontent.com/petuum/adaptdl/c793c7089bd307462686339d29707925c461f9a9/"
           "simulator/traces/")
_CHUNK = 1 << 16


class FetchError(GensolverError, RuntimeError):
    """A download that failed, was too large, or does not match its checksum."""


class UnknownTraceError(UnknownNameError, KeyError):
    """A trace name missing from the table (a ``KeyError`` too); the message lists the valid ones."""

    def __str__(self) -> str:  # the message, not KeyError's quoted repr of it
        return str(self.args[0]) if self.args else ""


@dataclass(frozen=True)
class TraceFile:
    """One file of a trace.

    Attributes
    ----------
    name : str
        File name inside the trace folder.
    url : str
        Upstream URL, pinned to a commit.
    size : int
        Size in bytes; a download that grows past it is stopped.
    sha256 : str or None
        Hex SHA-256 of the file; ``None``: unverified (a warning is issued).
    """

    name: str
    url: str
    size: int
    sha256: str | None


@dataclass(frozen=True)
class TraceSource:
    """A public trace: the folder it goes to under ``DIR`` and its files."""

    name: str
    folder: str
    files: tuple[TraceFile, ...]
    citation: str
    license: str


#: the public traces, one row per file (URL pinned to a commit, size in bytes, SHA-256)
TRACE_SOURCES: Mapping[str, TraceSource] = {
    "alibaba": TraceSource(
        "alibaba", "alibaba-gpu-2023",
        (TraceFile("openb_pod_list_default.csv", _ALIBABA + "openb_pod_list_default.csv", 575_468,
                   "1ee7ed79c27a3b0861cda8ddba86a004c6aba904caafa329a76ae93ca63834a8"),
         TraceFile("openb_node_list_gpu_node.csv", _ALIBABA + "openb_node_list_gpu_node.csv", 42_353,
                   "2beca64b4d3dfa342036a34b56a495c6cef9225db836c81f541282cb1df320b5")),
        "Weng et al., USENIX ATC 2023", "for research or study purposes (alibaba/clusterdata)"),
    "philly": TraceSource(
        "philly", "philly",
        (TraceFile("philly.csv", _PHILLY + "philly.csv", 3_444_496,
                   "ebffb3dd1589bdf4e7bcd74496201c5ded1d557d498ee14f560463f37ec353da"),),
        "Jeon et al., USENIX ATC 2019", "CC-BY-4.0 (msr-fiddle/philly-traces)"),
}


def file_sha256(path: str | os.PathLike[str]) -> str:
    """Hex SHA-256 of a file's bytes."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(_CHUNK), b""):
            h.update(chunk)
    return h.hexdigest()


def _download(url: str, dest: Path, entry: TraceFile, timeout: float) -> None:
    """Stream ``url`` into ``dest`` through a temporary file; checked before the rename."""
    h = hashlib.sha256()
    n = 0
    fd, tmp = tempfile.mkstemp(prefix=f".{entry.name}.", suffix=".part", dir=dest.parent)
    try:
        with os.fdopen(fd, "wb") as out:
            try:
                with urllib.request.urlopen(url, timeout=timeout) as resp:  # noqa: S310 - https or a mirror
                    while True:
                        chunk = resp.read(_CHUNK)
                        if not chunk:
                            break
                        n += len(chunk)
                        if n > entry.size:
                            raise FetchError(f"{url}: larger than the expected {entry.size} bytes; stopped")
                        h.update(chunk)
                        out.write(chunk)
            except urllib.error.HTTPError as exc:
                raise FetchError(f"{url}: HTTP {exc.code} {exc.reason}") from None
            except (urllib.error.URLError, OSError) as exc:
                if isinstance(exc, FetchError):
                    raise
                reason = getattr(exc, "reason", None) or exc
                raise FetchError(f"{url}: {reason}") from None
        if n != entry.size:
            raise FetchError(f"{url}: got {n} bytes, expected {entry.size}")
        got = h.hexdigest()
        if entry.sha256 is not None and got != entry.sha256:
            raise FetchError(f"{url}: checksum mismatch (sha256 {got}, expected {entry.sha256})")
        os.replace(tmp, dest)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def fetch_trace(name: str, directory: str | os.PathLike[str], *, mirror: str | None = None,
                force: bool = False, timeout: float = 60.0,
                sources: Mapping[str, TraceSource] | None = None,
                progress: Callable[[TraceFile, str], None] | None = None) -> dict[str, str]:
    """Download trace ``name`` into ``directory/<folder>/`` and verify every file.

    Parameters
    ----------
    name : str
        A key of :data:`TRACE_SOURCES` (``alibaba``, ``philly``).
    directory : path-like
        Where the trace folder goes (created if missing). Pass the same folder to
        ``gensolver simulate --traces-dir``.
    mirror : str, optional, keyword-only
        Fetch ``MIRROR/<folder>/<file>`` instead of the upstream URL (same checksums).
    force : bool
        Download files that are present and match their checksum too.
    timeout : float
        Seconds of network silence before a download fails.
    sources : mapping, optional
        Another table than :data:`TRACE_SOURCES`.
    progress : callable, optional
        Called with ``(file, status)`` per file.

    Returns
    -------
    dict
        ``{file name: status}``: ``"present"`` (already there with the right checksum),
        ``"downloaded"`` or ``"downloaded (unverified)"``.

    Raises
    ------
    UnknownTraceError
        Unknown trace name (a ``KeyError``; the message lists the valid ones).
    FetchError
        A failed download, a wrong size or checksum; the file is not written.
    """
    table = TRACE_SOURCES if sources is None else sources
    if name not in table:
        raise UnknownTraceError(f"unknown trace {name!r}; valid: {', '.join(table)}", kind="trace", name=str(name),
                                valid=tuple(table))
    src = table[name]
    folder = Path(directory) / src.folder
    folder.mkdir(parents=True, exist_ok=True)
    status: dict[str, str] = {}
    for entry in src.files:
        dest = folder / entry.name
        if not force and dest.is_file() and entry.sha256 is not None and file_sha256(dest) == entry.sha256:
            st = "present"
        else:
            url = entry.url if mirror is None else f"{mirror.rstrip('/')}/{src.folder}/{entry.name}"
            logger.info("downloading %s to %s", url, dest)
            _download(url, dest, entry, timeout)
            st = "downloaded"
            if entry.sha256 is None:
                warnings.warn(f"{entry.name}: no checksum in the table; the download is unverified", stacklevel=2)
                st = "downloaded (unverified)"
        status[entry.name] = st
        if progress is not None:
            progress(entry, st)
    return status
