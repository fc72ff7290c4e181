"""The paper's GAMA-Bench experiments as presets (``llmpsych gamabench preset <name>``), spec §5.

A preset expands into ordinary ``gamabench`` run configs, one run directory each
(``<out>/<model>/<setting>``), executed one after the other through the shared run engine: a second
invocation with the same ``--out`` resumes unfinished runs without re-sending answered requests and
re-analyses finished ones. Then it writes a summary (``summary.md``/``.csv``, and for the leaderboard presets
``leaderboard.md``/``.png``) into ``<out>``.
"""

from __future__ import annotations

import json
import math
import re
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import pandas as pd

from ..errors import ConfigError, DataError, LlmpsychError
from ..report.charts import pyplot
from ..report.files import save_figure, write_csv
from ..report.html import html_beside
from ..report.markdown import table, write_report
from ..runs import presets as shared
from ..runs.config import DEFAULT_MODEL
from ..runs.presets import execute as execute  # run a plan through the one sweep runner
from ..runs.store import STORE_FILE
from . import registry
from .leaderboard import RunDirInfo, by_settings, leaderboard_chart, log_runs, read_run_dir, write_leaderboard
from .result import GamaBenchResult
from .rounds import AnswerRecord, SimultaneousRound
from .score_logs import score_runs
from .scoring import GAME_TITLES, GAMES
from .task import GAMES as ENGINE_GAMES

#: The 13 models of the thesis leaderboard (spec §5.4). OpenAI models use the built-in ``openai``
#: endpoint; ``gemini/`` and ``deepinfra/`` are named endpoints you define in the config file
#: (docs/games.md#presets), as the paper served Gemini through Google and the open models via DeepInfra.
PAPER_MODELS: tuple[str, ...] = (
    "openai/gpt-3.5-turbo-0613",
    "openai/gpt-3.5-turbo-1106",
    "openai/gpt-3.5-turbo-0125",
    "openai/gpt-4-0125-preview",
    "openai/gpt-4o-2024-08-06",
    "gemini/gemini-1.0-pro",
    "gemini/gemini-1.5-pro",
    "deepinfra/meta-llama/Meta-Llama-3.1-8B-Instruct",
    "deepinfra/meta-llama/Meta-Llama-3.1-70B-Instruct",
    "deepinfra/meta-llama/Meta-Llama-3.1-405B-Instruct",
    "deepinfra/mistralai/Mixtral-8x7B-Instruct-v0.1",
    "deepinfra/mistralai/Mixtral-8x22B-Instruct-v0.1",
    "deepinfra/Qwen/Qwen2-72B-Instruct",
)

#: Generalisability sweeps (spec §5.3): game -> [(setting label, that game's parameters)].
SWEEPS: dict[str, list[tuple[str, dict[str, Any]]]] = {
    "guessing": [
        (f"ratio={r}", {"ratio": r})
        for r in ("0", "1/6", "1/3", "1/2", "2/3", "5/6", "1", "7/6", "4/3", "3/2", "5/3", "11/6", "2")
    ],
    "bar": [(f"ratio={p}%", {"ratio": p / 100}) for p in (0, 20, 40, 60, 80, 100)],
    "divide_dollar": [(f"golds={g}", {"golds": g}) for g in (50, 100, 200, 400, 800)],
    "public_goods": [(f"ratio={r}", {"ratio": r}) for r in (0.0, 0.5, 1.0, 2.0, 4.0)],
    "diner": [
        (
            f"cheap={pl}/{ul},costly={ph}/{uh}",
            {"cheap_cost": pl, "cheap_utility": ul, "exp_cost": ph, "exp_utility": uh},
        )
        for pl, ul, ph, uh in (
            (10, 15, 20, 20),
            (11, 5, 20, 7),
            (4, 19, 9, 20),
            (1, 8, 19, 12),
            (4, 5, 17, 7),
            (2, 11, 8, 13),
        )
    ],
    "auction": [(f"valuations=(0,{v}]", {"valuation_max": v}) for v in (100, 200, 400, 800)],
    "battle_royale": [
        ("hit_rates=[51,60]", {"base_hit_rate": 51, "interval": 1}),
        ("hit_rates=[35,80]", {"base_hit_rate": 35, "interval": 5}),
        ("hit_rates=[10,100]", {"base_hit_rate": 10, "interval": 10}),
    ],
    "pirate": [(f"gold={g}", {"gold": g}) for g in (4, 5, 100, 400)],
}

#: LLM against fixed strategies (spec §5.5): game -> the fixed seat (player 0, as the reference did).
FIXED: dict[str, str] = {"divide_dollar": "fixed:91", "public_goods": "fixed:0"}


@dataclass(frozen=True)
class Variant(shared.Variant):
    """One setting of a preset; ``game`` marks a single-game setting (sweeps, fixed strategies)."""

    game: str | None = None


@dataclass(frozen=True)
class Preset:
    """A paper experiment: its variants, default runs per setting and how it is summarised."""

    name: str
    title: str
    paper: str
    runs: int
    variants: Callable[..., list[Variant]]
    summary: Literal["leaderboard", "settings", "sweep", "fixed"]
    spread: bool = False  # add each model's mean ± SD across settings (robustness, spec §5.1)
    games: tuple[str, ...] | None = None  # the games the thesis ran (default: all eight)
    template_set: bool = False  # with ``-O template_set=PATH`` its settings are that set's versions


#: Explicit information about the opponents in Guess 2/3 (thesis §6.6.1, 000:2561-2567): no sentence, then
#: settings (a) smart and always choosing the equilibrium, (b) smart, (c) choosing at random.
OPPONENT_SETTINGS = ("smart-ne", "smart", "random")


def _version_variants(settings: PresetSettings | None = None) -> list[Variant]:
    """The official v1-v5; with ``-O template_set=PATH``, the built-in prompts and every version of that
    set (your own rephrasings, ``gamabench rephrase``) instead."""
    from .prompts import read_template_set

    path = settings.options.get("template_set") if settings else None
    if not isinstance(path, str):
        return [Variant(f"v{k}", {"prompts": "official", "prompt_version": k}) for k in range(1, 6)]
    base = path.rsplit("#", 1)[0] if re.search(r"#\d+$", path) else path
    data, _ = read_template_set(Path(base))
    versions = sorted(data.get("versions") or {}, key=lambda v: (len(v), v))
    return [Variant("built-in", {"template_set": None})] + [
        Variant(f"set v{k}", {"template_set": f"{base}#{k}"}) for k in versions
    ]


def _sweep_variants() -> list[Variant]:
    return [
        Variant(f"{game} {label}", {"game": game, game: params}, game=game)
        for game, settings in SWEEPS.items()
        for label, params in settings
    ]


def _fixed_variants() -> list[Variant]:
    out = []
    for game, seat in FIXED.items():
        out.append(Variant(f"{game} w/ {seat}", {"game": game, "seats": {0: seat}}, game=game))
        out.append(Variant(f"{game} w/o fixed", {"game": game}, game=game))
    return out


PRESETS: dict[str, Preset] = {
    p.name: p
    for p in (
        Preset(
            "multiple-runs",
            "Multiple runs: the default protocol, all eight games 5 times",
            "RQ1 robustness, thesis §6.5.1, Table 6.3 (T1-T5)",
            5,
            lambda: [Variant("default")],
            "leaderboard",
        ),
        Preset(
            "temperatures",
            "Temperatures 0.0-1.0, one run each",
            "RQ1 robustness, thesis §6.5.1, Table 6.4",
            1,
            lambda: [
                Variant(f"temperature={t}", params={"temperature": t}) for t in (0.0, 0.2, 0.4, 0.6, 0.8, 1.0)
            ],
            "settings",
            spread=True,
        ),
        Preset(
            "prompt-versions",
            "The official prompt templates v1-v5 (GPT-4 rephrasings), one run each",
            "RQ1 robustness, thesis §6.5.1, Table 6.5 (templates in §6.7.5); needs the GAMABench data "
            "folder, or -O template_set=PATH",
            1,
            _version_variants,
            "settings",
            spread=True,
            template_set=True,
        ),
        Preset(
            "reasoning",
            "Reasoning strategies: default, chain-of-thought and three personas, one run each",
            "RQ2, thesis §6.5.2, Table 6.6",
            1,
            lambda: [
                Variant("default"),
                Variant("cot", {"cot": 1}),
                Variant("cooperative", {"persona": 1}),
                Variant("selfish", {"persona": 2}),
                Variant("mathematician", {"persona": 3}),
            ],
            "settings",
        ),
        Preset(
            "generalisability",
            "Generalisability: every game's parameter sweep, one run per value",
            "RQ3, thesis §6.5.3, Table 6.7 and Fig. 6.9",
            1,
            _sweep_variants,
            "sweep",
        ),
        Preset(
            "leaderboard",
            "The 13-model leaderboard: the default protocol (5 runs of all eight games) per model",
            "RQ4, thesis §6.5.4, Tables 6.8/6.9",
            5,
            lambda: [Variant("default")],
            "leaderboard",
        ),
        Preset(
            "jailbreak",
            "CipherChat jailbreak: the games without and with a Caesar-cipher conversation, 5 runs each",
            "thesis §6.6.2; the thesis ran GPT-4o",
            5,
            lambda: [Variant("w/o jailbreak"), Variant("w/ jailbreak", {"cipher": True})],
            "settings",
            games=("public_goods", "diner"),
        ),
        Preset(
            "opponent-info",
            "Explicit information about the opponents in Guess 2/3: none, (a) smart and choosing the "
            "equilibrium, (b) smart, (c) random",
            "thesis §6.6.1; the thesis ran GPT-4o, wording ours",
            1,
            lambda: (
                [Variant("no information", {"game": "guessing"}, game="guessing")]
                + [
                    Variant(
                        f"opponents={o}", {"game": "guessing", "guessing": {"opponents": o}}, game="guessing"
                    )
                    for o in OPPONENT_SETTINGS
                ]
            ),
            "settings",
        ),
        Preset(
            "fixed-strategies",
            "LLM against fixed strategies: a player always bidding 91 / contributing 0, and without it",
            "thesis §6.6.1, Fig. 6.4",
            1,
            _fixed_variants,
            "fixed",
        ),
    )
}
#: Other names accepted for presets.
ALIASES = {
    "runs": "multiple-runs",
    "temperature": "temperatures",
    "prompts": "prompt-versions",
    "strategies": "reasoning",
    "sweeps": "generalisability",
    "generalizability": "generalisability",
    "models": "leaderboard",
    "vs-fixed": "fixed-strategies",
    "fixed": "fixed-strategies",
    "cipher": "jailbreak",
    "explicit-information": "opponent-info",
    "rephrased": "prompt-versions",
}


def get_preset(name: str) -> Preset:
    """The preset called ``name`` (or an alias)."""
    return shared.get_preset(name, PRESETS, ALIASES, "llmpsych gamabench presets")


@dataclass
class PresetSettings(shared.PresetSettings):
    """What the user sets on top of a preset (None keeps the paper's value)."""

    games: list[str] | None = None
    players: int | None = None
    rounds: int | None = None


@dataclass(frozen=True)
class PresetRun(shared.PresetRun):
    """One run directory of a preset, with the number of games it plays."""

    @property
    def n_games(self) -> int:
        """Games this run plays: runs × games."""
        game = self.options["game"]
        count = len(ENGINE_GAMES) if game == "all" else 1 if isinstance(game, str) else len(game)
        return int(self.options["runs"]) * count


def _merge(base: dict[str, Any], extra: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in extra.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = {**out[key], **value}
        else:
            out[key] = value
    return out


def expand(preset: Preset, settings: PresetSettings) -> list[PresetRun]:
    """The run configs of ``preset`` for the given models and settings (nothing is run)."""
    models = settings.models or (list(PAPER_MODELS) if preset.name == "leaderboard" else [DEFAULT_MODEL])
    games = settings.games
    given = settings.options.get("game")
    if games is None and given is not None and given != "all":  # --game: the preset's games to play
        games = [given] if isinstance(given, str) else list(given)
    user_options = {k: v for k, v in settings.options.items() if k != "game"}
    for game in games or []:
        if game not in ENGINE_GAMES:
            raise ConfigError(f"unknown game {game!r}", f"games: {', '.join(ENGINE_GAMES)}")
    every = preset.variants(settings) if preset.template_set else preset.variants()
    variants = [v for v in every if v.game is None or games is None or v.game in games]
    if not variants:
        raise ConfigError(f"preset {preset.name!r} has no setting for the games {', '.join(games or [])}")
    default_games: str | list[str] = list(preset.games) if preset.games else "all"
    base_options: dict[str, Any] = {
        "game": games if games else default_games,
        "runs": settings.runs or preset.runs,
    }
    for key in ("players", "rounds"):
        if getattr(settings, key) is not None:
            base_options[key] = getattr(settings, key)
    base_params = settings.params(temperature=1.0)

    def config(model: str, variant: shared.Variant) -> dict[str, Any]:
        options = _merge(_merge(base_options, user_options), variant.options)
        if options.get("template_set", "") is None:  # the built-in setting of the rephrased preset
            del options["template_set"]
        elif isinstance(options.get("template_set"), str):  # the texts go into the plan and the store
            options["template_set"] = _template_set(options["template_set"])
        return settings.run_config("gamabench", model, {**base_params, **variant.params}, options)

    return shared.plan(models, variants, config, run_class=PresetRun)


def plan_note(runs: Sequence[PresetRun]) -> str:
    """How much a plan plays (under ``--dry-run``)."""
    return f"{len(runs)} run directories, {sum(r.n_games for r in runs)} games"


def _template_set(name: str) -> dict[str, Any]:
    """A template set named ``PATH`` or ``PATH#K``, read and checked, as a run config stores it."""
    from .template_sets import TemplateSetOption

    return TemplateSetOption.model_validate(name).model_dump()


def describe(runs: Sequence[PresetRun]) -> pd.DataFrame:
    """The runs of a preset as a table (for ``--dry-run``)."""
    rows = []
    for r in runs:
        o = r.options
        games = o["game"] if isinstance(o["game"], str) else ",".join(o["game"])
        extra = {k: v for k, v in o.items() if k not in ("game", "runs", "players", "rounds")}
        if isinstance(extra.get("template_set"), dict):  # its name, not its texts
            extra["template_set"] = f"{extra['template_set']['path']}#{extra['template_set']['version']}"
        rows.append(
            {
                "directory": r.directory,
                "model": r.model,
                "setting": r.setting,
                "games": games,
                "runs": o["runs"],
                "players": o.get("players", 10),
                "rounds": o.get("rounds", 20),
                "temperature": r.config["params"]["temperature"],
                "options": json.dumps(extra, sort_keys=True) if extra else "",
            }
        )
    return pd.DataFrame(rows)


# -- summaries -------------------------------------------------------------------------------------------
def summarize(preset: Preset, runs: Sequence[PresetRun], out: Path) -> list[Path]:
    """Write the preset's summary into ``out`` from the run directories (never calls a model)."""
    present = [r for r in runs if (out / r.directory / STORE_FILE).is_file()]
    if not present:
        raise LlmpsychError(f"no run of preset {preset.name!r} found under {out}")
    infos = [read_run_dir(out / r.directory) for r in present]
    intro = f"Preset `{preset.name}`: {preset.title} ({preset.paper})."
    if preset.summary == "leaderboard":
        by_settings(infos)  # a row per model and setting, as `gamabench leaderboard` has
        scores = score_runs(log_runs(infos))
        return write_leaderboard(
            scores, infos, out, title=f"GAMA-Bench {preset.name}", extra=[("Preset", intro)]
        )
    if preset.summary == "fixed":
        return _fixed_summary(preset, present, infos, out, intro)
    labels = {r.directory: f"{r.model} | {r.setting}" for r in present}
    scores = score_runs(log_runs(infos, {out / d: label for d, label in labels.items()}))
    frame = _settings_frame(present, scores, labels, preset)
    paths = [write_csv(frame, out / "summary.csv")]
    sections = [("Preset", intro), ("Scores (mean ± SD over runs)", table(frame))]
    if preset.summary == "settings":
        chart = leaderboard_chart(scores, out / "summary.png", f"GAMA-Bench {preset.name}")
        if chart:
            sections.append(("Chart", f"![{preset.name}]({chart.name})"))
            paths.append(chart)
    sections.append(("Run directories", table(_dirs_frame(infos))))
    paths.append(write_report(out / "summary.md", f"GAMA-Bench preset {preset.name}", sections))
    return html_beside(paths)


def _dirs_frame(infos: Sequence[RunDirInfo]) -> pd.DataFrame:
    return pd.DataFrame(
        [
            {
                "run directory": str(i.run_dir),
                "games scored": sum(g.score is not None for g in i.games),
                "not scored": len(i.left_out) - i.unfinished,  # unscorable and unreadable results
                "unfinished": i.unfinished,
            }
            for i in infos
        ]
    )


def _cell(values: Sequence[float]) -> str:
    from ..stats import format_mean_sd  # scipy loads on first use

    if not values:
        return "-"
    if len(values) == 1:  # one run: its score, as the run's own report prints it
        return f"{values[0]:.1f}"
    return format_mean_sd(statistics.fmean(values), statistics.stdev(values))


def _settings_frame(
    present: Sequence[PresetRun], scores: dict[str, Any], labels: dict[str, str], preset: Preset
) -> pd.DataFrame:
    """Settings presets: one row per model and setting, games as columns; sweeps: one row per setting."""
    from ..stats import format_mean_sd  # scipy loads on first use

    rows = []
    by_model: dict[str, dict[str, list[float]]] = {}
    for run in present:
        s = scores.get(labels[run.directory])
        if s is None:
            continue
        if preset.summary == "sweep":
            game = next(iter(s.games), None)
            summary = None if game is None else s.games[game]
            rows.append(
                {
                    "model": run.model,
                    "game": GAME_TITLES.get(game, "-") if game else "-",
                    "setting": run.setting.split(" ", 1)[1] if " " in run.setting else run.setting,
                    "runs": 0 if summary is None else summary.n,
                    "score": "-" if summary is None else _cell(summary.values),
                }
            )
            continue
        row: dict[str, Any] = {"model": run.model, "setting": run.setting}
        for g in GAMES:
            summary = s.games.get(g)
            row[GAME_TITLES[g]] = "-" if summary is None else _cell(summary.values)
            if summary is not None:
                by_model.setdefault(run.model, {}).setdefault(g, []).append(summary.mean)
        if s.overall_mean is not None:
            mean, sd = s.overall_mean, s.overall_sd  # one run (no sd): the score alone, as a game cell
            row["Overall"] = f"{mean:.1f}" if sd is None else format_mean_sd(mean, sd)
            by_model.setdefault(run.model, {}).setdefault("overall", []).append(s.overall_mean)
        else:
            row["Overall"] = "-"
        rows.append(row)
    if preset.spread:
        for model, values in by_model.items():
            row = {"model": model, "setting": "across settings (mean ± SD)"}
            for g in GAMES:
                row[GAME_TITLES[g]] = _cell(values.get(g, []))
            row["Overall"] = _cell(values.get("overall", []))
            rows.append(row)
    return pd.DataFrame(rows)


def llm_actions_per_round(result: GamaBenchResult) -> list[float]:
    """Mean action of the model seats in each round of one game (bids, contributions, ...), read from the
    game's typed rounds (:func:`~llmpsych.games.registry.rounds_of`; a round that does not fit its game's
    ``Round`` is a :class:`DataError`). NaN for a round without a numeric model answer (a sequential
    game's round has no ``decisions``)."""
    means = []
    for record in registry.rounds_of(result):
        decisions = record.decisions if isinstance(record, SimultaneousRound) else []
        values = [float(d.action) for d in decisions if _model_seat(d) and isinstance(d.action, int | float)]
        means.append(sum(values) / len(values) if values else math.nan)
    return means


def _model_seat(answer: AnswerRecord) -> bool:
    """Whether a model seat gave ``answer`` (a record that does not name its seat counts as the model's)."""
    seat = answer.seat if "seat" in answer.model_fields_set else "llm"
    return str(seat).startswith("llm")


def _fixed_summary(
    preset: Preset, present: Sequence[PresetRun], infos: Sequence[RunDirInfo], out: Path, intro: str
) -> list[Path]:
    rows, curves = [], {}
    for run, info in zip(present, infos, strict=True):
        per_round: list[list[float]] = []
        for g in info.games:
            for i, value in enumerate(_actions_per_round(g.result)):
                if i >= len(per_round):
                    per_round.append([])
                if not math.isnan(value):
                    per_round[i].append(value)
        curve = [sum(v) / len(v) if v else math.nan for v in per_round]
        curves[(run.model, run.setting)] = curve
        flat = [v for vs in per_round for v in vs]
        game_scores = [g.score for g in info.games if g.score is not None]
        rows.append(
            {
                "model": run.model,
                "setting": run.setting,
                "runs": len(info.games),
                "mean action of the model seats": sum(flat) / len(flat) if flat else math.nan,
                "score": _cell(game_scores),
            }
        )
    frame = pd.DataFrame(rows)
    paths = [write_csv(frame, out / "summary.csv")]
    sections = [
        ("Preset", intro),
        (
            "Model seats' mean action (bid or contribution) with and without the fixed player",
            table(frame, floatfmt=".2f"),
        ),
    ]
    chart = _fixed_chart(curves, out / "summary.png")
    if chart:
        sections.append(("Per round (thesis Fig. 6.4)", f"![per round]({chart.name})"))
        paths.append(chart)
    sections.append(("Run directories", table(_dirs_frame(infos))))
    paths.append(write_report(out / "summary.md", f"GAMA-Bench preset {preset.name}", sections))
    return html_beside(paths)


def _actions_per_round(result: GamaBenchResult | None) -> list[float]:
    """:func:`llm_actions_per_round`; none for a stored game that does not parse, or whose rounds do not
    fit its game's ``Round`` (it is not scored either: the leaderboard's left-out table gives the reason)."""
    if result is None:
        return []
    try:
        return llm_actions_per_round(result)
    except DataError:
        return []


def _fixed_chart(curves: dict[tuple[str, str], list[float]], path: Path) -> Path | None:
    plt = pyplot()
    if plt is None:
        return None
    games = sorted({setting.split(" ", 1)[0] for _, setting in curves})
    fig, axes = plt.subplots(1, len(games), figsize=(5 * len(games), 3.4), squeeze=False)
    for ax, game in zip(axes[0], games, strict=True):
        for (model, setting), curve in curves.items():
            if setting.split(" ", 1)[0] == game:
                ax.plot(
                    range(1, len(curve) + 1), curve, marker="o", label=f"{model} {setting.split(' ', 1)[1]}"
                )
        ax.set_title(game)
        ax.set_xlabel("round")
        ax.set_ylabel("model seats' mean action")
        ax.legend(fontsize="small")
    fig.tight_layout()
    save_figure(fig, path, dpi=120)
    plt.close(fig)
    return path
