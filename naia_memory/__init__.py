"""naia-memory: local-first long-term memory for AI agents.

Importing this package loads numpy only; embedders, Kiwi, Hydra and every
peer library are imported when first used.
"""
from .config import EngineConfig
from .contract import (
    ConsolidationReport,
    Decision,
    DecisionOp,
    EncodeResult,
    ImportanceScore,
    InvalidInput,
    MemoryKind,
    MemoryProvider,
    RecallHit,
    RecallResult,
    Role,
    SupportsBackup,
    SupportsBatch,
    SupportsDecay,
    SupportsGraph,
    SupportsHistory,
    SupportsImportance,
    Turn,
    UnknownMemoryError,
    capabilities_of,
)
from .engine import MemorySystem
from .llm.forget_verifier import ForgetVerifier
from .llm.reflector import LLMReflector
from .llm.summarizer import LLMSummarizer
from .ownership import VerifierRequired
from .providers import create_provider, provider_names
from .review import FactChange
from .stores.json_store import LocalStore

__version__ = "0.1.0"

__all__ = [
    "ConsolidationReport", "Decision", "DecisionOp", "EncodeResult", "EngineConfig", "FactChange", "ForgetVerifier", "ImportanceScore", "InvalidInput", "LLMReflector", "LLMSummarizer", "LocalStore",
    "MemoryKind", "MemoryProvider", "MemorySystem", "RecallHit", "RecallResult", "Role", "SupportsBackup",
    "SupportsBatch", "SupportsDecay", "SupportsGraph", "SupportsHistory", "SupportsImportance", "capabilities_of", "create_provider",
    "provider_names", "Turn", "UnknownMemoryError", "VerifierRequired",
]
