"""Outbound provider adapters: `adapter_for(api, http)` and `gather`."""

from benchwarmers.providers.base import Adapter, Target, adapter_for, gather

__all__ = ["Adapter", "Target", "adapter_for", "gather"]
