"""llmpsych: behavioural-science measurement of large language models."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("llmpsych")
except PackageNotFoundError:  # running from a source tree without installation
    __version__ = "0.0.0+source"

__all__ = ["__version__"]
