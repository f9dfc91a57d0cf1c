#!/usr/bin/env python
"""Check the executor on a real NVIDIA GPU: two CUDA processes share one device under grants.

The script builds a one-device plan with two tasks (each granted ``min(4 GiB, total / 8)`` of
memory and half the device's compute), runs it with :class:`gensolver.executor.PlanRunner` and
:class:`gensolver.executor.NvmlBackend`, and prints what NVML saw while they ran: each process's
device memory (``nvmlDeviceGetComputeRunningProcesses``) and the device's utilisation
(``nvmlDeviceGetUtilizationRates``). Each child allocates half of its grant and holds it for a
few seconds: with PyTorch when it is importable (after ``apply_memory_limit()``, with a few
matrix products to show utilisation), else with ``cudaMalloc`` from ``libcudart`` through
ctypes. It runs in well under 60 seconds.

It first lists NVML's devices as the executor sees them: a GPU in MIG mode appears as its MIG
instances, each with its profile (``3g.40gb``) and parent GPU, and ``--device`` may name one.
With ``--mps`` the backend checks the CUDA MPS control daemon, starting it if it is down (and
stopping it afterwards if it started it), and the two tasks run as MPS clients with their
``CUDA_MPS_ACTIVE_THREAD_PERCENTAGE``; NVML may then report their memory for the MPS server,
so only their completion is required.

Usage::

    python scripts/gpu_check.py [--device INDEX] [--hold SECONDS] [--mps]

Exit status
-----------
0  both tasks completed and NVML saw each one's memory;
1  the check ran but failed (a task did not complete, or NVML did not see its memory — inside a
   container, NVML may report host pids that do not match the executor's);
3  no NVIDIA driver was found (NVML unavailable): nothing to check on this machine;
4  no way to allocate device memory here (neither PyTorch nor libcudart is available);
5  ``--mps`` was given but the MPS control daemon is absent or does not start.
"""

from __future__ import annotations

import argparse
import ctypes.util
import importlib.util
import sys
import tempfile
import threading
from pathlib import Path

EXIT_OK, EXIT_FAILED, EXIT_NO_DRIVER, EXIT_NO_ALLOCATOR, EXIT_NO_MPS = 0, 1, 3, 4, 5

CHILD = r"""
import os, sys, time
limit = int(os.environ["GENSOLVER_MEMORY_LIMIT"])
want = limit // 2
hold = float(sys.argv[1])
try:
    import torch
except ImportError:
    torch = None
if torch is not None:
    from gensolver.executor.child import apply_memory_limit
    apply_memory_limit()
    buf = torch.empty(want, dtype=torch.uint8, device="cuda")
    buf.fill_(1)
    a = torch.randn(1024, 1024, device="cuda")
    end = time.time() + hold
    while time.time() < end:
        a = a @ a
        a = a / a.norm()
        torch.cuda.synchronize()
    print("allocated %d bytes with torch" % want, flush=True)
else:
    import ctypes
    rt = None
    for name in ("libcudart.so", "libcudart.so.12", "libcudart.so.11.0"):
        try:
            rt = ctypes.CDLL(name)
            break
        except OSError:
            pass
    if rt is None:
        print("cannot allocate: neither torch nor libcudart", flush=True)
        sys.exit(4)
    ptr = ctypes.c_void_p()
    rc = rt.cudaMalloc(ctypes.byref(ptr), ctypes.c_size_t(want))
    if rc != 0:
        print("cudaMalloc failed with cudaError %d" % rc, flush=True)
        sys.exit(5)
    rt.cudaMemset(ptr, 1, ctypes.c_size_t(want))
    rt.cudaDeviceSynchronize()
    time.sleep(hold)
    rt.cudaFree(ptr)
    print("allocated %d bytes with cudaMalloc" % want, flush=True)
"""


def _allocator() -> str | None:
    if importlib.util.find_spec("torch") is not None:
        return "torch"
    for name in ("cudart", "cudart64_12"):
        if ctypes.util.find_library(name):
            return "libcudart"
    for name in ("libcudart.so", "libcudart.so.12", "libcudart.so.11.0"):
        try:
            ctypes.CDLL(name)
            return "libcudart"
        except OSError:
            pass
    return None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", type=int, default=0, help="NVML index of the device to use (default 0)")
    parser.add_argument("--hold", type=float, default=4.0, help="seconds each child holds its memory (default 4)")
    parser.add_argument("--mps", action="store_true", help="start or check the CUDA MPS control daemon; run as MPS clients")
    args = parser.parse_args(argv)

    from gensolver.executor import (
        DevicePlan,
        ExecutionPlan,
        ExecutorPolicy,
        MpsUnavailableError,
        NvmlBackend,
        NvmlNotSupportedError,
        NvmlUnavailableError,
        PlanEntry,
        PlanRunner,
        PlanTask,
        check_plan,
    )

    try:
        nvml = NvmlBackend(mps=args.mps)
    except NvmlUnavailableError as exc:
        print(f"gpu_check: no NVIDIA driver found, nothing to check on this machine ({exc}).")
        print(f"gpu_check: exit status {EXIT_NO_DRIVER} (no NVIDIA driver).")
        return EXIT_NO_DRIVER
    except MpsUnavailableError as exc:
        print(f"gpu_check: {exc}")
        print(f"gpu_check: exit status {EXIT_NO_MPS} (no MPS control daemon).")
        return EXIT_NO_MPS
    try:
        devices = nvml.devices()
        for d in devices:
            mig = f", MIG {d.profile} on {d.parent}" if d.parent else ""
            print(f"gpu_check: device {d.index}: {d.uuid} {d.name}, {d.memory / 2**30:.1f} GiB{mig}")
        if nvml.mps is not None:
            how_mps = "started by this check" if nvml.mps.started else "already running"
            print(f"gpu_check: MPS control daemon {how_mps} ({nvml.mps.control}, pipes in {nvml.mps.pipe_directory})")
        if not devices or args.device >= len(devices):
            print(f"gpu_check: NVML lists {len(devices)} device(s); no device {args.device}.")
            return EXIT_FAILED
        dev = devices[args.device]
        how = _allocator()
        if how is None:
            print("gpu_check: cannot allocate device memory here: neither PyTorch nor libcudart is available.")
            return EXIT_NO_ALLOCATOR
        grant = min(4 << 30, dev.memory // 8)
        print(f"gpu_check: device {dev.index} {dev.name} {dev.uuid}, {dev.memory / 2**30:.1f} GiB; "
              f"two tasks granted {grant / 2**20:.0f} MiB each, 50 % compute; allocating with {how}")
        window = 30.0 + args.hold
        cmd = (sys.executable, "-c", CHILD, str(args.hold))
        entries = tuple(PlanEntry(t, dev.uuid, 0.0, window, grant, 0.5, cmd) for t in ("check-a", "check-b"))
        plan = ExecutionPlan("gpu-check", (DevicePlan(dev.uuid, dev.memory, 1.0, entries),),
                             tuple(PlanTask(t, command=cmd) for t in ("check-a", "check-b")), (), window)
        assert check_plan(plan).ok
        seen: dict[int, int] = {}
        util_max = [0, 0]
        pids: dict[str, int] = {}
        done = threading.Event()

        def on_event(rec):  # type: ignore[no-untyped-def]
            if rec["event"] == "started":
                pids[rec["task"]] = rec["pid"]

        work = Path(tempfile.mkdtemp(prefix="gensolver-gpu-check-"))
        ex = PlanRunner(plan, backend=nvml, journal=work / "journal.jsonl", time_scale=1.0, poll_interval=0.1,
                      policy=ExecutorPolicy(grace=5.0), log_dir=work / "logs", on_event=on_event)
        result = {}

        def target() -> None:
            try:
                result["report"] = ex.run(timeout=55)
            except BaseException as exc:  # reported below
                result["error"] = exc
            finally:
                done.set()

        sampler = NvmlBackend()
        thread = threading.Thread(target=target, daemon=True)
        thread.start()
        while not done.wait(0.25):
            for pid, used in sampler.process_memory(dev.uuid).items():
                if used is not None:
                    seen[pid] = max(seen.get(pid, 0), used)
            try:
                u = sampler.utilization(dev.uuid)
            except NvmlNotSupportedError:  # e.g. a MIG instance
                continue
            util_max[0] = max(util_max[0], u.gpu)
            util_max[1] = max(util_max[1], u.memory)
        sampler.close()
        if "error" in result:
            print(f"gpu_check: the executor failed: {result['error']!r} (journal {work / 'journal.jsonl'})")
            return EXIT_FAILED
        report = result["report"]
        ok = True
        print(f"gpu_check: journal {work / 'journal.jsonl'}, child logs in {work / 'logs'}")
        print(f"{'task':10} {'pid':>8} {'outcome':10} {'exit':>5} {'executor peak MiB':>18} {'NVML max MiB':>13} {'grant MiB':>10}")
        for f in report.feedback:
            pid = pids.get(f.task, -1)
            nv = seen.get(pid)
            print(f"{f.task:10} {pid:>8} {f.outcome:10} {str(f.exit_code):>5} "
                  f"{'-' if f.peak_memory is None else f'{f.peak_memory / 2**20:.0f}':>18} "
                  f"{'-' if nv is None else f'{nv / 2**20:.0f}':>13} {f.granted_memory / 2**20:>10.0f}")
            if f.outcome != "completed":
                ok = False
                if f.exit_code == EXIT_NO_ALLOCATOR:
                    print("gpu_check: the child could not allocate device memory (see its log).")
                    return EXIT_NO_ALLOCATOR
            if not nv and not args.mps:  # under MPS, NVML may count the clients' memory for the server
                ok = False
        others = sorted(set(seen) - set(pids.values()))
        if others:
            print(f"gpu_check: NVML also listed pids {others} (other processes, or host pids of a container)")
        print(f"gpu_check: device utilisation max {util_max[0]} % (kernels), {util_max[1]} % (memory)")
        print("gpu_check: OK" if ok else "gpu_check: FAILED (a task did not complete or NVML did not see its memory)")
        return EXIT_OK if ok else EXIT_FAILED
    finally:
        nvml.close()


if __name__ == "__main__":
    sys.exit(main())
