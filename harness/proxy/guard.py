"""Who may use the embedded proxy's HTTP API, and where its proxies may listen.

The API opens ports and cuts connections, and it has no authentication (nor has
Toxiproxy's), so a web page the user visits must not be able to drive it:

- Browsers are refused the way Toxiproxy refuses them (api.go,
  stopBrowsersMiddleware: 403 "User agent not allowed" when the User-Agent starts
  with "Mozilla/"), and so are requests with an Origin or Sec-Fetch-Mode header,
  which only browsers send. That covers a cross-origin "simple" POST, which a
  page can send without asking (no CORS preflight).
- The Host header must name this server. A page on a DNS-rebinding domain reaches
  127.0.0.1 under that domain's name, and browsers always send the name they used.
  A missing Host is allowed for HTTP/1.0 only: a browser never omits it.
- Proxies may only listen on loopback addresses unless the API itself was started
  on another address: then whoever reaches the API could reach the proxies anyway.
"""

from __future__ import annotations

import ipaddress
import re

BROWSER_REFUSAL = "User agent not allowed"
LOOPBACK_NAMES = ("localhost", "127.0.0.1", "::1")
HOST_HEADER = re.compile(r"(\[[^\]]+\]|[^:\[\]]+)(?::([0-9]{1,5}))?")


def canonical(host: str) -> str:
    """A host name or IP literal in one spelling: lower case, IPv6 without brackets, IPs normalised."""
    host = host.strip("[]").lower()
    try:
        return str(ipaddress.ip_address(host))
    except ValueError:
        return host


def is_ip(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
        return True
    except ValueError:
        return False


def is_loopback(host: str) -> bool:
    host = canonical(host)
    return host == "localhost" or is_ip(host) and ipaddress.ip_address(host).is_loopback


def is_wildcard(host: str) -> bool:
    return canonical(host) in ("", "0.0.0.0", "::")


class Guard:
    """The checks for one API server, bound to `host` (as given to --host) on `port`."""

    def __init__(self, host: str, port: int):
        self.host, self.port = canonical(host), port
        self.loopback_only = is_loopback(host)

    def refusal(self, headers, version: str) -> tuple[int, str] | None:
        """(status, message) when the request must be refused before it is read, else None."""
        if headers.get("User-Agent", "").startswith("Mozilla/"):
            return 403, BROWSER_REFUSAL  # Toxiproxy's exact answer
        if "Origin" in headers or "Sec-Fetch-Mode" in headers:
            return 403, "requests from web pages are not allowed"
        hosts = headers.get_all("Host") or []
        if not hosts:
            return None if version == "HTTP/1.0" else (400, "missing Host header")
        if len(hosts) > 1:
            return 400, "more than one Host header"
        if not self.host_allowed(hosts[0]):
            return 403, f"Host {hosts[0][:100]!r} is not this server's address"
        return None

    def host_allowed(self, value: str) -> bool:
        match = HOST_HEADER.fullmatch(value.strip())
        if match is None or int(match[2] or 80) != self.port:
            return False
        name = canonical(match[1])
        if name == self.host:
            return True
        wildcard = is_wildcard(self.host)
        if (self.loopback_only or wildcard) and name in LOOPBACK_NAMES:
            return True
        # Bound to every address: any IP literal of this machine may be used, and an IP
        # literal cannot be a rebound name.
        return wildcard and is_ip(name)


def listen_refusal(api_host: str, listen: str) -> str | None:
    """Why a proxy may not listen on `listen` (HOST:PORT) when the API runs on `api_host`; None if it may."""
    host = listen.rpartition(":")[0]
    if not is_loopback(api_host) or host == "" or is_loopback(host):  # "" is 127.0.0.1 here (link.py)
        return None
    return (f"listen {listen} is not a loopback address: the API runs on {api_host}, so its proxies may only "
            f"listen on 127.0.0.1, [::1] or localhost (start it on --host 0.0.0.0 to allow others)")

