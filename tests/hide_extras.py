"""Hide optional packages from a Python process, as if they were not installed.

``hide(["ortools", "pulp"])`` wraps every finder of :data:`sys.meta_path` so that the named
top-level packages (and their submodules) are not found: ``importlib.util.find_spec`` returns
``None`` and ``import`` raises :class:`ModuleNotFoundError` naming the package, exactly what a
Python without them does. Used by the missing-extra tests, in a fresh process (set
``GENSOLVER_TEST_HIDE=ortools,pulp`` and import this module before anything else, e.g. through
a ``.pth`` line), so that one environment with every extra stands in for one environment per
left-out extra.
"""

from __future__ import annotations

import os
import sys
from typing import Any, Iterable


class _Hiding:
    def __init__(self, inner: Any, hidden: frozenset[str]) -> None:
        self.inner = inner
        self.hidden = hidden

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> Any:
        if name.partition(".")[0] in self.hidden:
            return None
        find = getattr(self.inner, "find_spec", None)
        return None if find is None else find(name, path, target)

    def invalidate_caches(self) -> None:
        if hasattr(self.inner, "invalidate_caches"):
            self.inner.invalidate_caches()

    def __getattr__(self, attr: str) -> Any:
        return getattr(self.inner, attr)


def hide(packages: Iterable[str]) -> None:
    """Make ``packages`` (top-level names) unimportable in this process from now on."""
    hidden = frozenset(p for p in packages if p)
    if not hidden:
        return
    loaded = sorted(m for m in sys.modules if m.partition(".")[0] in hidden)
    if loaded:
        raise RuntimeError(f"already imported, cannot hide: {', '.join(loaded)}")
    sys.meta_path[:] = [_Hiding(f, hidden) for f in sys.meta_path]


hide(os.environ.get("GENSOLVER_TEST_HIDE", "").split(","))
