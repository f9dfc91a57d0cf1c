"""The suite's ceilings on waits grow with the machine's load (tests/patience.py)."""
import pytest

from tests.patience import PATIENCE, factor_from, patience


def test_a_quiet_machine_doubles_a_ceiling_and_a_loaded_one_scales_with_its_load():
    assert factor_from(None, load=0.5, cores=2) == 2.0
    assert factor_from("", load=2.0, cores=2) == 2.0
    assert factor_from(None, load=12.0, cores=2) == 12.0  # 6 per core
    assert factor_from(None, load=400.0, cores=2) == 20.0  # capped: a hang still ends


def test_the_variable_wins_and_a_bad_value_names_it():
    assert factor_from("7.5", load=400.0, cores=1) == 7.5
    for bad in ("x", "0", "-1", "inf", "nan"):
        with pytest.raises(ValueError, match="GENSOLVER_TEST_PATIENCE"):
            factor_from(bad)


def test_every_ceiling_is_at_least_what_it_was_written_as():
    assert PATIENCE >= 1.0 and patience(30.0) >= 30.0
