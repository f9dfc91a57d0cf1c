"""Coverage-guided fuzzing of gensolver's readers and command entry points (issue 32).

``python -m fuzz.run --runs 500`` runs every harness for a bounded number of inputs (what
``make test`` does, through ``tests/fuzz``); ``python -m fuzz.run --minutes 30`` is the long
run. Harnesses are in :mod:`fuzz.harnesses`; seed inputs in ``fuzz/corpus/<harness>/``.
"""
