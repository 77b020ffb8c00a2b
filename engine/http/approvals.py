"""The approval queue over HTTP, for a headless ``ava-engine serve`` whose operator has no console.

Why it exists: without an attached approver the engine denies a call that needs approval at once (nothing may
hang on a person who is not there). With ``engine.approvals.http: true`` the HTTP API attaches as the approver,
so such calls wait (up to ``engine.approvals.timeout_ms``) for an operator's tool or script to answer:

* ``GET /approvals`` → ``{"approvals": [...pending, oldest first...], "approvers": [...]}`` (arguments masked)
* ``POST /approvals/{id}/approve`` (body optional: ``{"by": "name"}``)
* ``POST /approvals/{id}/deny`` (body optional: ``{"reason": "...", "by": "name"}``)

Letting a destructive tool run is a decision, so answering needs an authenticated request (``engine.http.
auth_token`` set and sent; the config refuses ``approvals.http`` without a token), on top of the guard's Host,
Origin and JSON-body checks that every route has. The list is readable like ``/mcp/status``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from aiohttp import web

from engine.config.models import Settings
from engine.http.backend import AUTHENTICATED
from engine.http.body import BodyError, read_json
from engine.http.responses import error, json_response
from engine.tools.approvals import ApprovalDesk, ApprovalError, answer_text

ANSWER_NEEDS_TOKEN = (
    "answering an approval lets a tool run (or not), so it needs an authenticated request: set "
    "engine.http.auth_token and send 'Authorization: Bearer <token>'"
)


class HttpApprovals:
    """An engine component: attaches the HTTP API as an approver while ``engine.approvals.http`` is on."""

    name = "approvals_http"

    def __init__(self, desk: ApprovalDesk, settings: Callable[[], Settings]) -> None:
        self.desk = desk
        self._settings = settings
        self._detach: Callable[[], None] | None = None

    def _follow(self, settings: Settings) -> None:
        wanted = settings.engine.approvals.http
        if wanted and self._detach is None:
            self._detach = self.desk.attach("http api")
        elif not wanted and self._detach is not None:
            self._detach()
            self._detach = None

    async def start(self) -> None:
        self._follow(self._settings())

    async def stop(self) -> None:
        if self._detach is not None:
            self._detach()
            self._detach = None

    async def reload(self, old: Settings, new: Settings) -> None:
        self._follow(new)

    def install_routes(self, app: web.Application) -> None:
        app.router.add_get("/approvals", self.list_approvals)
        app.router.add_post("/approvals/{approval_id}/approve", self.approve)
        app.router.add_post("/approvals/{approval_id}/deny", self.deny)

    async def list_approvals(self, request: web.Request) -> web.Response:
        pending = [dataclasses.asdict(p) for p in self.desk.pending()]
        return json_response({"approvals": pending, "approvers": list(self.desk.approvers)})

    async def approve(self, request: web.Request) -> web.Response:
        return await self._answer(request, approve=True)

    async def deny(self, request: web.Request) -> web.Response:
        return await self._answer(request, approve=False)

    async def _answer(self, request: web.Request, *, approve: bool) -> web.Response:
        if not request.get(AUTHENTICATED, False):
            return error(403, ANSWER_NEEDS_TOKEN, key="engine.http.auth_token")
        approval_id = request.match_info["approval_id"]
        try:
            body = await read_json(request, self._settings().engine.http.max_body_bytes)
            by, reason = _fields(body)
        except BodyError as e:
            return error(e.status, e.message, key=e.key)
        try:
            if approve:
                self.desk.approve(approval_id, by)
            else:
                self.desk.deny(approval_id, reason, by)
        except ApprovalError as e:
            return error(404 if "no pending approval" in str(e) else 409, str(e))
        return json_response({"approval_id": approval_id, "outcome": "approved" if approve else "denied", "by": by})


def _fields(body: Any) -> tuple[str, str]:
    """``by`` (default "operator (http)") and ``reason`` from an optional JSON object body, each checked by
    ``answer_text`` (``BodyError`` 400 naming the field: nothing is applied)."""
    if body is None:
        return "operator (http)", ""
    if not isinstance(body, dict):
        raise BodyError(400, 'the body must be a JSON object like {"reason": "...", "by": "..."} or empty')
    unknown = sorted(set(body) - {"by", "reason"})
    if unknown:
        raise BodyError(400, f"unknown key(s) {', '.join(map(repr, unknown))} (known: 'by', 'reason')")
    out: list[str] = []
    for key, default, limit in (("by", "operator (http)", 80), ("reason", "", 300)):
        try:  # the whole answer is checked before any of it is applied
            value = answer_text(key, body.get(key, default), limit, name=key == "by")
        except ValueError as e:
            raise BodyError(400, str(e), key) from None
        out.append(value.strip() or default)
    return out[0], out[1]
