"""A ``gensolver`` command line with one extra solver method, ``block``, that marks a file and then
blocks until killed: the signal tests start it as a script, so that the bench pool's spawned workers
(which re-run this module as ``__mp_main__``) know the method too.

Usage: ``python _signal_driver.py MARKER_DIR gensolver-args...``
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

from gensolver.solvers.registry import Method, register

MARKS = Path(os.environ.get("GENSOLVER_TEST_MARKS", "."))


def block(instance, **_kw):  # type: ignore[no-untyped-def]
    """Mark that a worker is busy, then wait to be killed (the test signals the command meanwhile)."""
    (MARKS / f"busy-{os.getpid()}").write_text("")
    while True:
        time.sleep(0.1)


# registered only where this file runs as the program (``__main__``) or re-runs in the bench pool's
# spawned workers (``__mp_main__``): never when pytest imports it (``--doctest-modules`` collects
# every module under tests/), where a blocking method would join every "each method" test
if __name__ in ("__main__", "__mp_main__"):
    register(Method(name="block", target=block, exact=False, requires=(), description="blocks until killed"),
             replace=True)

if __name__ == "__main__":
    from gensolver.cli import main

    sys.exit(main(sys.argv[1:]))
