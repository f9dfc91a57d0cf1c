"""Write the Alibaba trace sample bundled as package data (``gensolver/data/traces``).

The sample keeps the header and every pod of ``openb_pod_list_default.csv`` created in
:data:`gensolver.sim.trace_workloads.DEFAULT_ALIBABA_WINDOW` (the window ``gensolver simulate
alibaba`` replays), in file order, and the whole GPU node list. Usage::

    python scripts/make_trace_sample.py ../shared/traces/alibaba-gpu-2023

The full trace comes from ``gensolver traces fetch alibaba --dir DIR`` (Weng et al., USENIX
ATC 2023; alibaba/clusterdata, ``cluster-trace-gpu-v2023``).
"""

from __future__ import annotations

import csv
import io
import sys
from pathlib import Path

from gensolver.sim.trace_workloads import DEFAULT_ALIBABA_WINDOW
from gensolver.traces import ALIBABA_NODE_FILE, ALIBABA_POD_FILE

DEST = Path(__file__).resolve().parents[1] / "gensolver" / "data" / "traces" / "alibaba-gpu-2023"


def main(source: Path) -> None:
    lo, hi = DEFAULT_ALIBABA_WINDOW
    with open(source / ALIBABA_POD_FILE, newline="") as fh:
        rows = list(csv.reader(fh))
    head = rows[0]
    col = head.index("creation_time")
    keep = [r for r in rows[1:] if r and r[col] and lo <= float(r[col]) < hi]
    buf = io.StringIO()
    csv.writer(buf, lineterminator="\n").writerows([head, *keep])
    DEST.mkdir(parents=True, exist_ok=True)
    (DEST / ALIBABA_POD_FILE).write_text(buf.getvalue())
    (DEST / ALIBABA_NODE_FILE).write_bytes((source / ALIBABA_NODE_FILE).read_bytes())
    print(f"wrote {len(keep)} pods and the node list to {DEST}")


if __name__ == "__main__":
    main(Path(sys.argv[1] if len(sys.argv) > 1 else "../shared/traces/alibaba-gpu-2023"))
