"""The checks of ``simulate``'s and ``round``'s options raise :class:`~gensolver.errors.InputError`
(a :class:`~gensolver.errors.GensolverError`, still a ``ValueError``), not a plain ``ValueError``."""

from __future__ import annotations

import pytest

from gensolver.cli.sim_cmd import _parse_gpus
from gensolver.errors import GensolverError


@pytest.mark.parametrize("text", ["80,,x", "80,-1", "nan"])
def test_a_bad_gpus_option_is_an_input_error_naming_it(text: str) -> None:
    with pytest.raises(GensolverError, match="--gpus") as info:
        _parse_gpus(text)
    assert isinstance(info.value, ValueError)  # callers that catch ValueError still do
