"""hypothesis-jsonschema 0.23 calls ``many.more()``, which newer Hypothesis releases replaced
by an iterator protocol; this restores the old collection loop for it alone (the loop of
Hypothesis 6.1xx's ``conjecture.utils.many``, kept here verbatim in behaviour)."""

from __future__ import annotations

from typing import Any

from hypothesis.internal.conjecture import utils as cu


class LegacyMany:
    """``many`` with ``more()`` and ``reject()`` as hypothesis-jsonschema uses them."""

    def __init__(self, data: Any, min_size: int, max_size: float, average_size: float) -> None:
        self.min_size, self.max_size, self.data = min_size, max_size, data
        self.p_continue = cu._calc_p_continue(average_size - min_size, max_size - min_size)
        self.count = 0
        self.rejections = 0
        self.drawn = False
        self.force_stop = False
        self.rejected = False

    def more(self) -> bool:
        if self.drawn:
            self.data.stop_span()
        self.drawn = True
        self.rejected = False
        self.data.start_span(cu.ONE_FROM_MANY_LABEL)
        if self.min_size == self.max_size:
            go = self.count < self.min_size
        else:
            forced = None
            if self.force_stop:
                forced = False
            elif self.count < self.min_size:
                forced = True
            elif self.count >= self.max_size:
                forced = False
            go = self.data.draw_boolean(self.p_continue, forced=forced)
        if go:
            self.count += 1
            return True
        self.data.stop_span()
        return False

    def reject(self, why: str | None = None) -> None:
        self.count -= 1
        self.rejections += 1
        self.rejected = True
        if self.rejections > max(3, 2 * self.count):
            if self.count < self.min_size:
                self.data.mark_invalid(why)
            else:
                self.force_stop = True


def patch() -> None:
    """Give hypothesis-jsonschema the old ``many`` when the installed Hypothesis lacks ``more``."""
    from hypothesis_jsonschema import _from_schema

    if not hasattr(cu.many, "more"):
        class _Utils:
            def __getattr__(self, name: str) -> Any:
                return LegacyMany if name == "many" else getattr(cu, name)

        _from_schema.cu = _Utils()  # type: ignore[assignment]
