"""``gensolver serve`` and its token commands (:mod:`gensolver.cli.serve_cmd`), in process: a
token's life (add, list, rotate, revoke) read back from ``token list --json``, the printed token
accepted by the service's own check until revoked, and bad options refused with exit 2 naming
them, before any database or server is opened."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("fastapi", reason="the service extra (fastapi) is not installed")

from gensolver.cli import main  # noqa: E402


def _run(capsys, *args: str) -> tuple[int, str, str]:
    rc = main(list(args))
    cap = capsys.readouterr()
    return rc, cap.out, cap.err


def _tokens(capsys, db: str) -> dict[str, dict]:
    rc, out, _ = _run(capsys, "serve", "token", "list", "--db", db, "--json")
    assert rc == 0
    return {r["id"]: r for r in json.loads(out)}


def test_a_tokens_life_as_the_list_shows_it(tmp_path, capsys) -> None:
    from gensolver.service.auth import verify_token
    from gensolver.service.storage import open_store

    db = str(tmp_path / "m.db")
    rc, out, _ = _run(capsys, "serve", "token", "add", "alice", "--db", db, "--role", "operator")
    token = out.strip()
    assert rc == 0 and token.startswith("gs_")
    (tid, row), = _tokens(capsys, db).items()
    assert token.startswith(f"gs_{tid}") and (row["tenant"], row["role"], row["status"]) == ("alice", "operator", "active")
    assert token not in json.dumps(row)  # never the secret
    store = open_store(db)
    try:
        assert verify_token(store, f"Bearer {token}").tenant == "alice"
    finally:
        store.close()
    rc, out, _ = _run(capsys, "serve", "token", "rotate", tid, "--db", db)
    new = out.strip().splitlines()[0]
    assert rc == 0 and new.startswith("gs_") and new != token
    rows = _tokens(capsys, db)
    assert rows[tid]["status"] == "revoked" and len(rows) == 2
    (other,) = set(rows) - {tid}
    assert (rows[other]["tenant"], rows[other]["role"], rows[other]["status"]) == ("alice", "operator", "active")
    rc, out, _ = _run(capsys, "serve", "token", "revoke", other, "--db", db)
    assert rc == 0 and _tokens(capsys, db)[other]["status"] == "revoked"
    rc, _, err = _run(capsys, "serve", "token", "revoke", "0" * 12, "--db", db)
    assert rc == 2 and "TOKEN_ID" in err


@pytest.mark.parametrize(("args", "field"), [
    (["token", "add", "alice", "--role", "king"], "--role"),
    (["token", "add", "bad name!"], "TENANT"),
    (["token", "add", "alice", "--expires-in", "soon"], "--expires-in"),
])
def test_bad_token_options_exit_2_and_open_nothing(tmp_path, capsys, args: list[str], field: str) -> None:
    db = tmp_path / "m.db"
    rc, out, err = _run(capsys, "serve", *args, "--db", str(db))
    assert rc == 2 and field in err and out == "" and not db.exists()


@pytest.mark.parametrize(("args", "field"), [(["--market", "{not json"], "--market"),
                                              (["--gpus", "node0:0x80"], "gpus: group")])
def test_serve_refuses_bad_settings_before_starting(tmp_path, capsys, args: list[str], field: str) -> None:
    db = tmp_path / "m.db"
    rc, _, err = _run(capsys, "serve", "--db", str(db), "--port", "1", *args)
    assert rc == 2 and field in err and "Traceback" not in err and not db.exists()


def test_serve_market_solver_is_the_deprecated_alias_of_method(tmp_path, capsys) -> None:
    """``--market '{"solver": ...}'`` warns on stderr and is read as ``method``: an unknown
    method is refused by name (exit 2) before the server starts."""
    from gensolver import GensolverDeprecationWarning

    db = tmp_path / "m.db"
    with pytest.warns(GensolverDeprecationWarning, match="market: option solver is deprecated"):
        rc, _, err = _run(capsys, "serve", "--db", str(db), "--port", "1",
                          "--market", '{"engine": "auction", "solver": "nope"}')
    assert rc == 2 and "--market solver is deprecated; use method" in err
    assert "unknown method 'nope'" in err and "Traceback" not in err and not db.exists()
