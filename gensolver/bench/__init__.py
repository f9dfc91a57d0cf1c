"""Benchmark suites and the runner (``gensolver bench``).

- :mod:`.suites`: manifests of seeded instances with checksums and best known values;
  :func:`load_suite`, :func:`materialize`.
- :mod:`.runner`: :func:`run_suite` over any :class:`concurrent.futures.Executor`, resumable
  through a journal, writing CSV, JSON, a Markdown report and plots; built from :mod:`.cell`
  (one cell in a worker), :mod:`.journal` (``cells.jsonl`` and resume), :mod:`.report` (tables
  and the files written) and :mod:`.plots`.
"""

from .runner import DEFAULT_METHODS, JOURNAL, BenchResult, CellResult, read_journal, run_cell, run_suite
from .suites import (
    SUITE_SCHEMA,
    Suite,
    SuiteEntry,
    SuiteError,
    decode_instance,
    digest,
    instance_bytes,
    list_suites,
    load_entry,
    load_suite,
    materialize,
    suites_dir,
)

__all__ = [
    "run_suite",
    "run_cell",
    "read_journal",
    "BenchResult",
    "CellResult",
    "DEFAULT_METHODS",
    "JOURNAL",
    "Suite",
    "SuiteEntry",
    "SuiteError",
    "SUITE_SCHEMA",
    "load_suite",
    "load_entry",
    "list_suites",
    "materialize",
    "suites_dir",
    "digest",
    "decode_instance",
    "instance_bytes",
]
