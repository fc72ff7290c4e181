"""Model layer: one OpenAI-shaped chat protocol for HTTP endpoints and the embedded llama.cpp model."""

from .client import ModelClient, open_client
from .spec import ModelSpec, parse_model_spec
from .types import ChatResult, GenerationParams

__all__ = ["ChatResult", "GenerationParams", "ModelClient", "ModelSpec", "open_client", "parse_model_spec"]
