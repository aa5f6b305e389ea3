"""What names this machine: the loopback host names and addresses.

One rule read by the guard (a server bound to loopback trusts its callers;
beyond it, gateway keys are required), the launcher (the URL printed for a
client here), the demo (beyond loopback it makes the key its calls need)
and `quickstart` (an endpoint on this machine needs no key). A leaf module,
so the CLI reads the rule without importing the server.
"""

from __future__ import annotations

LOOPBACK_NAMES = frozenset({"127.0.0.1", "localhost", "::1"})


def is_loopback(host: str) -> bool:
    """Whether `host` (a name or an address, IPv6 bracketed or not) is this machine's loopback."""
    return host.strip("[]").lower() in LOOPBACK_NAMES or host.startswith("127.")
