"""CommonMT metric selection and the BLEURT checkpoint checks (no BLEURT weights exist here).

What these tests cannot do: load real BLEURT weights (none can be downloaded here). Most tests therefore
stand in for the model; the run plumbing around it (checks at run start, scores, labels) is real. The
opt-in test at the end, which runs only where the ``bleurt`` extra is installed (torch, transformers<5,
bleurt_pytorch, sentencepiece; the normal CI skips it), builds a tiny randomly initialised checkpoint in
the bleurt-pytorch format (a SentencePiece model trained on a few lines, like BLEURT-20's ``spm.model``)
and loads and scores it with the real ``BleurtScorer``; its scores are meaningless, only finite.
"""

from __future__ import annotations

import importlib.util
import io
import json
import math
import sys
import types
from pathlib import Path

import pytest

from llmpsych.collab import bleurt
from llmpsych.collab.bleurt import BleurtScorer, check_checkpoint, choose_metric
from llmpsych.collab.scripted import ScriptedCollaborator
from llmpsych.errors import ConfigError
from llmpsych.runs import RunStore, parse_run_config, start_run
from llmpsych.testing.fault_server import FaultServer


@pytest.mark.parametrize(
    ("kind", "metric", "checkpoint", "chosen"),
    [
        ("translation", "auto", None, "chrf"),
        ("translation", "auto", "/ckpt", "bleurt"),
        ("translation", "chrf", "/ckpt", "chrf"),
        ("translation", "bleurt", "/ckpt", "bleurt"),
        ("code", "bleurt", None, "native"),
        ("math", "auto", "/ckpt", "native"),
    ],
)
def test_metric_selection(kind: str, metric: str, checkpoint: str | None, chosen: str) -> None:
    assert choose_metric(kind, metric, checkpoint) == chosen


def test_bleurt_without_a_checkpoint_is_an_error() -> None:
    with pytest.raises(ConfigError, match="needs a local BLEURT checkpoint"):
        choose_metric("translation", "bleurt", None)


def _checkpoint(folder: Path, config: object = None, weights: bool = True, tokenizer: bool = True) -> Path:
    folder.mkdir()
    if config is not None:
        text = config if isinstance(config, str) else json.dumps(config)
        (folder / "config.json").write_text(text)
    if weights:
        (folder / "model.safetensors").write_bytes(b"")
    if tokenizer:
        (folder / "spm.model").write_bytes(b"")
    return folder


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (lambda d: d / "missing", "not found"),
        (lambda d: (d / "file").write_text("x") and d / "file", "not a folder"),
        (lambda d: _checkpoint(d / "c"), "no config.json"),
        (lambda d: _checkpoint(d / "c", "{not json"), "unreadable"),
        (lambda d: _checkpoint(d / "c", {"model_type": "bert"}), "model_type 'bert'"),
        (lambda d: _checkpoint(d / "c", {"model_type": "bleurt"}, weights=False), "no weights"),
        (lambda d: _checkpoint(d / "c", {"model_type": "bleurt"}, tokenizer=False), "no tokenizer"),
    ],
)
def test_invalid_checkpoints_are_named(build, message: str, tmp_path: Path) -> None:  # noqa: ANN001
    with pytest.raises(ConfigError, match=message):
        check_checkpoint(build(tmp_path))


def test_missing_extra_is_named_with_the_install_hint(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = _checkpoint(tmp_path / "BLEURT-20", {"model_type": "bleurt"})
    real = importlib.util.find_spec
    monkeypatch.setattr(
        bleurt.importlib.util, "find_spec", lambda name: None if name == "torch" else real(name)
    )
    with pytest.raises(ConfigError, match="needs torch") as info:
        check_checkpoint(folder)
    assert "llmpsych[bleurt]" in (info.value.hint or "")
    _pretend_the_extra_is_installed(monkeypatch)
    assert check_checkpoint(folder) == folder  # a well-formed folder with the extra installed


def test_an_incompatible_port_is_named_before_any_model_call(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # bleurt-pytorch 0.0.1 under transformers 5 is installed but fails to import: the check says so.
    folder = _checkpoint(tmp_path / "BLEURT-20", {"model_type": "bleurt"})
    monkeypatch.setattr(bleurt.importlib.util, "find_spec", lambda name: object())
    monkeypatch.setitem(sys.modules, "bleurt_pytorch", None)  # None in sys.modules: import raises ImportError
    with pytest.raises(ConfigError, match="BLEURT could not be imported") as info:
        check_checkpoint(folder)
    assert "transformers<5" in (info.value.hint or "")


def _pretend_the_extra_is_installed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(bleurt.importlib.util, "find_spec", lambda name: object())
    monkeypatch.setitem(sys.modules, "bleurt_pytorch", types.ModuleType("bleurt_pytorch"))


def _config(server: FaultServer, seed_data: Path, **options: object):  # noqa: ANN202
    return parse_run_config(
        {
            "task": "mas",
            "model": "openai-compatible/scripted",
            "base_url": server.base_url,
            "cache": False,
            "data_dir": str(seed_data),
            "options": {"dataset": "commonmt", "items": 2, "system": "mad", **options},
        }
    )


def test_a_bad_checkpoint_stops_the_run_before_any_model_call(seed_data: Path, tmp_path: Path) -> None:
    with FaultServer(responder=ScriptedCollaborator({})) as server:
        config = _config(server, seed_data, bleurt_checkpoint=str(tmp_path / "nowhere"))
        with pytest.raises(ConfigError, match="BLEURT checkpoint not found"):
            start_run(config, tmp_path / "run", False)
        assert sum(server.hits.values()) == 0
        assert not (tmp_path / "run").exists()  # no half-made run: the corrected command can reuse --out


def test_configured_checkpoint_scores_with_bleurt_and_names_it(
    seed_data: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = _checkpoint(tmp_path / "BLEURT-20", {"model_type": "bleurt"})
    _pretend_the_extra_is_installed(monkeypatch)
    pairs: list[tuple[str, str]] = []

    def stand_in(self: BleurtScorer, candidates: list[str], references: list[str]) -> list[float]:
        # Replaces the model only: 1.0 for the correct reference, 0.25 for the wrong one.
        pairs.extend(zip(candidates, references, strict=True))
        return [1.0 if i % 2 == 0 else 0.25 for i in range(len(candidates))]

    monkeypatch.setattr(BleurtScorer, "score", stand_in)
    with FaultServer(responder=ScriptedCollaborator({})) as server:
        outcome = start_run(_config(server, seed_data, bleurt_checkpoint=str(folder)), tmp_path / "b", False)
        chrf_run = start_run(_config(server, seed_data), tmp_path / "c", False)
    assert outcome.summary.failed == 0 and len(pairs) == 4
    summary = json.loads((outcome.run_dir / "summary.json").read_text())
    assert summary["metric"].startswith("BLEURT") and "`BLEURT-20`" in summary["metric"]
    assert summary["score"] == 100.0 and summary["closer_to_correct"] == 100.0
    store = RunStore.in_dir(outcome.run_dir)
    result = store.units("done")[0].result
    store.close()
    assert result["metric"] == "bleurt" and result["bleurt_wrong"] == 25.0 and "chrf" in result
    assert "closer (BLEURT)" in (outcome.run_dir / "report.md").read_text()
    plain = json.loads((chrf_run.run_dir / "summary.json").read_text())
    assert "NOT comparable" in plain["metric"]


def _tiny_checkpoint(folder: Path) -> Path:
    """A randomly initialised bleurt-pytorch checkpoint of BLEURT-20's layout (config.json with model_type
    bleurt, model.safetensors, spm.model), small enough to build in about a second on one core."""
    spm = pytest.importorskip("sentencepiece", reason="the bleurt extra (sentencepiece) is not installed")
    pytest.importorskip("torch", reason="the bleurt extra (torch) is not installed")
    pytest.importorskip("transformers", reason="the bleurt extra (transformers) is not installed")
    port = pytest.importorskip("bleurt_pytorch", reason="the bleurt extra (bleurt-pytorch) is not installed")
    folder.mkdir()
    lines = [line for line in Path(bleurt.__file__).read_text().splitlines() if line.strip()]
    model = io.BytesIO()
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(lines * 3),
        model_writer=model,
        vocab_size=120,
        pad_id=0,
        unk_id=1,
        bos_id=2,
        eos_id=3,
        pad_piece="[PAD]",
        unk_piece="[UNK]",
        bos_piece="[CLS]",
        eos_piece="[SEP]",
        num_threads=1,
        minloglevel=2,
    )
    (folder / "spm.model").write_bytes(model.getvalue())
    config = port.BleurtConfig(
        vocab_size=128,  # the 120 pieces and [MASK], which the tokenizer adds
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=128,
    )
    port.BleurtForSequenceClassification(config).save_pretrained(folder)
    return folder


def test_real_bleurt_scorer_loads_a_tiny_checkpoint_and_scores(
    seed_data: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = _tiny_checkpoint(tmp_path / "BLEURT-tiny")
    assert check_checkpoint(folder) == folder
    scorer = BleurtScorer(folder, batch_size=2)
    scores = scorer.score(["a cat sat", "hello", "a dog"], ["a cat sat", "goodbye", "a dog ran"])
    assert len(scores) == 3 and all(isinstance(x, float) and math.isfinite(x) for x in scores)
    assert scorer.score(["hello"], ["goodbye"]) == pytest.approx(
        scores[1:2], abs=1e-5
    )  # eval mode: no dropout

    # A CommonMT run end to end with the real scorer (scripted model server).
    loads: list[BleurtScorer] = []
    real_load = BleurtScorer._load

    def counted_load(self: BleurtScorer) -> None:
        loads.append(self)
        real_load(self)

    monkeypatch.setattr(BleurtScorer, "_load", counted_load)
    with FaultServer(responder=ScriptedCollaborator({})) as server:
        outcome = start_run(_config(server, seed_data, bleurt_checkpoint=str(folder)), tmp_path / "b", False)
    assert outcome.summary.failed == 0 and len(loads) == 1  # loaded once for the whole run
    summary = json.loads((outcome.run_dir / "summary.json").read_text())
    assert "`BLEURT-tiny`" in summary["metric"] and math.isfinite(summary["score"])
    store = RunStore.in_dir(outcome.run_dir)
    results = [unit.result for unit in store.units("done")]
    store.close()
    assert len(results) == 2
    for result in results:
        assert result["metric"] == "bleurt" and result["score"] == result["bleurt"]
        assert math.isfinite(result["bleurt"]) and math.isfinite(result["bleurt_wrong"])
