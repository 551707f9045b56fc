"""The state behind the embedded proxy's HTTP API: its proxies, and Toxiproxy 2.x's routes over them.

Every method runs on the server's asyncio loop (see server.py), so proxy state is
only ever touched from one thread. Errors are ApiError(status, message); the HTTP
layer turns them into Toxiproxy's JSON error body {"error": ..., "status": ...}.
"""

from __future__ import annotations

from .. import __version__
from .link import Proxy
from .toxics import ToxicError, parse_toxic, update_toxic

VERSION = f"2.12.0-kafka-chaos-{__version__}"


class ApiError(Exception):
    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status


class ProxyRegistry:
    """All proxies of one server. Every method runs on the asyncio loop."""

    def __init__(self) -> None:
        self.proxies: dict[str, Proxy] = {}

    def _get(self, name: str) -> Proxy:
        if name not in self.proxies:
            raise ApiError(404, "proxy not found")
        return self.proxies[name]

    async def create(self, body) -> dict:
        if not isinstance(body, dict):
            raise ApiError(400, "proxy must be a JSON object")
        name, upstream = body.get("name"), body.get("upstream")
        if not name or not upstream:
            raise ApiError(400, "missing required field: name and upstream")
        if name in self.proxies:
            raise ApiError(409, "proxy already exists")
        proxy = Proxy(name, body.get("listen") or "127.0.0.1:0", upstream, body.get("enabled", True))
        if proxy.enabled:
            try:
                await proxy.start()
            except OSError as e:
                raise ApiError(500, f"listen {proxy.listen}: {e}") from e
        self.proxies[name] = proxy
        return proxy.to_json()

    async def update(self, name: str, body) -> dict:
        proxy = self._get(name)
        if not isinstance(body, dict):
            raise ApiError(400, "proxy update must be a JSON object")
        listen, upstream = body.get("listen", proxy.listen), body.get("upstream", proxy.upstream)
        enabled = bool(body.get("enabled", proxy.enabled))
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
            update_toxic(t, body if isinstance(body, dict) else {})
        except ToxicError as e:
            raise ApiError(400, str(e)) from e
        proxy.update_toxic(t)
        return t.to_json()

    async def delete_toxic(self, name: str, toxic: str) -> None:
        self._toxic(name, toxic)[0].remove_toxic(toxic)

    async def route(self, method: str, path: str, body) -> tuple[int, object]:
        """Map one API request to (status, JSON body); Toxiproxy 2.x routes and codes."""
        parts = [p for p in path.split("?")[0].split("/") if p]
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
                return 201, {"proxies": await self.populate(body)}
            case ("GET", ["proxies", name]):
                return 200, self._get(name).to_json()
            case ("POST" | "PATCH", ["proxies", name]):
                return 200, await self.update(name, body)
            case ("DELETE", ["proxies", name]):
                await self.delete(name)
                return 204, None
            case ("GET", ["proxies", name, "toxics"]):
                return 200, [t.to_json() for t in self._get(name).toxics.values()]
            case ("POST", ["proxies", name, "toxics"]):
                return 200, await self.add_toxic(name, body)
            case ("GET", ["proxies", name, "toxics", toxic]):
                return 200, await self.get_toxic(name, toxic)
            case ("POST" | "PATCH", ["proxies", name, "toxics", toxic]):
                return 200, await self.update_toxic(name, toxic, body)
            case ("DELETE", ["proxies", name, "toxics", toxic]):
                await self.delete_toxic(name, toxic)
                return 204, None
        raise ApiError(404, "not found" if method in ("GET", "POST", "DELETE", "PATCH") else "method not allowed")

    async def populate(self, body) -> list[dict]:
        if not isinstance(body, list):
            raise ApiError(400, "populate takes a JSON list of proxies")
        out = []
        for item in body:
            existing = self.proxies.get(item.get("name")) if isinstance(item, dict) else None
            if existing is not None:
                out.append(await self.update(existing.name, item))
            else:
                out.append(await self.create(item))
        return out
