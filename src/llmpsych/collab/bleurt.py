"""BLEURT for CommonMT from a local checkpoint (``pip install 'llmpsych[bleurt]'``, PyTorch).

The thesis scores CommonMT with BLEURT-20 (×100). Its weights cannot be downloaded at run time, so
the metric is used only when the user points ``-O bleurt_checkpoint=DIR`` (or ``--bleurt-checkpoint``,
or ``options.bleurt_checkpoint`` in a run config) at a checkpoint in the Hugging Face format of the
``bleurt-pytorch`` port (e.g. a local copy of ``lucadiliello/BLEURT-20``: ``config.json`` with
``"model_type": "bleurt"``, the weights and ``spm.model``). Otherwise CommonMT uses the labelled chrF
substitute. Everything is checked when the run starts, before any model call.
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import threading
from pathlib import Path
from typing import Any

from ..config import MAX_CONFIG_BYTES
from ..errors import ConfigError, DataError
from ..userfiles import read_text

# bleurt-pytorch 0.0.1 imports helpers that transformers 5 removed, so transformers must stay below 5.
INSTALL = "pip install 'llmpsych[bleurt]' 'transformers<5'  (bleurt-pytorch, with PyTorch and transformers)"
WEIGHTS = ("model.safetensors", "pytorch_model.bin")
TOKENIZER = ("spm.model", "tokenizer.json", "vocab.txt")


def choose_metric(kind: str, metric: str, checkpoint: str | None) -> str:
    """The metric a run uses: ``bleurt`` or ``chrf`` for translation, ``native`` for other tasks.

    ``auto`` means BLEURT when a checkpoint is configured, else chrF; ``bleurt`` without a checkpoint
    is an error; ``chrf`` ignores a configured checkpoint.
    """
    if kind != "translation":
        return "native"
    if metric == "bleurt" and not checkpoint:
        raise ConfigError(
            "metric=bleurt needs a local BLEURT checkpoint",
            "add -O bleurt_checkpoint=/path/to/BLEURT-20 (a bleurt-pytorch checkpoint folder), "
            "or use the chrF substitute (metric=auto or chrf)",
        )
    if metric == "chrf":
        return "chrf"
    return "bleurt" if checkpoint else "chrf"


def check_checkpoint(path: str | Path) -> Path:
    """The checkpoint folder, after checking that it looks like a bleurt-pytorch checkpoint and that the
    ``bleurt`` extra is installed; a :class:`ConfigError` saying what is wrong otherwise."""
    folder = Path(path).expanduser()
    hint = "point bleurt_checkpoint at a bleurt-pytorch checkpoint folder (e.g. a copy of BLEURT-20)"
    if not folder.exists():
        raise ConfigError(f"BLEURT checkpoint not found: {folder}", hint)
    if not folder.is_dir():
        raise ConfigError(f"BLEURT checkpoint is not a folder: {folder}", hint)
    config_file = folder / "config.json"
    try:
        config = json.loads(read_text(config_file, "BLEURT config", MAX_CONFIG_BYTES))
    except DataError as exc:
        if not config_file.exists():
            raise ConfigError(f"BLEURT checkpoint {folder} has no config.json", hint) from None
        raise ConfigError(f"BLEURT checkpoint {folder}: {exc.message}", hint) from None
    except (OSError, ValueError, RecursionError) as exc:
        raise ConfigError(f"BLEURT checkpoint {folder}: config.json is unreadable ({exc})", hint) from None
    if not isinstance(config, dict) or config.get("model_type") != "bleurt":
        found = config.get("model_type") if isinstance(config, dict) else None
        raise ConfigError(
            f"BLEURT checkpoint {folder}: config.json has model_type {found!r}, not 'bleurt'",
            "the original TensorFlow BLEURT-20 must first be converted to the bleurt-pytorch format "
            "(or use a converted copy such as lucadiliello/BLEURT-20)",
        )
    if not any((folder / name).exists() for name in WEIGHTS):
        raise ConfigError(f"BLEURT checkpoint {folder} has no weights ({' or '.join(WEIGHTS)})", hint)
    if not any((folder / name).exists() for name in TOKENIZER):
        raise ConfigError(f"BLEURT checkpoint {folder} has no tokenizer ({' or '.join(TOKENIZER)})", hint)
    missing = [m for m in ("torch", "transformers", "bleurt_pytorch") if importlib.util.find_spec(m) is None]
    if missing:
        raise ConfigError(f"BLEURT needs {', '.join(missing)}, which is not installed", INSTALL)
    try:  # installed but incompatible (bleurt-pytorch with transformers 5) fails here, not after model calls
        import bleurt_pytorch  # noqa: F401
    except ImportError as exc:
        raise ConfigError(f"BLEURT could not be imported: {exc}", INSTALL) from None
    return folder


class BleurtScorer:
    """A BLEURT model loaded once (on first use) and run in a worker thread, one batch at a time."""

    def __init__(self, folder: Path, batch_size: int = 16) -> None:
        self.folder = folder
        self.batch_size = batch_size
        self._lock = threading.Lock()
        self._model: Any = None
        self._tokenizer: Any = None

    def _load(self) -> None:
        import torch  # noqa: F401 - fail here, with the install hint, rather than inside the port
        from bleurt_pytorch import BleurtForSequenceClassification, BleurtTokenizer
        from bleurt_pytorch.bleurt.tokenization_bleurt_sp import BleurtSPTokenizer

        # A SentencePiece checkpoint (BLEURT-20) is loaded as such: the port's BleurtTokenizer first tries the
        # WordPiece tokenizer, whose failure transformers 4.x turns into an ImportError without protobuf.
        kind = BleurtSPTokenizer if (self.folder / "spm.model").exists() else BleurtTokenizer
        self._tokenizer = kind.from_pretrained(str(self.folder), local_files_only=True)
        model = BleurtForSequenceClassification.from_pretrained(str(self.folder), local_files_only=True)
        model.eval()
        self._model = model

    def score(self, candidates: list[str], references: list[str]) -> list[float]:
        """BLEURT of each candidate against its reference (the model's scale, about 0-1 for BLEURT-20)."""
        import torch

        with self._lock:
            if self._model is None:
                try:
                    self._load()
                except ImportError as exc:
                    raise ConfigError(f"BLEURT could not be imported: {exc}", INSTALL) from exc
            out: list[float] = []
            for start in range(0, len(candidates), self.batch_size):
                refs = references[start : start + self.batch_size]
                cands = candidates[start : start + self.batch_size]
                with torch.no_grad():
                    inputs = self._tokenizer(
                        refs, cands, padding="longest", truncation=True, max_length=512, return_tensors="pt"
                    )
                    out += [float(x) for x in self._model(**inputs).logits.flatten().tolist()]
            return out

    async def ascore(self, candidates: list[str], references: list[str]) -> list[float]:
        """:meth:`score` in a worker thread, so the event loop keeps serving the other items."""
        return await asyncio.to_thread(self.score, candidates, references)
