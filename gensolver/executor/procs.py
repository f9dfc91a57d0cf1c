"""Linux process helpers read from ``/proc`` (see proc(5)).

The executor identifies a process by ``(pid, start time)``: field 22 of ``/proc/<pid>/stat``,
the time the process started after system boot, in clock ticks. A pid reused by another
process has another start time, so a restarted executor never adopts a stranger.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["proc_stat", "proc_start_time", "proc_state", "is_same_process", "is_alive",
           "descendants", "find_by_env", "find_all_by_env", "safe_file_name"]


def proc_stat(pid: int) -> list[str] | None:
    """Fields of ``/proc/<pid>/stat`` (``fields[0]`` is the pid, ``fields[2]`` the state), or ``None``."""
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError, PermissionError, OSError):
        return None
    # the command name (field 2) is in parentheses and may contain spaces
    right = raw.rfind(")")
    head = raw[:right].split(" (", 1)
    rest = raw[right + 2:].split()
    return [head[0], head[1] if len(head) > 1 else ""] + rest


def proc_state(pid: int) -> str | None:
    """One-letter state (``R``, ``S``, ``T`` stopped, ``Z`` zombie, ...), or ``None`` if gone."""
    f = proc_stat(pid)
    return None if f is None else f[2]


def proc_start_time(pid: int) -> int | None:
    """Start time after boot in clock ticks (stat field 22), or ``None`` if gone."""
    f = proc_stat(pid)
    return None if f is None else int(f[21])


def is_same_process(pid: int, start_time: int | None) -> bool:
    """``True`` when ``pid`` exists, is not a zombie and (if given) has ``start_time``."""
    f = proc_stat(pid)
    if f is None or f[2] in ("Z", "X", "x"):
        return False
    return start_time is None or int(f[21]) == int(start_time)


def is_alive(pid: int) -> bool:
    """``True`` when ``pid`` exists and is not a zombie."""
    return is_same_process(pid, None)


def _ppids() -> dict[int, int]:
    out = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            f = proc_stat(int(name))
            if f is not None:
                out[int(name)] = int(f[3])
    return out


def descendants(pid: int) -> set[int]:
    """``pid`` and every live process below it in the process tree."""
    ppids = _ppids()
    children: dict[int, list[int]] = {}
    for child, parent in ppids.items():
        children.setdefault(parent, []).append(child)
    out = {pid}
    todo = [pid]
    while todo:
        for c in children.get(todo.pop(), ()):
            if c not in out:
                out.add(c)
                todo.append(c)
    return out


def find_all_by_env(name: str, value: str) -> set[int]:
    """Every live process whose environment has ``name=value`` (own processes only).

    The executor tags each launch with a unique ``GENSOLVER_RUN_ID``; processes inherit it, so
    this finds a task's processes that left its process group and session (``setsid``) or were
    re-parented to init when their parent died.
    """
    needle = f"{name}={value}".encode()
    out = set()
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            env = Path(f"/proc/{entry}/environ").read_bytes()
        except OSError:
            continue
        if needle in env.split(b"\0") and is_alive(int(entry)):
            out.add(int(entry))
    return out


def safe_file_name(name: str, *, limit: int = 120) -> str:
    """An injective file-name encoding of ``name`` (a task id, a run id).

    Letters, digits, ``_`` and ``-`` stay; ``.`` stays except first; every other character is
    ``%XX`` per UTF-8 byte (``%`` itself too), so ``"a b"`` -> ``a%20b`` and ``"a_b"`` -> ``a_b``
    never meet, and no name holds ``/``. A result longer than ``limit`` keeps its first 80
    characters and adds ``~`` and 16 hex digits of its SHA-256 (``~`` never appears otherwise).
    """
    import hashlib

    out = []
    for k, ch in enumerate(name):
        if ch.isascii() and (ch.isalnum() or ch in "_-" or (ch == "." and k > 0)):
            out.append(ch)
        else:
            out.append("".join(f"%{b:02X}" for b in ch.encode("utf-8", "surrogatepass")))
    text = "".join(out) or "%"
    if len(text) > limit:
        text = text[:80] + "~" + hashlib.sha256(name.encode("utf-8", "surrogatepass")).hexdigest()[:16]
    return text


def find_by_env(name: str, value: str) -> int | None:
    """The lowest pid of a live process whose environment has ``name=value`` (own processes
    only; see :func:`find_all_by_env`), or ``None``."""
    return min(find_all_by_env(name, value), default=None)
