"""JSON Schemas (draft 2020-12) of gensolver's document formats, shipped as package data.

==========================  =================================  ===================================
schema                      file                               reader (the authority)
==========================  =================================  ===================================
``gensolver.instance/v1``   ``instance.schema.json``           :func:`gensolver.model.from_dict`
``gensolver.gpuround/v1``   ``gpuround.schema.json``           :meth:`gensolver.model.GpuRound.from_dict`
``gensolver.plan/v1``       ``plan.schema.json``               :func:`gensolver.executor.plan_from_dict`
==========================  =================================  ===================================

The schemas state the *structure* each reader checks (types, required fields, ranges, enums);
what JSON Schema cannot say is checked only by the readers: references between parts (a bid's
slot must exist, a plan entry's task must be listed), uniqueness of ids, ``end >= start``, typo
detection of near-miss field names, and integers written as ``2.0`` (JSON Schema counts them as
integers; the gpuround reader does not). Where a reader coerces instead of checking (an instance's
falsy ``metadata`` is read as ``{}``; a plan's ``name`` and ``bid`` are read with ``str()``), the
schema states what producers must write. Every document a schema accepts but its reader refuses
is refused by the reader with a JSON pointer, so validating with the reader is always enough;
the schemas are for other languages' tooling, OpenAPI and editors. ``tests/schemas`` checks each
schema against the bundled documents and against documents the readers refuse.
"""

from __future__ import annotations

import json
from functools import cache
from importlib import resources
from typing import Any

from ..errors import InputError

__all__ = ["SCHEMA_FILES", "load_schema"]

#: schema name -> file name in this package
SCHEMA_FILES: dict[str, str] = {
    "gensolver.instance/v1": "instance.schema.json",
    "gensolver.gpuround/v1": "gpuround.schema.json",
    "gensolver.plan/v1": "plan.schema.json",
}


@cache
def _text(name: str) -> str:
    try:
        file = SCHEMA_FILES[name]
    except KeyError:
        raise InputError(f"unknown schema {name!r}; known: {', '.join(SCHEMA_FILES)}") from None
    return resources.files(__name__).joinpath(file).read_text(encoding="utf-8")


def load_schema(name: str) -> dict[str, Any]:
    """The JSON Schema of ``name`` (e.g. ``"gensolver.plan/v1"``) as a fresh dict.

    Raises
    ------
    ValueError
        An unknown schema name (the message lists the known ones).
    """
    return json.loads(_text(name))
