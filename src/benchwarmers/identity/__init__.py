"""Identity: who is calling (`scope.Identity`: the owner or a gateway key
with its collections), the gateway keys themselves (`keys.py`: made, listed,
revoked, recognised by hash), the dashboard's login password hash
(`passwords.py`) and its sessions (`sessions.py`, rows that logout ends).
Below `core`, which enforces every access rule with it; above `store`,
where keys live."""

from benchwarmers.identity.scope import NOBODY, OWNER, Identity, may_administer, may_call

__all__ = ["NOBODY", "OWNER", "Identity", "may_administer", "may_call"]
