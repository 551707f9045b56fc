"""The state behind the embedded proxy's HTTP API: its proxies, and Toxiproxy 2.x's routes over them.

Every method runs on the server's asyncio loop (see server.py), so proxy state is
only ever touched from one thread. Errors are ApiError(status, message); the HTTP
layer turns them into Toxiproxy's JSON error body {"error": ..., "status": ...}.
Request bodies arrive parsed but unchecked: every field is type-checked here (or
in toxics.py) before anything changes, so a bad request is a 400, never a crash.
"""

from __future__ import annotations

import json
import re
from urllib.parse import unquote

from .. import __version__
from .guard import listen_refusal
from .link import Proxy
from .toxics import ToxicError, field_of, go_kind, parse_toxic, update_toxic

VERSION = f"2.12.0-kafka-chaos-{__version__}"

# Toxiproxy's Proxy fields and their JSON types; null means "not given", as in Go.
PROXY_FIELDS = {"name": str, "listen": str, "upstream": str, "enabled": bool}
ADDRESS = re.compile(r"(\[[0-9A-Fa-f:.]+\]|[^\s\[\]:/]*):([0-9]{1,5})")


PLAIN = "text/plain; charset=utf-8"


def go_json(value) -> bytes:
    """JSON as Go's encoding/json writes it: no spaces."""
    return json.dumps(value, separators=(",", ":")).encode()


class ApiError(Exception):
    """An error answer. As Toxiproxy's apiError (api.go): the JSON {"error", "status"} written by Go's
    http.Error, so labelled text/plain and ended by a line break."""

    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status

    def to_json(self) -> dict:
        return {"error": str(self), "status": self.status}

    def answer(self) -> tuple[bytes, str | None]:
        """(body, Content-Type)."""
        return go_json(self.to_json()) + b"\n", PLAIN


class PlainError(ApiError):
    """An answer of Go's own (router, middleware): the text as it is (no body and no type when empty)."""

    def __init__(self, status: int, text: str):
        super().__init__(status, text)

    def answer(self) -> tuple[bytes, str | None]:
        return (str(self).encode(), PLAIN) if str(self) else (b"", None)


class PopulateError(ApiError):
    """Populate's own error answer (api.go Populate): JSON labelled as such, with "proxies": null."""

    def answer(self) -> tuple[bytes, str | None]:
        return go_json({**self.to_json(), "proxies": None}), "application/json"


POPULATE_TYPE = '[]struct { toxiproxy.Proxy; Enabled *bool "json:\\"enabled\\"" }'


def proxy_fields(body, where: str = "", new: bool = False, go_value: str = "toxiproxy.Proxy") -> dict:
    """The Proxy fields given in one JSON object, type-checked as Go decodes them (names matched ignoring
    case); a `new` proxy needs name and upstream."""
    if not isinstance(body, dict):
        raise ApiError(400, f"bad request body: json: cannot unmarshal {go_kind(body)} into Go value of type "
                            f"{go_value}")
    fields = {}
    for key, kind in PROXY_FIELDS.items():
        value = field_of(body, key)
        if value is None:
            continue
        if not isinstance(value, kind):
            raise ApiError(400, f"bad request body: json: cannot unmarshal {go_kind(value, literal=False)} into "
                                f"Go struct field Proxy.{key} of type {'bool' if kind is bool else 'string'}")
        fields[key] = value
    for key in ("name", "upstream") if new else ():
        if not fields.get(key):
            raise ApiError(400, f"missing required field: {key}{where}")
    if fields.get("listen") == "":
        fields["listen"] = "127.0.0.1:0"  # Go's net.Listen("") picks a port on every address; here on loopback
    # As Toxiproxy: a listen address that cannot be listened on fails the start (500, Go's net error);
    # an upstream is only dialled when a client connects, so any string is taken (a bad one closes clients).
    if "listen" in fields and not is_address(fields["listen"]):
        net = "listen tcp: " if new else ""  # Proxy.Update resolves the address first, with its own words
        raise ApiError(500, f"{net}address {fields['listen']}: missing port in address")
    return fields


def is_address(value: str) -> bool:
    match = ADDRESS.fullmatch(value)
    return match is not None and int(match[2]) <= 65535


class ProxyRegistry:
    """All proxies of one server. Every method runs on the asyncio loop."""

    def __init__(self, api_host: str = "127.0.0.1") -> None:
        self.proxies: dict[str, Proxy] = {}
        self.api_host = api_host  # where the API listens decides where proxies may (guard.py)

    def _check_listen(self, fields: dict, which: str = "") -> None:
        refusal = listen_refusal(self.api_host, fields["listen"]) if "listen" in fields else None
        if refusal is not None:
            raise ApiError(400, which + refusal)

    def _get(self, name: str) -> Proxy:
        if name not in self.proxies:
            raise ApiError(404, "proxy not found")
        return self.proxies[name]

    async def create(self, body) -> dict:
        fields = proxy_fields(body, new=True)
        self._check_listen(fields)
        if fields["name"] in self.proxies:
            raise ApiError(409, "proxy already exists")
        return await self._create(fields)

    async def _create(self, fields: dict) -> dict:
        proxy = Proxy(fields["name"], fields.get("listen", "127.0.0.1:0"), fields["upstream"],
                      fields.get("enabled", True))
        if proxy.enabled:
            try:
                await proxy.start()
            except OSError as e:
                raise ApiError(500, f"listen {proxy.listen}: {e}") from e
        self.proxies[proxy.name] = proxy
        return proxy.to_json()

    async def update(self, name: str, body) -> dict:
        proxy, fields = self._get(name), proxy_fields(body)
        self._check_listen(fields)
        return await self._update(proxy, fields)

    async def _update(self, proxy: Proxy, fields: dict) -> dict:
        listen, upstream = fields.get("listen", proxy.listen), fields.get("upstream", proxy.upstream)
        enabled = fields.get("enabled", proxy.enabled)
        if (listen, upstream) != (proxy.listen, proxy.upstream):
            # As Toxiproxy's Proxy.Update: a new address stops the proxy, closing its
            # connections; it starts again below if it is (still) to be enabled.
            await proxy.set_enabled(False)
            proxy.listen, proxy.upstream = listen, upstream
        try:
            await proxy.set_enabled(enabled)
        except OSError as e:
            raise ApiError(500, f"listen {proxy.listen}: {e}") from e
        return proxy.to_json()

    async def populate(self, body) -> list[dict]:
        if not isinstance(body, list):
            raise ApiError(400, f"bad request body: json: cannot unmarshal {go_kind(body)} into Go value of type "
                                f"{POPULATE_TYPE}")
        # Check every proxy before changing any, as Toxiproxy's PopulateJson does.
        items = [proxy_fields(item, f" at proxy {i}", new=True, go_value=POPULATE_TYPE[2:])
                 for i, item in enumerate(body, 1)]
        for i, fields in enumerate(items, 1):
            self._check_listen(fields, f"proxy {i}: ")
        out = []
        for fields in items:
            existing = self.proxies.get(fields["name"])
            if existing is not None:
                # As Toxiproxy's AddOrReplace: the same listen and upstream keep the proxy as it is (its
                # toxics, its enabled state); anything else stops it and puts a new one, without toxics,
                # in its place.
                if (fields.get("listen", "127.0.0.1:0"), fields["upstream"]) == (existing.listen, existing.upstream):
                    out.append(existing.to_json())
                    continue
                await existing.stop()
                del self.proxies[existing.name]
            out.append(await self._create(fields))
        return out

    async def delete(self, name: str) -> None:
        await self._get(name).stop()
        del self.proxies[name]

    async def reset(self) -> None:
        for proxy in self.proxies.values():
            await proxy.set_enabled(True)
            for toxic in list(proxy.toxics):
                proxy.remove_toxic(toxic)

    async def add_toxic(self, name: str, body) -> dict:
        proxy = self._get(name)
        try:
            toxic = parse_toxic(body)
        except ToxicError as e:
            raise ApiError(400, str(e)) from e
        if toxic.name in proxy.toxics:
            raise ApiError(409, "toxic already exists")
        proxy.add_toxic(toxic)
        return toxic.to_json()

    def _toxic(self, name: str, toxic: str):
        proxy = self._get(name)
        if toxic not in proxy.toxics:
            raise ApiError(404, "toxic not found")
        return proxy, proxy.toxics[toxic]

    async def get_toxic(self, name: str, toxic: str) -> dict:
        return self._toxic(name, toxic)[1].to_json()

    async def update_toxic(self, name: str, toxic: str, body) -> dict:
        proxy, t = self._toxic(name, toxic)
        try:
            update_toxic(t, body)
        except ToxicError as e:
            raise ApiError(400, str(e)) from e
        proxy.update_toxic(t)
        return t.to_json()

    async def delete_toxic(self, name: str, toxic: str) -> None:
        self._toxic(name, toxic)[0].remove_toxic(toxic)

    async def route(self, method: str, path: str, body) -> tuple[int, object]:
        """Map one API request to (status, JSON body); Toxiproxy 2.x routes and codes."""
        parts = [unquote(p) for p in path.split("?")[0].split("/") if p]
        match (method, parts):
            case ("GET", ["version"]):
                return 200, {"version": VERSION}
            case ("POST", ["reset"]):
                await self.reset()
                return 204, None
            case ("GET", ["proxies"]):
                return 200, {n: p.to_json() for n, p in self.proxies.items()}
            case ("POST", ["proxies"]):
                return 201, await self.create(body)
            case ("POST", ["populate"]):
                try:
                    proxies = await self.populate(body)
                except ApiError as e:
                    raise PopulateError(e.status, str(e)) from e
                return 201, {"proxies": proxies or None}  # Go marshals an empty result as null
            case ("GET", ["proxies", name]):
                return 200, self._get(name).to_json()
            case ("POST" | "PATCH", ["proxies", name]):
                return 200, await self.update(name, body)
            case ("DELETE", ["proxies", name]):
                await self.delete(name)
                return 204, None
            case ("GET", ["proxies", name, "kafka"]):  # the embedded proxy's own: kafka_hold's counts
                proxy = self._get(name)
                return 200, {**proxy.kafka_requests, "toxics": {t: dict(c) for t, c in proxy.kafka_toxics.items()}}
            case ("GET", ["proxies", name, "toxics"]):
                return 200, [t.to_json() for t in self._get(name).listed()]
            case ("POST", ["proxies", name, "toxics"]):
                return 200, await self.add_toxic(name, body)
            case ("GET", ["proxies", name, "toxics", toxic]):
                return 200, await self.get_toxic(name, toxic)
            case ("POST" | "PATCH", ["proxies", name, "toxics", toxic]):
                return 200, await self.update_toxic(name, toxic, body)
            case ("DELETE", ["proxies", name, "toxics", toxic]):
                await self.delete_toxic(name, toxic)
                return 204, None
        if _is_route(parts):
            raise PlainError(405, "")  # gorilla/mux: 405, empty
        raise PlainError(404, "404 page not found\n")


def _is_route(parts: list[str]) -> bool:
    match parts:
        case ["version"] | ["reset"] | ["proxies"] | ["populate"] | ["proxies", _] | ["proxies", _, "toxics"]:
            return True
        case ["proxies", _, "toxics", _]:
            return True
    return False
