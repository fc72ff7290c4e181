"""The package's version, declared once: pyproject.toml reads it (``[tool.setuptools.dynamic]``).

Kept here rather than looked up with ``importlib.metadata`` at import time, which costs ~50 ms of every
command's start (it imports the ``email`` package) and gave a source tree a made-up version."""

__version__ = "0.1.0"
