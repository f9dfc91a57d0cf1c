"""The generic lazy registry and the four registries built on it."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from gensolver.errors import InputError, InputTypeError, UnknownNameError
from gensolver.registry import Registry


@pytest.fixture
def lazy_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """A module on sys.path that records being imported (a stand-in for an optional extra)."""
    name = f"gensolver_lazy_probe_{tmp_path.name.replace('-', '_')}"
    (tmp_path / f"{name}.py").write_text(textwrap.dedent("""
        class Thing:
            def __call__(self, x):
                return 2 * x
        thing = Thing()
        nested = type("N", (), {"inner": staticmethod(lambda: "deep")})
    """))
    monkeypatch.syspath_prepend(str(tmp_path))
    yield name
    sys.modules.pop(name, None)


def test_a_taken_name_is_refused_unless_replace() -> None:
    reg: Registry[int] = Registry("widget")
    reg.register("a", 1)
    with pytest.raises(InputError, match=r"widget 'a' is already registered \(pass replace=True"):
        reg.register("a", 2)
    assert reg.get("a") == 1
    reg.register("a", 2, replace=True)
    assert reg.get("a") == 2 and reg.names() == ["a"]


def test_an_unknown_name_lists_the_valid_ones() -> None:
    class UnknownWidget(UnknownNameError):
        pass

    reg: Registry[int] = Registry("widget", error=UnknownWidget)
    for name, value in (("b", 1), ("a", 2), ("c", 3)):
        reg.register(name, value)
    with pytest.raises(UnknownWidget, match=r"^unknown widget 'z'; valid widgets: a, b, c$") as info:
        reg.get("z")
    assert info.value.valid == ("b", "a", "c") and info.value.name == "z" and info.value.kind == "widget"
    assert isinstance(info.value, ValueError)
    ordered: Registry[int] = Registry("gadget", plural="", sort=False)
    ordered.register("b", 1)
    ordered.register("a", 2)
    with pytest.raises(UnknownNameError, match=r"^unknown gadget 'z'; valid: b, a$"):
        ordered["z"]


def test_bad_names_and_paths_are_refused() -> None:
    reg: Registry[object] = Registry("widget")
    with pytest.raises(InputTypeError, match="widget name must be a non-empty string"):
        reg.register("", 1)
    with pytest.raises(InputTypeError, match="widget must be a name, got int"):
        reg.get(3)  # type: ignore[arg-type]
    with pytest.raises(InputError, match="'package.module:attribute'"):
        reg.register("x", "no_colon_here")


def test_a_lazy_entry_is_imported_only_when_used(lazy_module: str) -> None:
    reg: Registry[object] = Registry("widget")
    reg.register("t", f"{lazy_module}:thing")
    reg.register("deep", f"{lazy_module}:nested.inner")
    reg.register("eager", 1)
    # listing, membership and availability do not import it
    assert reg.names() == ["t", "deep", "eager"] and "t" in reg and len(reg) == 3
    assert reg.available() == ["t", "deep", "eager"]
    assert not reg.is_loaded("t") and reg.is_loaded("eager")
    assert lazy_module not in sys.modules
    assert reg.get("t")(21) == 42  # first use imports it
    assert lazy_module in sys.modules and reg.is_loaded("t")
    assert reg.get("t") is sys.modules[lazy_module].thing
    assert reg.get("deep")() == "deep"


def test_available_checks_requirements_without_importing(lazy_module: str) -> None:
    reg: Registry[object] = Registry("widget")
    reg.register("needs-missing", f"{lazy_module}:thing", requires=("no_such_module_for_gensolver",))
    reg.register("needs-present", f"{lazy_module}:thing", requires=(lazy_module,))
    assert reg.available() == ["needs-present"]
    assert lazy_module not in sys.modules
    broken: Registry[object] = Registry("widget")
    broken.register("m", "no_such_module_for_gensolver:f")  # registering does not import
    with pytest.raises(ImportError):
        broken.get("m")


def test_snapshot_and_restore() -> None:
    reg: Registry[int] = Registry("widget")
    reg.register("a", 1)
    snap = reg.snapshot()
    reg.register("b", 2)
    reg.register("a", 3, replace=True)
    reg.restore(snap)
    assert reg.names() == ["a"] and reg.get("a") == 1


# ---------------------------------------------------------------- the four registries
def test_methods_registry() -> None:
    from gensolver.solvers import Method, UnknownMethodError, get_method, list_methods, register
    from gensolver.solvers.registry import METHODS

    greedy = get_method("greedy")
    with pytest.raises(InputError, match="method 'greedy' is already registered"):
        register(Method("greedy", greedy.target, False, (), "again"))
    with pytest.raises(UnknownMethodError, match=r"unknown method 'nope'; valid methods: .*cpsat.*greedy"):
        get_method("nope")
    assert [m.name for m in list_methods()] == METHODS.names()
    assert set(METHODS.available()) == {m.name for m in list_methods(only_available=True)}


def test_mechanisms_registry() -> None:
    from gensolver.mechanisms import MECHANISMS, UnknownMechanismError, get_mechanism, vcg

    assert get_mechanism("vcg") is vcg and set(MECHANISMS) == {"vcg", "greedy-critical", "pay-as-bid", "core", "lavi-swamy"}
    with pytest.raises(InputError, match="mechanism 'vcg' is already registered"):
        MECHANISMS.register("vcg", vcg)
    with pytest.raises(UnknownMechanismError, match=r"unknown mechanism 'x'; valid mechanisms: core, greedy-critical"):
        get_mechanism("x")


def test_families_registry() -> None:
    from gensolver.instances import FAMILIES, Family, UnknownFamilyError, generate, register_family

    snap = FAMILIES.snapshot()
    try:
        with pytest.raises(InputError, match="instance family 'gpu' is already registered"):
            register_family(Family("gpu", FAMILIES.get("scheduling").build, "again"))
        register_family(Family("tiny", FAMILIES.get("scheduling").build, "scheduling under another name"))
        assert generate("tiny", seed=1, n_goods=4, n_bids=5).n_bids == generate("scheduling", seed=1, n_goods=4,
                                                                                 n_bids=5).n_bids
        with pytest.raises(UnknownFamilyError, match="unknown instance family 'x'; valid: arbitrary, regions"):
            generate("x", seed=0)
    finally:
        FAMILIES.restore(snap)
    assert "tiny" not in FAMILIES


def test_register_policy_refuses_a_taken_name() -> None:
    """register_policy used to replace an entry silently."""
    from gensolver.sim import POLICIES, get_policy, register_policy
    from gensolver.sim.policies import Elastic, FcfsPacking

    snap = POLICIES.snapshot()
    try:
        with pytest.raises(InputError, match="policy 'elastic' is already registered"):
            register_policy("elastic", FcfsPacking)
        assert isinstance(get_policy("elastic"), Elastic)
        register_policy("elastic", FcfsPacking, replace=True)
        assert isinstance(get_policy("elastic"), FcfsPacking)
    finally:
        POLICIES.restore(snap)
    assert isinstance(get_policy("elastic"), Elastic)


def test_the_market_policy_is_loaded_lazily() -> None:
    """sim.policies names the market policy by path: importing the simulator, listing the
    policies and checking a name import neither sim.policies.market nor the market; the retired
    name ``auction`` is not listed, and resolves to the market with a GensolverDeprecationWarning."""
    code = textwrap.dedent("""
        import sys, warnings
        from gensolver.sim import get_policy, list_policies
        assert "market" in list_policies() and "auction" not in list_policies()
        assert "gensolver.sim.policies.market" not in sys.modules, "listed"
        assert "gensolver.market.engine" not in sys.modules
        assert "gensolver.market.market" not in sys.modules
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            p = get_policy("auction")
        assert type(p).__name__ == "MarketPolicy" and p.clearing == "solver", p
        assert [w.category.__name__ for w in caught] == ["GensolverDeprecationWarning"], caught
        assert "gensolver.sim.policies.auction" not in sys.modules
        print("ok")
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr
