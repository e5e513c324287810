"""The console's sign-in through the OpenID provider, as a backend-for-frontend.

``/auth/sign-in`` sends the browser to the provider (Authorization Code with PKCE; the
state, nonce and verifier wait in a sealed, short-lived cookie); ``/auth/callback``
exchanges the code itself and sets the session cookie (``HttpOnly``, ``SameSite=Strict``,
``Secure`` behind https): no provider token reaches the browser. Every request that
carries the cookie must carry its CSRF token and come from Signoff's own origin;
``/auth/sign-out`` ends the session and offers the provider's end-session endpoint.
"""

from __future__ import annotations

import contextlib
import hmac
import html
import json
import time
from collections.abc import Mapping
from urllib.parse import urlsplit

from starlette.requests import HTTPConnection, Request
from starlette.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from starlette.routing import Route

from signoff.config import Settings
from signoff.constants import (
    CONSOLE_SESSION_COOKIE,
    CONSOLE_SESSION_PREFIX,
    CONSOLE_SIGN_IN_COOKIE,
    OIDC_SIGN_IN_SECONDS,
)
from signoff.errors import CsrfRefused, SignInRefused, SignoffError
from signoff.evidence.sealing import Sealer, SealingError
from signoff.resolvers.access.authenticator import Authenticator
from signoff.resolvers.access.sessions import csrf_of, end_session, start_session
from signoff.resolvers.access.viewer_cache import ViewerCache
from signoff.web.pages import PAGE_HEADERS, console_html

CSRF_HEADER = "x-csrf-token"
NO_STORE = {"cache-control": "no-store", "referrer-policy": "no-referrer"}


def session_cookie(connection: HTTPConnection) -> str | None:
    """The console session's token from its cookie, if it looks like one."""
    value = connection.cookies.get(CONSOLE_SESSION_COOKIE)
    return value if value and value.startswith(CONSOLE_SESSION_PREFIX) else None


def same_origin(connection: HTTPConnection, settings: Settings) -> bool:
    """Whether the request comes from a page of Signoff's own origin: the ``Origin``
    header names ``SIGNOFF_PUBLIC_URL``'s (or, unset, the address Signoff listens on).
    Never the request's ``Host``: whoever sends the request chooses it (a rebound DNS
    name, a proxy that passes it on)."""
    origin = connection.headers.get("origin")
    if origin is None:
        return False
    public = urlsplit(settings.public_base_url)
    return origin == f"{public.scheme}://{public.netloc}"


def check_cookie_request(request: Request, token: str, settings: Settings) -> None:
    """``CSRF_REFUSED`` unless a request that presents the session cookie carries the
    session's CSRF token, and, when the browser names its origin, comes from this one."""
    sent = request.headers.get(CSRF_HEADER, "")
    if not hmac.compare_digest(sent.encode(), csrf_of(token).encode()):
        raise CsrfRefused()
    if "origin" in request.headers and not same_origin(request, settings):
        raise CsrfRefused("This request comes from another site; nothing was changed.")


class ConsoleSignIn:
    """The console's page, which carries its session, and the ``/auth/*`` routes;
    ``provider`` routes only with an OpenID provider."""

    def __init__(
        self,
        settings: Settings,
        authenticator: Authenticator,
        sealer: Sealer,
        viewers: ViewerCache | None = None,
    ) -> None:
        self.settings = settings
        self.viewers = viewers
        self.authenticator = authenticator
        self.sealer = sealer
        self.secure = settings.public_base_url.startswith("https://")
        self.redirect_uri = f"{settings.public_base_url}/auth/callback"

    def routes(self) -> list[Route]:
        routes = [Route("/auth/session", self.session)]
        if self.authenticator.provider is not None:
            routes += [
                Route("/auth/sign-in", self.sign_in),
                Route("/auth/callback", self.callback),
                Route("/auth/sign-out", self.sign_out, methods=["POST"]),
            ]
        return routes

    async def session(self, request: Request) -> Response:
        """What the console offers, and the session's CSRF token when signed in."""
        body, ended = await self._session_of(request)
        response = JSONResponse(body, headers=NO_STORE)
        if ended:
            self._forget_session(response)
        return response

    async def console_page(self, request: Request) -> Response:
        """The console's page, carrying what :meth:`session` answers (a CSRF token among
        it, so the page is never stored)."""
        body, ended = await self._session_of(request)
        response = HTMLResponse(
            console_html(body), headers=PAGE_HEADERS | {"Cache-Control": "no-store"}
        )
        if ended:
            self._forget_session(response)
        return response

    async def _session_of(self, request: Request) -> tuple[dict[str, object], bool]:
        """What the console offers and whether the request is signed in; ``True`` beside
        it when its session cookie no longer holds (the answer should forget it)."""
        body: dict[str, object] = {
            "provider": self.authenticator.provider is not None,
            "tokenSignIn": self.settings.console_token_sign_in,
            "signedIn": False,
        }
        token = session_cookie(request)
        if token is not None and self.authenticator.provider is not None:
            try:
                viewer = await self.authenticator.viewer(token)
            except SignoffError as refusal:
                body["ended"] = f"{refusal.message} ({refusal.code})"
            else:
                body |= {"signedIn": True, "csrfToken": csrf_of(token), "name": viewer.actor.name}
        return body, token is not None and not body["signedIn"]

    async def sign_in(self, _: Request) -> Response:
        provider = self.authenticator.provider
        assert provider is not None
        try:
            started = await provider.authorization_request(self.redirect_uri)
        except SignoffError as refusal:
            return _refusal_page(refusal, 503)
        pending = {
            "state": started.state,
            "nonce": started.nonce,
            "verifier": started.code_verifier,
            "at": int(time.time()),
        }
        response = RedirectResponse(started.url, status_code=303, headers=NO_STORE)
        response.set_cookie(
            CONSOLE_SIGN_IN_COOKIE,
            self.sealer.seal(json.dumps(pending)),
            max_age=OIDC_SIGN_IN_SECONDS,
            path="/auth",
            secure=self.secure,
            httponly=True,
            # The provider sends the browser back with a top-level GET from its own site.
            samesite="lax",
        )
        return response

    async def callback(self, request: Request) -> Response:
        provider = self.authenticator.provider
        assert provider is not None
        try:
            pending = self._pending(request)
            code = request.query_params.get("code")
            if not code:
                error = request.query_params.get("error", "no code")
                raise SignInRefused(f"The identity provider did not sign you in ({error}).")
            tokens = await provider.exchange_code(
                code=code, code_verifier=pending["verifier"], redirect_uri=self.redirect_uri
            )
            new = await start_session(
                work=self.authenticator.work,
                provider=provider,
                tokens=tokens,
                nonce=pending["nonce"],
                sealer=self.sealer,
            )
        except SignoffError as refusal:
            refused = _refusal_page(refusal, 400)
            refused.delete_cookie(CONSOLE_SIGN_IN_COOKIE, path="/auth")
            return refused
        response = RedirectResponse("/", status_code=303, headers=NO_STORE)
        response.delete_cookie(CONSOLE_SIGN_IN_COOKIE, path="/auth")
        response.set_cookie(
            CONSOLE_SESSION_COOKIE,
            new.token,
            path="/",
            secure=self.secure,
            httponly=True,
            samesite="strict",
        )
        return response

    def _pending(self, request: Request) -> Mapping[str, str]:
        """The sign-in this browser started, if the callback's state is its state."""
        sealed = request.cookies.get(CONSOLE_SIGN_IN_COOKIE)
        if not sealed:
            raise SignInRefused("No sign-in is under way in this browser; start again.")
        try:
            pending = json.loads(self.sealer.open(sealed))
        except (SealingError, ValueError):
            raise SignInRefused("The sign-in under way cannot be read; start again.") from None
        if time.time() - pending["at"] > OIDC_SIGN_IN_SECONDS:
            raise SignInRefused("The sign-in took too long; start again.")
        state = request.query_params.get("state", "")
        if not hmac.compare_digest(state.encode(), str(pending["state"]).encode()):
            raise SignInRefused(
                "The provider's answer is for another sign-in (the state does not match).",
                reason="state",
            )
        return {k: str(v) for k, v in pending.items()}

    async def sign_out(self, request: Request) -> Response:
        provider = self.authenticator.provider
        assert provider is not None
        token = session_cookie(request)
        if token is None:
            return JSONResponse({"signedOut": True}, headers=NO_STORE)
        try:
            check_cookie_request(request, token, self.settings)
        except CsrfRefused as refusal:
            return JSONResponse(_error_body(refusal), status_code=403, headers=NO_STORE)
        ended = await end_session(work=self.authenticator.work, token=token)
        if ended is not None and self.viewers is not None:
            self.viewers.forget_actor(ended.actor_id)  # other processes: by the change feed
        end_url = None
        # Signed out of Signoff all the same when the provider cannot be reached.
        with contextlib.suppress(SignoffError):
            end_url = await provider.end_session_url(
                ended.id_token if ended is not None else None, f"{self.settings.public_base_url}/"
            )
        response = JSONResponse({"signedOut": True, "endSessionUrl": end_url}, headers=NO_STORE)
        self._forget_session(response)
        return response

    def _forget_session(self, response: Response) -> None:
        response.delete_cookie(
            CONSOLE_SESSION_COOKIE, path="/", secure=self.secure, httponly=True, samesite="strict"
        )


def _error_body(refusal: SignoffError) -> dict[str, object]:
    return {"errors": [{"message": refusal.message, "extensions": refusal.extensions}]}


def _refusal_page(refusal: SignoffError, status: int) -> HTMLResponse:
    """The console's header and why sign-in failed; its script takes the provider's code
    and state out of the address."""
    message = html.escape(refusal.message)
    page = (
        '<!doctype html><html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        "<title>Sign-in failed · Signoff</title>"
        '<link rel="stylesheet" href="/static/console/console.css">'
        '<script src="/static/console/sign-in-failed.js"></script></head><body>'
        '<header class="bar"><h1>Signoff</h1></header>'
        f'<main id="main"><h2>Sign-in failed</h2><p role="alert">{message} '
        f"({html.escape(refusal.code)})</p>"
        '<p><a href="/">Back to the console</a></p></main></body></html>'
    )
    return HTMLResponse(page, status_code=status, headers={**PAGE_HEADERS, **NO_STORE})
