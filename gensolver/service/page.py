"""The live page at ``/``: rounds, a GPU x time allocation chart, credits per tenant, the queue.

Plain HTML and JavaScript shipped in the package (``static/``), no CDN and no build step: the
page polls the JSON API every two seconds (``?refresh=MS`` to change it) with the token given in
the URL fragment (``/#token=gs_...``; a fragment is never sent to the server or written to its
logs) or typed into the page, and redraws in place without reloading.
"""

from __future__ import annotations

from importlib import resources

from fastapi import FastAPI
from fastapi.responses import HTMLResponse, Response

__all__ = ["register_page"]

_STATIC = resources.files(__package__).joinpath("static")


def register_page(app: FastAPI) -> None:
    """Add ``/`` and ``/static/live.js`` to ``app``."""
    html = _STATIC.joinpath("index.html").read_text(encoding="utf-8")
    js = _STATIC.joinpath("live.js").read_text(encoding="utf-8")

    @app.get("/", response_class=HTMLResponse, include_in_schema=False)
    def index() -> HTMLResponse:
        return HTMLResponse(html, headers={"Cache-Control": "no-store"})

    @app.get("/static/live.js", include_in_schema=False)
    def live_js() -> Response:
        return Response(js, media_type="text/javascript", headers={"Cache-Control": "no-store"})
