"""Pure helpers over cluster metadata (no I/O of their own), shared by every backend."""

from __future__ import annotations

import time
from typing import Callable


def broker_index(advertised: dict[int, str], broker_id: int, proxy_addresses: list[str]) -> int:
    """The harness's index (0..N-1) of a Kafka broker id, through the proxy address it advertises.

    Every broker advertises its own proxy, so the address identifies the broker even
    when node ids are arbitrary (Tansu's are) or brokers were renumbered.
    """
    address = advertised.get(broker_id)
    if address is None:
        raise LookupError(f"broker id {broker_id} is not in the metadata (known: {sorted(advertised)})")
    if address not in proxy_addresses:
        raise LookupError(f"broker id {broker_id} advertises {address}, which is none of the proxies {proxy_addresses}")
    return proxy_addresses.index(address)


def leader_index(advertised: dict[int, str], leaders: dict[int, int], partition: int,
                 proxy_addresses: list[str]) -> int:
    """The index of the broker leading `partition`; leaders maps partition -> leader broker id (-1: none)."""
    if partition not in leaders:
        raise LookupError(f"partition {partition} is not in the metadata (partitions: {sorted(leaders)})")
    if leaders[partition] < 0:
        raise LookupError(f"partition {partition} has no leader right now")
    return broker_index(advertised, leaders[partition], proxy_addresses)


def unreachable_proxies(advertised: list[str], proxy_addresses: list[str]) -> list[str]:
    """Advertised addresses that are not proxies: client traffic to them would bypass every fault."""
    return sorted(a for a in advertised if a not in proxy_addresses)


WILDCARD_HOSTS = {"", "0.0.0.0", "::", "[::]"}


def split_address(address: str) -> tuple[str, int]:
    host, _, port = address.rpartition(":")
    return host, int(port)


def serves(listen: str, advertised: str) -> bool:
    """Does a proxy listening on `listen` answer at `advertised`?

    Toxiproxy in a container listens on a wildcard host ("[::]:29091") and its port is
    published on the same number, so a wildcard matches any host with the same port.
    """
    lhost, lport = split_address(listen)
    ahost, aport = split_address(advertised)
    return lport == aport and (lhost in WILDCARD_HOSTS or lhost == ahost)


def client_addresses(listens: list[str], advertised: list[str]) -> list[str | None]:
    """For each proxy, the advertised broker address it serves (None when no broker advertises it)."""
    return [next((a for a in advertised if serves(listen, a)), None) for listen in listens]


def reachable_address(listen: str, api_host: str) -> str:
    """Where a client reaches a proxy: its listen address, with a wildcard host replaced by the API's host."""
    host, port = split_address(listen)
    return f"{api_host if host in WILDCARD_HOSTS else host}:{port}"


def every_broker_registered(fetch: Callable[[], object], expected: int, timeout: float,
                            sleep: Callable[[float], None] = time.sleep,
                            clock: Callable[[], float] = time.monotonic):
    """fetch() (metadata with a .brokers dict) until it lists `expected` brokers, or the last one fetched once
    `timeout` seconds have passed: KRaft brokers register one by one after the cluster first answers, and a
    preflight that looked too early saw 2 of 3 (a --repeat run on Kafka 4.1 errored so)."""
    deadline = clock() + timeout
    while True:
        md = fetch()
        if len(md.brokers) >= expected or clock() >= deadline:
            return md
        sleep(0.25)
