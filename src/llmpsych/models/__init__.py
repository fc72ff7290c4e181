"""Model layer: one OpenAI-shaped chat protocol for HTTP endpoints and the embedded llama.cpp model."""

from .chat_context import ChatContext, ChatRequest
from .client import ModelClient, open_client
from .spec import ModelSpec, parse_model_spec
from .types import ChatResult, GenerationParams

__all__ = [
    "ChatContext",
    "ChatRequest",
    "ChatResult",
    "GenerationParams",
    "ModelClient",
    "ModelSpec",
    "open_client",
    "parse_model_spec",
]
