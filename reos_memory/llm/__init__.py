"""LLM providers over httpx, shared by relationship extraction and the Memory Writer."""

from reos_memory.llm.client import Completion, LLMClient, LLMError, LLMSettings

__all__ = ["Completion", "LLMClient", "LLMError", "LLMSettings"]
