"""``gensolver serve``: the market service (HTTP), and ``gensolver serve token add|list|revoke|rotate``."""

from __future__ import annotations

import gc
import json
from typing import Optional

import typer

from ..errors import require_extra
from .common import err_console, fail

__all__ = ["register"]

serve_app = typer.Typer(help="Run the market service (HTTP API, durable state, metrics, live page).",
                        invoke_without_command=True, no_args_is_help=False)
token_app = typer.Typer(help="Access tokens of the service.", no_args_is_help=True)
serve_app.add_typer(token_app, name="token")


def _settings(**kw):
    for module in ("fastapi", "uvicorn"):  # before any work: exit 3 and the pip install line
        require_extra(module, "service", "gensolver serve")
    from ..service import Settings

    try:
        return Settings(**kw)
    except ValueError as exc:
        fail(str(exc))


@serve_app.callback()
def serve_command(
    ctx: typer.Context,
    host: str = typer.Option("127.0.0.1", "--host", help="Address to listen on."),
    port: int = typer.Option(8000, "--port", help="TCP port."),
    db: str = typer.Option("gensolver-market.db", "--db", envvar="GENSOLVER_DATABASE",
                          help="SQLite database file (WAL; created if missing), or a postgresql:// URL (replicas)."),
    round_seconds: float = typer.Option(0.0, "--round-seconds", help="Clear a round every N seconds (0: only on POST /v1/rounds)."),
    round_lease_seconds: float = typer.Option(0.0, "--round-lease-seconds",
                                              help="Seconds the round timer's lease lasts unrenewed: how long other "
                                                   "replicas wait to take over a killed one's timer (0: three --round-seconds)."),
    gpus: str = typer.Option("node0:4x80", "--gpus", help="The cluster: NODE:COUNTxGIB[:MODEL],... (e.g. node0:4x80,node1:2x40)."),
    step_seconds: float = typer.Option(60.0, "--step-seconds", help="Seconds of one market step."),
    market: Optional[str] = typer.Option(None, "--market", help='MarketConfig options as JSON, e.g. \'{"lease": 5, "credit": {"clearing": "solver"}}\' '
                                                 '(engine "credit", the default; "engine": "auction" is deprecated).'),
    alpha: Optional[float] = typer.Option(None, "--alpha", help="Lavi–Swamy scaling, fixed before any report "
                                          "(MarketConfig.alpha; deprecated engine auction with mechanism lavi-swamy, >= 1)."),
    max_body_bytes: int = typer.Option(1 << 20, "--max-body-bytes", help="Largest request body (413 beyond)."),
    rate_limit: float = typer.Option(1000.0, "--rate-limit", help="Requests/s per verified token; 0: unlimited."),
    rate_burst: int = typer.Option(2000, "--rate-burst", help="Burst above the rate (token bucket size)."),
    address_rate_limit: float = typer.Option(2000.0, "--address-rate-limit",
                                             help="Requests/s per client address, before any token is read; 0: unlimited."),
    address_rate_burst: int = typer.Option(4000, "--address-rate-burst", help="Burst above the address rate."),
    max_solve_seconds: float = typer.Option(10.0, "--max-solve-seconds",
                                            help="Default and largest time_limit (wall-clock bound) of POST /v1/solve."),
    max_solve_work: float = typer.Option(5.0, "--max-solve-work",
                                         help="Default and largest work budget (deterministic work units) of POST /v1/solve."),
    synchronous: str = typer.Option("full", "--synchronous", help="SQLite synchronous: full (fsync each commit) or normal."),
    header_timeout: float = typer.Option(10.0, "--header-timeout", help="Seconds to send a request's head (408 beyond)."),
    body_timeout: float = typer.Option(30.0, "--body-timeout", help="Seconds to send a request's body (408 beyond)."),
    keep_alive_timeout: float = typer.Option(5.0, "--keep-alive-timeout", help="Seconds an idle connection stays open."),
    request_timeout: float = typer.Option(120.0, "--request-timeout", help="Seconds a route may take (503 beyond)."),
    max_header_bytes: int = typer.Option(64 * 1024, "--max-header-bytes", help="Largest request head (431 beyond)."),
    max_headers: int = typer.Option(100, "--max-headers", help="Most header fields per request (431 beyond)."),
    max_connections: int = typer.Option(4096, "--max-connections",
                                        help="Most open connections (beyond: the slowest waiting one is closed)."),
    max_connections_per_address: int = typer.Option(1024, "--max-connections-per-address",
                                                    help="Most open connections from one client address (beyond: closed "
                                                         "at once); 0: no cap. Raise it, or 0, behind a proxy."),
    max_tasks_per_tenant: int = typer.Option(10_000, "--max-tasks-per-tenant",
                                             help="Most waiting and running tasks per tenant (403 beyond)."),
    max_solves_per_tenant: int = typer.Option(2, "--max-solves-per-tenant",
                                              help="Most POST /v1/solve per tenant at once (429 beyond)."),
    log_level: str = typer.Option("warning", "--log-level", help="uvicorn log level."),
) -> None:
    """Serve the market on HOST:PORT (see docs/how-to/service.md)."""
    if ctx.invoked_subcommand is not None:
        return
    options = {}
    if market is not None:
        try:
            options = json.loads(market)
        except ValueError as exc:
            fail(f"--market: not JSON ({exc})")
        if not isinstance(options, dict):
            fail("--market: expected a JSON object of MarketConfig fields")
        if "solver" in options:  # renamed to method by the settings, one release more
            err_console.print("warning: --market solver is deprecated; use method (the same value)", highlight=False)
    if alpha is not None:
        if options.get("alpha", alpha) != alpha:
            fail(f"--alpha {alpha:g} and --market alpha {options['alpha']!r} disagree; give one")
        options["alpha"] = alpha
    if not 1 <= port <= 65535:
        fail(f"--port: must be in 1..65535, got {port}")
    settings = _settings(db=db, gpus=gpus, round_seconds=round_seconds, round_lease_seconds=round_lease_seconds,
                         step_seconds=step_seconds, market=options,
                         max_body_bytes=max_body_bytes, rate_limit=rate_limit, rate_burst=rate_burst,
                         address_rate_limit=address_rate_limit, address_rate_burst=address_rate_burst,
                         max_solve_seconds=max_solve_seconds, max_solve_work=max_solve_work, synchronous=synchronous,
                         header_timeout=header_timeout, body_timeout=body_timeout,
                         keep_alive_timeout=keep_alive_timeout, request_timeout=request_timeout,
                         max_header_bytes=max_header_bytes, max_headers=max_headers, max_connections=max_connections,
                         max_connections_per_address=max_connections_per_address,
                         max_tasks_per_tenant=max_tasks_per_tenant, max_solves_per_tenant=max_solves_per_tenant)
    import uvicorn

    from ..service import create_app
    from ..service.storage import StoreError

    try:
        app = create_app(settings)
    except (StoreError, OSError) as exc:
        fail(f"--db: {exc}")
    from ..service.connections import protocol_class

    config = uvicorn.Config(app, host=host, port=port, log_level=log_level, access_log=False,
                            timeout_graceful_shutdown=5, http=protocol_class(settings),
                            timeout_keep_alive=settings.keep_alive_timeout,  # type: ignore[arg-type]
                            h11_max_incomplete_event_size=settings.max_header_bytes)
    server = uvicorn.Server(config)
    # The tens of thousands of objects of the app and its libraries live as long as the process:
    # moved out of the collector's reach, a full collection (about 0.1 s on a loaded 2-core
    # machine, every few thousand connections under a flood) no longer scans them.
    gc.collect()
    gc.freeze()
    try:
        server.run()
    except (OSError, SystemExit) as exc:
        fail(f"cannot serve on {host}:{port}: {exc}", code=1)


_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


def _duration(text: Optional[str], option: str) -> Optional[float]:
    """Seconds from ``90``, ``90s``, ``15m``, ``12h`` or ``30d`` (None stays None)."""
    if text is None:
        return None
    t = text.strip().lower()
    unit = _UNITS.get(t[-1:], None)
    number = t[:-1] if unit is not None else t
    try:
        value = float(number) * (unit or 1)
    except ValueError:
        fail(f"{option}: expected a duration such as 3600, 90m, 12h or 30d, got {text!r}")
    if not 0 < value < 1e10:
        fail(f"{option}: must be a positive duration, got {text!r}")
    return value


def _open_store(db: str):
    _settings(db=db)
    from ..service.storage import StoreError, open_store

    try:
        return open_store(db)
    except (StoreError, OSError) as exc:
        fail(f"--db: {exc}")


def _when(t: Optional[float]) -> str:
    import datetime as _dt

    return "-" if t is None else _dt.datetime.fromtimestamp(t, _dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


@token_app.command("add")
def token_add(
    tenant: str = typer.Argument(..., help="Tenant the token acts for."),
    db: str = typer.Option(..., "--db", envvar="GENSOLVER_DATABASE",
                          help="The service's SQLite database, or its postgresql:// URL."),
    admin: bool = typer.Option(False, "--admin", help="An operator token (same as --role operator)."),
    role: str = typer.Option("tenant", "--role", help="tenant (its own tasks and account) or operator "
                                                      "(clear rounds, read every tenant)."),
    expires_in: Optional[str] = typer.Option(None, "--expires-in", help="Stop working after this long "
                                                                        "(3600, 90m, 12h, 30d); default: never."),
) -> None:
    """Create a token for TENANT and print it (only its salted hash is stored)."""
    from ..service.auth import ROLES, add_token, check_tenant_name

    if role not in ROLES:
        fail(f"--role: one of {', '.join(ROLES)}, got {role!r}")
    try:
        check_tenant_name(tenant)
    except ValueError as exc:
        fail(f"TENANT: {exc}")
    seconds = _duration(expires_in, "--expires-in")
    store = _open_store(db)
    import time

    try:
        token = add_token(store, tenant, admin=admin or role == "operator",
                          expires=None if seconds is None else time.time() + seconds)
    finally:
        store.close()
    typer.echo(token)


@token_app.command("list")
def token_list(
    db: str = typer.Option(..., "--db", envvar="GENSOLVER_DATABASE",
                          help="The service's SQLite database, or its postgresql:// URL."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON instead of a table."),
) -> None:
    """List every token: id, tenant, role, created, expires, revoked, status (never a secret)."""
    from ..service.auth import list_tokens

    store = _open_store(db)
    try:
        rows = list_tokens(store)
    finally:
        store.close()
    if as_json:
        typer.echo(json.dumps(rows, indent=2))
        return
    typer.echo(f"{'id':<12}  {'tenant':<20}  {'role':<8}  {'created':<20}  {'expires':<20}  {'revoked':<20}  status")
    for r in rows:
        typer.echo(f"{r['id']:<12}  {r['tenant']:<20}  {r['role']:<8}  {_when(r['created']):<20}  "
                   f"{_when(r['expires']):<20}  {_when(r['revoked']):<20}  {r['status']}")


@token_app.command("revoke")
def token_revoke(
    token_id: str = typer.Argument(..., help="The token's id (the 12 hex digits after gs_; see token list)."),
    db: str = typer.Option(..., "--db", envvar="GENSOLVER_DATABASE",
                          help="The service's SQLite database, or its postgresql:// URL."),
) -> None:
    """Revoke a token: a running service refuses it from its next request on."""
    from ..service.auth import revoke_token
    from ..service.errors import NotFound

    store = _open_store(db)
    try:
        revoke_token(store, token_id)
    except NotFound as exc:
        fail(f"TOKEN_ID: {exc}")
    finally:
        store.close()
    typer.echo(f"revoked {token_id}")


@token_app.command("rotate")
def token_rotate(
    token_id: str = typer.Argument(..., help="The token's id (see token list)."),
    db: str = typer.Option(..., "--db", envvar="GENSOLVER_DATABASE",
                          help="The service's SQLite database, or its postgresql:// URL."),
    grace: Optional[str] = typer.Option(None, "--grace", help="Keep the old token working this long "
                                                              "(e.g. 10m); default: revoked at once."),
    expires_in: Optional[str] = typer.Option(None, "--expires-in", help="The new token's lifetime; default: never."),
) -> None:
    """Issue a new token for the same tenant and role, print it, and retire the old one."""
    import time

    from ..service.auth import rotate_token
    from ..service.errors import NotFound

    grace_s = _duration(grace, "--grace") or 0.0
    seconds = _duration(expires_in, "--expires-in")
    store = _open_store(db)
    try:
        token = rotate_token(store, token_id, grace=grace_s, expires=None if seconds is None else time.time() + seconds)
    except NotFound as exc:
        fail(f"TOKEN_ID: {exc}")
    finally:
        store.close()
    typer.echo(token)


def register(app: typer.Typer) -> None:
    """Add ``serve`` (and ``serve token add``) to ``app``."""
    app.add_typer(serve_app, name="serve")
