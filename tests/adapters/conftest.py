"""A real Slurm on localhost for the adapter tests: munged, MariaDB, slurmdbd, slurmctld, slurmd.

The session fixture :func:`slurm` configures and starts the daemons in a temporary folder and
stops every one of them at the end. It needs root and the Debian packages ``slurm-wlm``,
``slurmdbd``, ``munge`` and ``mariadb-server`` (``.ci/run`` installs them); it skips, saying
why, only when they are missing or do not start.

The node is the machine's real short host name, with 64 GPUs (room for the bundled plans at
once) and 100 shards per GPU as generic resources. Two more nodes, :data:`EXTRA_NODES` with
:data:`EXTRA_GPUS` GPUs each, are further ``slurmd`` daemons on the same host (``slurmd -N
NAME``, each with its own port, spool, pid and log file through ``%n``; Slurm's way to emulate
several nodes on one machine), so that a gang runs over two nodes with ``srun``. There is no
GPU: ``gres.conf`` has ``AutoDetect=off`` and points each GPU at an empty placeholder file.
(Slurm 22.05 accepts a count-only ``Name=gpu Count=8``, but refuses shards without ``File=``
- "SHARING configuration lacks File specification" - so the GPUs get files.)
``sacct`` needs the accounting database, hence MariaDB and slurmdbd, on 127.0.0.1 only.
Scheduling runs every second (``sched_interval=1``) so that ``--begin`` times hold within a
second or two.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.patience import patience

#: enough placeholder GPUs for every bundled plan at once (8 devices each)
GPUS = 64
SHARDS_PER_GPU = 100
#: further nodes (slurmd daemons on this host) for gangs over several nodes, and their GPUs each
EXTRA_NODES = ("gsnode1", "gsnode2")
EXTRA_GPUS = 2
DAEMONS = ("munged", "mariadb-install-db", "mariadbd", "slurmdbd", "slurmctld", "slurmd", "sbatch", "sacct", "scancel",
           "sinfo", "squeue")


@dataclass(frozen=True)
class SlurmCluster:
    """The running test cluster: its folder, host (node) name and client environment."""

    root: Path
    node: str
    env: dict[str, str]
    extra_nodes: tuple[str, ...] = EXTRA_NODES
    gpus: int = GPUS
    shards_per_gpu: int = SHARDS_PER_GPU

    def run(self, *argv: str, timeout: float = 30.0) -> subprocess.CompletedProcess:
        """A Slurm client command against this cluster (``timeout`` scaled by the load:
        :func:`tests.patience.patience`)."""
        return subprocess.run(list(argv), capture_output=True, text=True, timeout=patience(timeout), env=self.env)


def _free_ports(n: int) -> list[int]:
    socks, ports = [], []
    for _ in range(n):
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        socks.append(s)
        ports.append(s.getsockname()[1])
    for s in socks:
        s.close()
    return ports


def _wait(what: str, check, timeout: float, root: Path) -> None:
    timeout = patience(timeout)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.2)
    logs = "\n".join(f"--- {p.name}\n" + "\n".join(p.read_text(errors="replace").splitlines()[-8:])
                     for p in sorted((root / "log").glob("*.log")))
    raise RuntimeError(f"{what} did not come up within {timeout:g} s\n{logs}")


def _port_open(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(0.2)
        return s.connect_ex(("127.0.0.1", port)) == 0


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def _stop(pid_files: list[Path]) -> None:
    """SIGTERM every daemon named by a pid file at once, SIGKILL those still there after 3 s
    (a throwaway cluster: nothing to save)."""
    pids = []
    for pid_file in pid_files:
        try:
            pid = int(pid_file.read_text().strip())
            os.kill(pid, signal.SIGTERM)
            pids.append(pid)
        except (OSError, ValueError):
            continue
    deadline = time.monotonic() + 3
    while time.monotonic() < deadline and any(_alive(p) for p in pids):
        time.sleep(0.1)
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def _drain(cluster: SlurmCluster) -> None:
    """Cancel every job of the cluster and wait (10 s at most) until none is left."""
    cluster.run("scancel", "--quiet", "--user=root")
    deadline = time.monotonic() + patience(10)
    while time.monotonic() < deadline:
        out = cluster.run("squeue", "--noheader", "--format=%i")
        if out.returncode != 0 or not out.stdout.split():
            return
        time.sleep(0.2)


def _stop_steps(root: Path) -> None:
    """Kill the job step daemons (slurmstepd) of this cluster that outlived slurmd: those whose
    environment names this cluster's slurm.conf (no other process is touched)."""
    conf = f"SLURM_CONF={root}/slurm.conf".encode()
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            if not (proc / "cmdline").read_bytes().startswith(b"slurmstepd") \
                    or conf not in (proc / "environ").read_bytes().split(b"\0"):
                continue
            os.kill(int(proc.name), signal.SIGKILL)
        except (OSError, ProcessLookupError):
            continue


def _configure(root: Path, node: str) -> dict[str, int]:
    names = ("ctld", "slurmd", "dbd", "db", *EXTRA_NODES)
    ports = dict(zip(names, _free_ports(len(names))))
    for d in ("state", "spool", "log", "dev", "db", "jobs"):
        (root / d).mkdir()
    for name in (node, *EXTRA_NODES):
        (root / "spool" / name).mkdir()
    for k in range(GPUS + EXTRA_GPUS * len(EXTRA_NODES)):
        (root / "dev" / f"gpu{k}").touch()
    extra = "".join(f"NodeName={name} NodeHostname={node} NodeAddr=127.0.0.1 Port={ports[name]} CPUs=8 RealMemory=1000 "
                    f"Gres=gpu:{EXTRA_GPUS} State=UNKNOWN\n" for name in EXTRA_NODES)
    extra_gres = "".join(f"NodeName={name} Name=gpu File={root}/dev/gpu[{GPUS + EXTRA_GPUS * k}-"
                         f"{GPUS + EXTRA_GPUS * (k + 1) - 1}]\n" for k, name in enumerate(EXTRA_NODES))
    (root / "munge.key").write_bytes(os.urandom(1024))
    (root / "munge.key").chmod(0o600)
    sock = root / "munge.sock"
    (root / "slurm.conf").write_text(f"""\
ClusterName=gensolvertest
SlurmctldHost={node}(127.0.0.1)
SlurmctldPort={ports['ctld']}
SlurmdPort={ports['slurmd']}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket={sock}
CredType=cred/munge
StateSaveLocation={root}/state
SlurmdSpoolDir={root}/spool/%n
SlurmctldPidFile={root}/slurmctld.pid
SlurmdPidFile={root}/slurmd-%n.pid
SlurmctldLogFile={root}/log/slurmctld.log
SlurmdLogFile={root}/log/slurmd-%n.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/backfill
SchedulerParameters=sched_interval=1,bf_interval=1
GresTypes=gpu,shard
AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost=127.0.0.1
AccountingStoragePort={ports['dbd']}
AccountingStoragePass={sock}
AccountingStorageTRES=gres/gpu,gres/shard
JobAcctGatherType=jobacct_gather/none
MpiDefault=none
MailProg=/bin/true
ReturnToService=2
SlurmdParameters=config_overrides
MinJobAge=600
InactiveLimit=0
KillWait=2
NodeName={node} NodeAddr=127.0.0.1 CPUs=256 RealMemory=1000 Gres=gpu:{GPUS},shard:{GPUS * SHARDS_PER_GPU} State=UNKNOWN
{extra}PartitionName=gensolver Nodes={node},{','.join(EXTRA_NODES)} Default=YES MaxTime=INFINITE State=UP OverSubscribe=NO
""")
    (root / "gres.conf").write_text(f"""\
AutoDetect=off
NodeName={node} Name=gpu File={root}/dev/gpu[0-{GPUS - 1}]
NodeName={node} Name=shard Count={GPUS * SHARDS_PER_GPU} File={root}/dev/gpu[0-{GPUS - 1}]
{extra_gres}""")
    (root / "slurmdbd.conf").write_text(f"""\
AuthType=auth/munge
AuthInfo=socket={sock}
DbdHost=localhost
DbdAddr=127.0.0.1
DbdPort={ports['dbd']}
SlurmUser=root
PidFile={root}/slurmdbd.pid
LogFile={root}/log/slurmdbd.log
StorageType=accounting_storage/mysql
StorageHost=127.0.0.1
StoragePort={ports['db']}
StorageUser=root
StorageLoc=slurm_acct_db
""")
    (root / "slurmdbd.conf").chmod(0o600)
    return ports


def _start(root: Path, node: str, ports: dict[str, int], env: dict[str, str], procs: list) -> None:
    def run(*argv: str | Path) -> None:
        subprocess.run([str(a) for a in argv], check=True, env=env, capture_output=True, timeout=60)

    run("munged", "--force", f"--socket={root}/munge.sock", f"--key-file={root}/munge.key",
        f"--log-file={root}/log/munged.log", f"--pid-file={root}/munged.pid", f"--seed-file={root}/munged.seed")
    run("mariadb-install-db", "--no-defaults", f"--datadir={root}/db", "--user=root",
        "--auth-root-authentication-method=normal", "--skip-test-db")
    procs.append(subprocess.Popen(
        ["mariadbd", "--no-defaults", f"--datadir={root}/db", "--user=root", "--bind-address=127.0.0.1",
         f"--port={ports['db']}", f"--socket={root}/mysql.sock", f"--pid-file={root}/mariadb.pid",
         f"--log-error={root}/log/mariadb.log"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        start_new_session=True))
    _wait("mariadbd", lambda: _port_open(ports["db"]), 30, root)
    run("slurmdbd")
    _wait("slurmdbd", lambda: _port_open(ports["dbd"]), 30, root)
    run("slurmctld", "-i")
    _wait("slurmctld", lambda: _port_open(ports["ctld"]), 30, root)
    for name in (node, *EXTRA_NODES):
        run("slurmd", "-N", name)

    def idle() -> bool:
        out = subprocess.run(["sinfo", "--noheader", "--Node", "--format=%N|%T"], capture_output=True, text=True,
                             env=env, timeout=10)
        return out.returncode == 0 and all(f"{name}|idle" in out.stdout.split() for name in (node, *EXTRA_NODES))

    _wait("the nodes (sinfo idle)", idle, 30, root)


@pytest.fixture(scope="session")
def slurm(tmp_path_factory: pytest.TempPathFactory):
    """A running single-node Slurm with accounting (see the module docstring); stopped afterwards."""
    missing = [d for d in DAEMONS if shutil.which(d) is None]
    if missing:
        pytest.skip(f"Slurm test cluster: {', '.join(missing)} not installed (apt-get install slurm-wlm slurmdbd "
                    f"munge mariadb-server; .ci/run does it)")
    if os.geteuid() != 0:
        pytest.skip("Slurm test cluster: the daemons must be started as root")
    root = tmp_path_factory.mktemp("slurm")
    root.chmod(0o755)
    node = socket.gethostname().split(".")[0]
    ports = _configure(root, node)
    env = dict(os.environ, SLURM_CONF=str(root / "slurm.conf"))
    procs: list[subprocess.Popen] = []
    try:
        try:
            _start(root, node, ports, env, procs)
        except (OSError, RuntimeError, subprocess.SubprocessError) as exc:
            detail = exc.stderr.decode(errors="replace") if isinstance(exc, subprocess.CalledProcessError) and exc.stderr else ""
            pytest.skip(f"Slurm test cluster did not start: {exc} {detail}".strip())
        cluster = SlurmCluster(root, node, env)
        yield cluster
        _drain(cluster)
    finally:
        _stop([root / f"slurmd-{name}.pid" for name in (node, *EXTRA_NODES)]
              + [root / f for f in ("slurmctld.pid", "slurmdbd.pid", "mariadb.pid", "munged.pid")])
        _stop_steps(root)
        for proc in procs:  # reap mariadbd (started here, not daemonised)
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


# ---------------------------------------------------------------------- bundled plans

def _placed(path: Path) -> bool:
    from gensolver.model import read_instance

    return all(s.gpu is not None and s.start is not None and s.end is not None for s in read_instance(path).slots)


@pytest.fixture(scope="session")
def bundled_plans(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """``gensolver plan`` on every instance of the committed suites whose slots are placed on GPUs
    and times (the others have no devices to run on): name -> plan file."""
    from gensolver.bench.suites import bundled_suites_dir
    from gensolver.cli import main

    out = tmp_path_factory.mktemp("plans")
    plans = {}
    for suite in ("smoke", "small"):
        for inst in sorted((bundled_suites_dir() / suite).glob("*.json.gz")):
            if not _placed(inst):
                continue
            name = inst.name.removesuffix(".json.gz")
            assert main(["plan", str(inst), "--output", str(out / f"{name}.json")]) == 0
            plans[name] = out / f"{name}.json"
    assert len(plans) >= 7, sorted(plans)
    return plans
