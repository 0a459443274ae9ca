"""Which hosts a probe may target: PROBE_ALLOWED_HOSTS, and never link-local or cloud-metadata addresses unasked."""

import ipaddress
import socket
from collections.abc import Callable

# Link-local ranges and the cloud metadata services that live on them or beside them.
BLOCKED_NETWORKS = tuple(
    ipaddress.ip_network(n)
    for n in (
        "169.254.0.0/16",  # IPv4 link-local: AWS / GCP / Azure / OCI metadata at 169.254.169.254
        "fe80::/10",  # IPv6 link-local
        "fd00:ec2::254/128",  # AWS metadata over IPv6
        "100.100.100.200/32",  # Alibaba Cloud metadata
    )
)
BLOCKED_NAMES = frozenset({"metadata", "metadata.google.internal", "instance-data", "instance-data.ec2.internal"})

Resolver = Callable[[str], list[str]]


def resolve(host: str) -> list[str]:
    """Every address a host name resolves to ([] when it does not resolve: the probe reports that later)."""
    try:
        return sorted({str(info[4][0]) for info in socket.getaddrinfo(host, None)})
    except (socket.gaierror, UnicodeError, OSError):
        return []


def _blocked_address(address: str) -> bool:
    try:
        ip = ipaddress.ip_address(address.split("%", 1)[0])
    except ValueError:
        return False
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return any(ip in network for network in BLOCKED_NETWORKS)


def parse_allowed_hosts(text: str) -> frozenset[str]:
    """PROBE_ALLOWED_HOSTS: comma-separated host names or addresses (empty: any host that is not blocked)."""
    return frozenset(h.strip().lower().strip("[]") for h in text.split(",") if h.strip())


def host_refusal(host: str, allowed: frozenset[str], resolver: Resolver = resolve) -> str | None:
    """Why the probe must not target host, or None when it may."""
    host = host.lower().strip("[]")
    if allowed:
        if host in allowed:
            return None
        return f"host '{host}' is not in PROBE_ALLOWED_HOSTS ({', '.join(sorted(allowed))})"
    if host in BLOCKED_NAMES or _blocked_address(host):
        return (
            f"host '{host}' is a link-local or cloud-metadata address; the probe will not target it "
            "unless PROBE_ALLOWED_HOSTS names it"
        )
    blocked = [a for a in resolver(host) if _blocked_address(a)]
    if blocked:
        return (
            f"host '{host}' resolves to a link-local or cloud-metadata address ({', '.join(blocked)}); "
            "the probe will not target it unless PROBE_ALLOWED_HOSTS names it"
        )
    return None
