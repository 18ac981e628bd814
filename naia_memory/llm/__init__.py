"""Optional memory-LLM: an OpenAI-compatible chat client injected by the caller."""
from .client import ChatClient, LLMError, OpenAICompatChat, ScriptedLLM
from .extractor import LLMFactExtractor, UnparseableAnswer

__all__ = ["ChatClient", "LLMError", "OpenAICompatChat", "ScriptedLLM", "LLMFactExtractor", "UnparseableAnswer"]
