"""Generate src/llmpsych/data/manifests/<dataset>.json from a local copy of the official data.

Usage: python scripts/make_data_manifests.py [SEED_DIR]   (default: ../shared/seed-data beside the repo)

Each manifest records the authors' repository, the pinned commit, a licence note and, for every file,
its local relative path, its path in the repository, sha256 and size. No text from the files is copied.
Paths are stored as lists of components (["prompt_template", "bar_game", "request_v1.txt"]): some data
files mention other files by path, and the repository must not contain any long run of official text.
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
OUT_DIR = REPO_ROOT / "src" / "llmpsych" / "data" / "manifests"

_CUHK_LICENCE = (
    "GPL-3.0 (LICENSE file of the repository); the README says research use only, no commercial use. "
    "The copyright of each questionnaire's items stays with that instrument's authors."
)

#: dataset folder -> (repository, pinned commit, licence note, extra note)
SOURCES: dict[str, tuple[str, str, str, str]] = {
    "PsychoBench": ("CUHK-ARISE/PsychoBench", "d514fb0810f4c79571b4e13e588ffe7f5daaa24f", _CUHK_LICENCE, ""),
    "EmotionBench": (
        "CUHK-ARISE/EmotionBench",
        "48f6e1b01c449c213374172b24e6a461b59cd088",
        _CUHK_LICENCE,
        "Local folders results/PANAS_Test and results/Challenging_Bench are named with a space "
        "in the repository.",
    ),
    "GAMABench": (
        "CUHK-ARISE/GAMABench",
        "41ebccf54869a462a1ba3820d6c616e02e3f6fd1",
        "GPL-3.0 (LICENSE file of the repository); research use.",
        "",
    ),
    "MAS-Resilience": (
        "CUHK-ARISE/MAS-Resilience",
        "d88dbdcb306d17c5c02afb422aa11a59404318fb",
        "GPL-3.0 (LICENSE file of the repository); the benchmark files are third-party (HumanEval: MIT; "
        "CIAR, FairEval, CommonMT: licences not stated). Research use only.",
        "",
    ),
    "FairEval": (
        "i-Eval/FairEval",
        "453c117",
        "Licence not stated in the files used here; released with 'Large Language Models are not Fair "
        "Evaluators' (Wang et al.). Research use only.",
        "Only the short commit 453c117 is known; it is used as the pinned ref.",
    ),
    "LLMPersonality": (
        "CUHK-ARISE/LLMPersonality",
        "5bbe1b33a287229d981a4d6a5ef78cdc87ee20d1",
        "No LICENSE file in the repository: treat as all rights reserved, research use only. "
        "The copyright of each questionnaire's items stays with that instrument's authors.",
        "",
    ),
}

#: dataset -> {local folder prefix: remote folder prefix} for folders renamed in the local copy
RENAMES: dict[str, dict[str, str]] = {
    "EmotionBench": {
        "results/PANAS_Test/": "results/PANAS Test/",
        "results/Challenging_Bench/": "results/Challenging Bench/",
    },
}


def remote_path(dataset: str, local: str) -> str:
    """The path of a local file inside the authors' repository."""
    for prefix, remote_prefix in RENAMES.get(dataset, {}).items():
        if local.startswith(prefix):
            return remote_prefix + local[len(prefix) :]
    return local


def sha256_of(path: Path) -> str:
    """Hex sha256 of a file."""
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def build_manifest(seed: Path, dataset: str) -> dict[str, object]:
    """The manifest of one dataset folder."""
    repository, commit, licence, note = SOURCES[dataset]
    folder = seed / dataset
    if not folder.is_dir():
        raise SystemExit(f"missing dataset folder {folder}")
    files = []
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        local = path.relative_to(folder).as_posix()
        files.append(
            {
                "path": local.split("/"),
                "remote": remote_path(dataset, local).split("/"),
                "sha256": sha256_of(path),
                "size": path.stat().st_size,
            }
        )
    manifest: dict[str, object] = {
        "dataset": dataset,
        "repository": repository,
        "commit": commit,
        "licence": licence,
    }
    if note:
        manifest["note"] = note
    manifest["files"] = files
    return manifest


def render(manifest: dict[str, object]) -> str:
    """Manifest JSON with one line per file, so diffs stay readable."""
    head = {k: v for k, v in manifest.items() if k != "files"}
    lines = [json.dumps(head, indent=1, ensure_ascii=True)[:-2] + ',\n "files": [']
    files = manifest["files"]
    assert isinstance(files, list)
    lines.append(",\n".join("  " + json.dumps(f, ensure_ascii=True) for f in files))
    lines.append(" ]\n}\n")
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    """Write one manifest per dataset."""
    seed = Path(argv[0]) if argv else (REPO_ROOT.parent / "shared" / "seed-data")
    seed = seed.resolve()
    OUT_DIR.mkdir(parents=True, exist_ok=True)
    for dataset in SOURCES:
        manifest = build_manifest(seed, dataset)
        out = OUT_DIR / f"{dataset}.json"
        out.write_text(render(manifest), encoding="utf-8")
        print(f"{out.relative_to(REPO_ROOT)}: {len(manifest['files'])} files")  # type: ignore[arg-type]
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
