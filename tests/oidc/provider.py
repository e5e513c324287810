"""A real OpenID provider for the tests: panva's ``oidc-provider`` under Node
(``tests/oidc_provider``, installed with ``npm ci``), with two people in different groups
and two machine clients, and keys the test holds (to rotate them, and to sign tokens the
provider would never issue)."""

from __future__ import annotations

import json
import os
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
from joserfc import jwt
from joserfc.jwk import RSAKey

from signoff.models import Role
from signoff.oidc_settings import OidcSettings, parse_claim_mapping
from tests.machine import require_node_package
from tests.processes import free_port

PROVIDER_DIR = Path(__file__).resolve().parent.parent / "oidc_provider"
AUDIENCE = "https://signoff.test/api"
OTHER_AUDIENCE = "https://elsewhere.test/api"
CONSOLE_SECRET = "console-secret-for-tests"
# The example directory and claim mapping (the README's worked example uses them too).
MAPPING = (PROVIDER_DIR / "claims.txt").read_text()
DIRECTORY: dict[str, Any] = json.loads((PROVIDER_DIR / "directory.json").read_text())


def signing_key(kid: str) -> RSAKey:
    return RSAKey.generate_key(2048, parameters={"kid": kid, "use": "sig", "alg": "RS256"})


@dataclass
class TestProvider:
    """One ``node provider.mjs`` process; ``rotate`` starts it again with a new key."""

    folder: Path
    redirect_uri: str = "http://127.0.0.1:9/auth/callback"
    post_logout_uri: str = "http://127.0.0.1:9/"
    port: int = field(default_factory=free_port)
    keys: list[RSAKey] = field(default_factory=lambda: [signing_key("k1")])
    process: subprocess.Popen[bytes] | None = None
    directory: dict[str, Any] = field(default_factory=lambda: json.loads(json.dumps(DIRECTORY)))

    __test__ = False  # not a test class, whatever its name

    @property
    def issuer(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def claims_file(self) -> Path:
        return self.folder / "claims.txt"

    def settings(self, **overrides: Any) -> OidcSettings:
        values: dict[str, Any] = {
            "issuer": self.issuer,
            "client_id": "signoff-console",
            "client_secret": CONSOLE_SECRET,
            "audience": AUDIENCE,
            "mapping": parse_claim_mapping(MAPPING),
        }
        return OidcSettings(**{**values, **overrides})

    def env(self) -> dict[str, str]:
        """``SIGNOFF_OIDC_*`` for a ``signoff serve`` that signs in here."""
        return {
            "SIGNOFF_OIDC_ISSUER": self.issuer,
            "SIGNOFF_OIDC_CLIENT_ID": "signoff-console",
            "SIGNOFF_OIDC_CLIENT_SECRET": CONSOLE_SECRET,
            "SIGNOFF_OIDC_AUDIENCE": AUDIENCE,
            "SIGNOFF_OIDC_CLAIMS_FILE": str(self.claims_file),
        }

    def set_groups(self, who: str, groups: list[str]) -> None:
        """Change someone's groups in the directory (read again on every use)."""
        self.directory["users"][who]["groups"] = groups
        self._write_directory()

    def _write_directory(self) -> None:
        (self.folder / "directory.json").write_text(json.dumps(self.directory))

    def start(self) -> None:
        node = require_node_package(PROVIDER_DIR, "oidc-provider")
        self.folder.mkdir(parents=True, exist_ok=True)
        self.claims_file.write_text(MAPPING)
        self._write_directory()
        jwks = {"keys": [key.as_dict(private=True) for key in self.keys]}
        (self.folder / "jwks.json").write_text(json.dumps(jwks))
        env = {
            **os.environ,
            "OIDC_PORT": str(self.port),
            "OIDC_JWKS_FILE": str(self.folder / "jwks.json"),
            "OIDC_DIRECTORY": str(self.folder / "directory.json"),
            "OIDC_AUDIENCES": f"{AUDIENCE},{OTHER_AUDIENCE}",
            "OIDC_CONSOLE_SECRET": CONSOLE_SECRET,
            "OIDC_REDIRECT_URI": self.redirect_uri,
            "OIDC_POST_LOGOUT_URI": self.post_logout_uri,
            "DEBUG": "",
        }
        with (self.folder / "provider.log").open("ab") as log:
            self.process = subprocess.Popen(
                [node, "provider.mjs", "--port", str(self.port)],
                cwd=PROVIDER_DIR,
                env=env,
                stdout=log,
                stderr=log,
            )
        deadline = time.monotonic() + 20
        url = f"{self.issuer}/.well-known/openid-configuration"
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError((self.folder / "provider.log").read_text()[-2000:])
            try:
                if httpx.get(url, timeout=2).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.1)
        raise RuntimeError("oidc-provider did not start")

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            self.process.wait(timeout=10)
        self.process = None

    def rotate(self, kid: str) -> None:
        """Sign with a new key from now on (the old one stays published), as a provider
        rotating its keys does; the provider restarts on the same port to take it."""
        self.stop()
        self.keys.insert(0, signing_key(kid))
        self.start()

    async def client_token(
        self, client_id: str, *, resource: str = AUDIENCE, secret: str | None = None
    ) -> str:
        """An access token from the client-credentials grant."""
        secret = secret or self.directory["clients"][client_id]["secret"]
        async with httpx.AsyncClient() as http:
            response = await http.post(
                f"{self.issuer}/token",
                data={"grant_type": "client_credentials", "resource": resource, "scope": "signoff"},
                auth=(client_id, secret),
            )
        assert response.status_code == 200, response.text
        token: str = response.json()["access_token"]
        return token

    def sign(self, claims: dict[str, Any], key: RSAKey | None = None, **header: Any) -> str:
        """A token signed as the provider would (or with ``key``), with these claims."""
        key = key or self.keys[0]
        now = int(time.time())
        body = {
            "iss": self.issuer,
            "aud": AUDIENCE,
            "sub": "agent-payments",
            "client_id": "agent-payments",
            "groups": ["signoff-agents"],
            "iat": now,
            "exp": now + 300,
            **claims,
        }
        return jwt.encode({"alg": "RS256", "typ": "at+jwt", "kid": key.kid, **header}, body, key)


__all__ = ["AUDIENCE", "OTHER_AUDIENCE", "Role", "TestProvider"]
