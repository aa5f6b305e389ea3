"""Outbound provider adapters: `adapter_for(api, outbound)` and `gather`.

The API kinds are registered here, one line per adapter module, by import
(`kinds.py` says what each registration holds and who reads it): a new
provider is its adapter module plus one line below.
"""

from benchwarmers.providers import anthropic, gemini, ollama, openai
from benchwarmers.providers.base import Adapter, Target, gather
from benchwarmers.providers.kinds import ProviderKind, adapter_for, register

register(ProviderKind(openai.OpenAIAdapter, needs_key=True, default_base_url="https://api.openai.com/v1"))
register(
    ProviderKind(anthropic.AnthropicAdapter, needs_key=True, default_base_url="https://api.anthropic.com")
)
register(
    ProviderKind(
        gemini.GeminiAdapter, needs_key=True, default_base_url="https://generativelanguage.googleapis.com"
    )
)
register(ProviderKind(ollama.OllamaAdapter, needs_key=False, default_base_url="http://127.0.0.1:11434"))

__all__ = ["Adapter", "Target", "adapter_for", "gather"]
