"""LLM providers over httpx, shared by relationship extraction and (later) the Memory Writer."""

from reos_memory.llm.client import LLMClient, LLMError, LLMSettings

__all__ = ["LLMClient", "LLMError", "LLMSettings"]
