"""Shared helpers for the executor tests: tiny plans, a real child program, polling."""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping

from gensolver.executor import ExecutionPlan, to_plan
from gensolver.model import Bid, Instance, Slot, Task
from tests.patience import patience

MIB = 1 << 20
GIB = 1 << 30

#: A real child: writes a marker (its environment and start time), reports its usage through the
#: documented simulated channel, sleeps, exits. argv: MARKER_DIR BYTES SECONDS EXIT [RESUME_SECONDS];
#: SECONDS < 0: wait until the file MARKER_DIR/release exists.
CHILD = r"""
import json, os, sys, time
marker, use, sleep, code = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4])
if os.environ.get("GENSOLVER_RESUME") == "1" and len(sys.argv) > 5:
    sleep = float(sys.argv[5])
env = {k: v for k, v in os.environ.items() if k.startswith(("CUDA_", "GENSOLVER_"))}
name = "%s.%s.%d" % (os.environ["GENSOLVER_TASK"], os.environ["GENSOLVER_ATTEMPT"], os.getpid())
with open(os.path.join(marker, name + ".tmp"), "w") as f:
    json.dump({"env": env, "t": time.time(), "pid": os.getpid()}, f)
os.replace(os.path.join(marker, name + ".tmp"), os.path.join(marker, name + ".json"))
p = os.environ.get("GENSOLVER_SIM_USAGE_FILE")
if p:
    tmp = p + ".tmp%d" % os.getpid()
    with open(tmp, "w") as f:
        json.dump({"pid": os.getpid(), "bytes": use, "devices": os.environ.get("CUDA_VISIBLE_DEVICES", "")}, f)
    os.replace(tmp, p)
if sleep < 0:  # wait for the test to release it
    deadline = time.time() + 120
    while not os.path.exists(os.path.join(marker, "release")) and time.time() < deadline:
        time.sleep(0.02)
else:
    time.sleep(sleep)
sys.exit(code)
"""


def child(marker: Path, use: int, seconds: float, code: int = 0, resume_seconds: float | None = None) -> tuple[str, ...]:
    argv = [sys.executable, "-c", CHILD, str(marker), str(int(use)), str(seconds), str(code)]
    if resume_seconds is not None:
        argv.append(str(resume_seconds))
    return tuple(argv)


def plan_of(devices: Mapping[str, float], tasks: Mapping[str, dict[str, Any]], *, name: str = "test") -> ExecutionPlan:
    """A plan through :func:`to_plan` from a hand-made instance with one slot per device and second.

    ``devices``: id -> GiB. ``tasks``: id -> {"at": [(device, start, end), ...], "memory": GiB,
    "compute": share, "command": argv, "preemptible": bool}.
    """
    horizon = max(e for t in tasks.values() for (_, _, e) in t["at"])
    slots = [Slot(f"{d}@{k}", {"memory": float(m), "compute": 1.0}, d, float(k), float(k + 1))
             for d, m in devices.items() for k in range(int(horizon))]
    bids, specs = [], {}
    for tid, t in tasks.items():
        demand = {f"{d}@{k}": {"memory": float(t["memory"]), "compute": float(t.get("compute", 1.0))}
                  for (d, s, e) in t["at"] for k in range(int(s), int(e))}
        bids.append(Bid(f"{tid}-bid", tid, 1.0, demand))
        specs[tid] = Task(tid, float(t["memory"]), float(t["memory"]), 1, 1.0, compute=float(t.get("compute", 1.0)),
                          preemptible=bool(t.get("preemptible", True)), command=tuple(t.get("command", ())))
    inst = Instance(tuple(slots), tuple(bids), name=name)
    return to_plan(inst, [b.id for b in bids], specs)


def wait_for(cond: Callable[[], Any], timeout: float = 30.0, interval: float = 0.02, what: str = "condition") -> Any:
    """Poll ``cond`` until truthy (returned) or fail after ``timeout`` seconds, scaled by the
    machine's load (:func:`tests.patience.patience`)."""
    timeout = patience(timeout)
    deadline = time.monotonic() + timeout
    while True:
        val = cond()
        if val:
            return val
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:g} s waiting for {what}")
        time.sleep(interval)


def markers(folder: Path) -> list[dict[str, Any]]:
    """Every marker a child wrote (one per process run)."""
    return [json.loads(p.read_text()) | {"file": p.name} for p in sorted(folder.glob("*.json"))]


def events(records: Iterable[Mapping[str, Any]], name: str, task: str | None = None) -> list[Mapping[str, Any]]:
    return [r for r in records if r["event"] == name and (task is None or r.get("task") == task)]


def kill_groups(pids: Iterable[int]) -> None:
    """Teardown: end leftover process groups started by a test (by their recorded ids)."""
    for pid in set(pids):
        for sig in (signal.SIGCONT, signal.SIGKILL):
            try:
                os.killpg(pid, sig)
            except (ProcessLookupError, PermissionError):
                pass
