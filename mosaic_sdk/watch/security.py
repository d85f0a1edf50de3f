"""Who may use ``mosaic watch``: the token, the Host and Origin checks, the response headers."""

from __future__ import annotations

import ipaddress
import secrets
from http.cookies import SimpleCookie
from typing import TYPE_CHECKING
from urllib.parse import parse_qs, urlsplit

if TYPE_CHECKING:
    from starlette.datastructures import State
    from starlette.types import ASGIApp, Message, Receive, Scope, Send

TOKEN_HEADER = "x-mosaic-token"
TOKEN_COOKIE = "mosaic_watch_token"
SECURITY_HEADERS = [
    (
        b"content-security-policy",
        b"default-src 'self'; img-src 'self' blob: data:; connect-src 'self'; "
        b"object-src 'none'; base-uri 'none'; frame-ancestors 'none'; form-action 'self'",
    ),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
    (b"x-frame-options", b"DENY"),
]
_LOOPBACK_NAMES = {"localhost", "localhost.localdomain", "ip6-localhost"}


def new_token() -> str:
    return secrets.token_urlsafe(24)


def is_loopback(host: str) -> bool:
    """Whether ``host`` (an address or name to bind) is only reachable from this machine."""
    name = host.strip("[]").lower()
    if name in _LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def token_matches(given: str | None, token: str) -> bool:
    return given is not None and secrets.compare_digest(given.encode(), token.encode())


class Guard:
    """ASGI middleware applying the rules above to HTTP requests and WebSockets."""

    #: The wrapped app's ``state`` (set by :func:`mosaic_sdk.watch.app.create_app`).
    state: State

    def __init__(self, app: ASGIApp, *, token: str, loopback: bool) -> None:
        self.app = app
        self.token = token
        self.loopback = loopback

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1"): v.decode("latin-1") for k, v in scope["headers"]}
        query = parse_qs(scope.get("query_string", b"").decode("latin-1"))
        from_query = query.get("token", [None])[0]
        cookie = SimpleCookie()
        try:
            cookie.load(headers.get("cookie", ""))
        except Exception:  # noqa: BLE001 - a malformed cookie header is no cookie
            cookie = SimpleCookie()
        from_cookie = cookie[TOKEN_COOKIE].value if TOKEN_COOKIE in cookie else None
        has_token = any(
            token_matches(t, self.token)
            for t in (from_query, headers.get(TOKEN_HEADER), from_cookie)
        )
        problem = self._problem(scope, headers, has_token)
        if problem is not None:
            await self._refuse(scope, receive, send, *problem)
            return
        set_cookie = scope["type"] == "http" and token_matches(from_query, self.token)

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                extra = list(SECURITY_HEADERS)
                if set_cookie:
                    value = f"{TOKEN_COOKIE}={self.token}; Path=/; HttpOnly; SameSite=Strict"
                    extra.append((b"set-cookie", value.encode()))
                message = {**message, "headers": [*message.get("headers", []), *extra]}
            await send(message)

        await self.app(scope, receive, send_with_headers)

    def _problem(
        self, scope: Scope, headers: dict[str, str], has_token: bool
    ) -> tuple[int, str] | None:
        host = urlsplit("//" + headers.get("host", "")).hostname or ""  # [::1]:80 -> ::1
        if self.loopback and not is_loopback(host):
            return 421, (
                f"mosaic watch listens on loopback only and does not answer for host {host!r}; "
                "open the URL it printed (http://127.0.0.1:PORT/)"
            )
        origin = headers.get("origin")
        if scope["type"] == "websocket" and origin is not None:
            if urlsplit(origin).netloc.lower() != headers.get("host", "").lower():
                return 403, f"a WebSocket from another origin ({origin}) is refused"
        if not self.loopback and not has_token:
            return 403, (
                "this mosaic watch needs its token: open the URL it printed, which ends in "
                "?token=..."
            )
        return None

    async def _refuse(
        self, scope: Scope, receive: Receive, send: Send, status: int, text: str
    ) -> None:
        if scope["type"] == "websocket":
            await receive()  # websocket.connect
            await send({"type": "websocket.close", "code": 1008, "reason": text[:120]})
            return
        body = text.encode()
        headers = [(b"content-type", b"text/plain; charset=utf-8"), *SECURITY_HEADERS]
        headers.append((b"content-length", str(len(body)).encode()))
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": body})


__all__ = ["TOKEN_COOKIE", "TOKEN_HEADER", "Guard", "is_loopback", "new_token", "token_matches"]
