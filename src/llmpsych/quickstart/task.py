"""The quickstart task: administer the demonstration scale several times and report the scores, then play a
short Guess 2/3 of the Average game (GAMA-Bench) and report its score with a plot of the choices."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pandas as pd
from pydantic import BaseModel, ConfigDict, Field, field_validator

from ..errors import DataError
from ..instruments.administration import AdministrationResult, administer
from ..instruments.parsing import positional_note
from ..instruments.quality import ARTEFACT_SHARE, Agreement, agreement, raw_matrix
from ..models.chat_context import ChatContext
from ..models.types import CallParams, GenerationParams
from ..report.files import atomic_write_text, write_csv
from ..report.markdown import bar_chart, table
from ..report.run_report import write_run_report
from ..runs.record import RunRecord
from ..runs.scores import ScoreTable, range_text, require_columns, whole_numbers
from ..runs.task import Task, WorkUnit
from .demo_scale import REASK, demo_scale

#: The work unit of the short game.
GAME_UNIT = "game-guessing"
#: The questionnaire's result as the console prints it: subscale means and the acquiescence check.
QUESTIONNAIRE_FILE = "questionnaire.json"


class QuickstartOptions(BaseModel):
    """How many independent administrations (each with its own item order)."""

    model_config = ConfigDict(extra="forbid")

    runs: int = Field(default=5, ge=1, le=100, description="independent administrations of the scale")
    max_reasks: int = Field(
        default=2, ge=0, le=5, description="how many re-asks for the items an answer left out"
    )
    max_tokens: int = Field(default=96, ge=16, description="answer limit of an administration, tokens")
    game_players: int = Field(
        default=5, ge=0, le=20, description="seats of the Guess 2/3 game (at least 2); 0: no game"
    )
    game_rounds: int = Field(default=5, ge=1, le=20, description="rounds of the game")
    game_temperature: float = Field(
        default=1.0, ge=0, le=2, description="sampling temperature of the game (the paper's)"
    )
    game_max_tokens: int = Field(default=48, ge=16, description="answer limit of a seat's move, tokens")
    game_max_reasks: int = Field(
        default=2, ge=0, le=10, description="how many re-asks of a seat's unreadable move"
    )

    @field_validator("game_players")
    @classmethod
    def _a_table(cls, value: int) -> int:
        if value == 1:
            raise ValueError("a game needs at least 2 seats (0: no game)")
        return value


class AdministrationUnit(BaseModel):
    """The result of one administration of the demonstration scale."""

    model_config = ConfigDict(extra="allow")

    order: list[int]
    answers: dict[int, int]
    unanswered: list[int] = Field(default_factory=list)
    duplicates: dict[int, list[int]] = Field(default_factory=dict)
    out_of_range: dict[int, int] = Field(default_factory=dict)
    refused: bool = False
    asks: int = 0
    positional: list[int] = Field(default_factory=list)
    positional_replies: int = 0

    def administration(self) -> AdministrationResult:
        """As the administration returned it (without the transcript)."""
        return AdministrationResult(
            self.answers,
            self.unanswered,
            self.duplicates,
            self.out_of_range,
            self.refused,
            self.asks,
            positional=self.positional,
            positional_replies=self.positional_replies,
        )


class GameUnit(BaseModel):
    """The result of the short Guess 2/3 game (the games' result layout; read by the games' scoring)."""

    model_config = ConfigDict(extra="allow")

    game: str
    players: int
    fallbacks: int
    summary: dict[str, Any]
    rounds: list[dict[str, Any]]


def _scale_scores(table: pd.DataFrame, path: Path, record: RunRecord) -> pd.DataFrame:
    """The demonstration scale's scores for :func:`llmpsych.load_runs`: the scale's name, the
    administration number of ``run-003`` (3), and the range its subscale scores are on (the scale's)."""
    require_columns(table, path, ("run",))
    numbers = table["run"].astype(str).str.removeprefix("run-")
    scale = demo_scale()
    ranges = {range_text(*scale.score_range(sub)) for sub in scale.subscale_names}
    if len(ranges) != 1:  # one range per row of a wide table: the subscales must share it
        raise DataError(f"{path}: the subscales of {scale.name!r} are on different ranges: {sorted(ranges)}")
    return table.assign(scale=scale.name, run=whole_numbers(numbers, path, "run"), range=ranges.pop())


def _game_score(table: pd.DataFrame, path: Path, record: RunRecord) -> pd.DataFrame:
    """The short game's score, named as GAMA-Bench names the game (one game: run 1), on the range the
    game's scoring defines (0-100)."""
    from ..games.task import game_class

    bounds = game_class("guessing").score_bounds("thesis")
    return table.assign(game="guessing", run=1, range=range_text(*bounds))


class QuickstartTask(Task[QuickstartOptions]):
    """Administration, parsing, scoring and a report on a built-in demonstration scale."""

    name = "quickstart"
    Options = QuickstartOptions
    Result = AdministrationUnit | GameUnit
    score_tables = (
        ScoreTable(
            "scores.csv",
            group="scale",
            repeat="run",
            keys=("scale", "run", "valid_rate", "positional_items", "asks", "refused"),
            prepare=_scale_scores,
        ),
        ScoreTable("game.json", group="game", repeat="run", prepare=_game_score),
    )

    def units(self) -> list[WorkUnit]:
        units = [WorkUnit(f"run-{r:03d}", {"run": r}) for r in range(1, self.options.runs + 1)]
        if self.options.game_players:
            units.append(WorkUnit(GAME_UNIT, {"game": "guessing"}))
        return units

    def unit_calls(self, unit: WorkUnit) -> float:
        """For the ETA: an administration asks once (re-asks are rare), the game once per seat and round."""
        if "game" in unit.payload:
            return float(self.options.game_players * self.options.game_rounds)
        return 1.0

    async def run_unit(self, unit: WorkUnit, ctx: ChatContext) -> Any:
        if "game" in unit.payload:
            return await self._play_game(unit, ctx)
        scale = demo_scale()
        order = list(scale.item_indices)
        ctx.rng("item-order").shuffle(order)
        params = GenerationParams(max_tokens=self.options.max_tokens)  # a default: the user's wins
        result = await administer(
            scale,
            ctx,
            order=order,
            params=params,
            reask_template=REASK,
            max_reasks=self.options.max_reasks,
            sample=unit.payload["run"],
        )
        return {"order": order, **result.to_json()}

    async def _play_game(self, unit: WorkUnit, ctx: ChatContext) -> dict[str, Any]:
        """Guess 2/3 of the Average with the paper's rules, ``game_players`` model seats, ``game_rounds``."""
        from ..games.engine import Table, table_context
        from ..games.prompts import PromptSet
        from ..games.seats import build_seats
        from ..games.task import game_class

        o = self.options
        cls = game_class(unit.payload["game"])
        game = cls(cls.Params(), o.game_players, o.game_rounds, PromptSet(cls.folder, cls.builtin), ctx.rng)
        # the game is played at the paper's temperature (fixed: -O game_temperature changes it)
        params = CallParams(
            temperature=o.game_temperature, max_tokens=o.game_max_tokens, fixed={"temperature"}
        )
        seats = build_seats(None, o.game_players)
        table = Table(
            game,
            seats,
            table_context(ctx),
            params,
            unit.unit_id,
            o.game_max_reasks,
            "repeat",
            game.truncate_after,
        )
        await game.play(table)
        return {
            "game": unit.payload["game"],
            "run": 1,
            "players": o.game_players,
            "rounds_planned": o.game_rounds,
            "params": game.info(),
            "seats": [seat.spec for seat in seats],
            "fallbacks": table.fallbacks,
            "summary": game.summary(),
            "rounds": game.stored_rounds(),
        }

    def analyze(self, record: RunRecord) -> list[Path]:
        scale = demo_scale()
        run_dir, calls, manifest = record.run_dir, record.calls, record.manifest
        answer_rows, score_rows = [], []
        game_result = None
        positional_replies = positional_items = 0
        for unit, typed in record.results(self.Result):
            if isinstance(typed, GameUnit):
                if unit.unit_id == GAME_UNIT:
                    game_result = unit.result
                continue
            result = typed.administration()
            positional_replies += result.positional_replies
            positional_items += len(result.positional)
            for index in scale.item_indices:
                answer_rows.append({"run": unit.unit_id, "item": index, "answer": result.answers.get(index)})
            score_rows.append(
                {
                    "run": unit.unit_id,
                    **scale.score(result.answers),
                    "valid_rate": result.valid_rate(scale),
                    "positional_items": len(result.positional),
                    "asks": result.asks,
                    "refused": result.refused,
                }
            )
        answers = pd.DataFrame(answer_rows)
        scores = pd.DataFrame(score_rows)
        summary = _summary(scores, scale.subscale_names) if not scores.empty else pd.DataFrame()
        chart = (
            bar_chart(
                {
                    row["subscale"]: (row["mean"], 0.0 if math.isnan(row["sd"]) else row["sd"])
                    for _, row in summary.iterrows()
                    if not math.isnan(row["mean"])
                },
                run_dir / "scores.png",
                "llmpsych demo scale: mean ± sd over runs",
                (1, 5),
            )
            if not summary.empty
            else None
        )
        leaning = agreement(scale, raw_matrix(scale, answers.assign(scale=scale.name)))
        warning = leaning.warning(scale.subscale_names)
        n_done = len(score_rows)
        latency = float(calls.frame()["latency_s"].fillna(0).sum()) / max(1, len(calls))
        model = manifest.get("config", {}).get("model", "?")
        n_valid = int(answers["answer"].notna().sum()) if not answers.empty else 0
        measured = (
            f"Model `{model}` answered the llmpsych demonstration scale ({scale.n_items} statements, 1-5, "
            "two subscales of four items, items 3 and 6 reverse-keyed) "
            f"{n_done} times, each time with its own item order (seed {manifest.get('seed', 0)}). "
            "The scale is written for llmpsych, is not validated and has no human norms: it demonstrates "
            "the pipeline, not a finding. n = number of administrations."
        )
        valid = (
            f"{n_valid} of {scale.n_items * n_done} items answered in range after re-asking; "
            f"{len(calls)} model calls, mean latency {latency:.2f} s. "
            + positional_note(
                positional_replies,
                positional_items,
                scale.n_items * n_done,
            )
        )
        sections = [
            ("What was measured", measured),
            (
                "Scores (mean ± sd over runs, ddof = 1)",
                (f"**{warning}**\n\n" if warning else "") + table(summary),
            ),
            ("Acquiescence", acquiescence_text(leaning, warning)),
            ("Valid answers", valid),
            (
                "Per run",
                # a subscale with an invalid answer has no score: shown as a dash, not as "nan"
                table(scores.astype(object).where(scores.notna(), "–"))
                + "\n\npositional_items: items of the run counted invalid because the reply numbered its "
                "answers by position (see *Valid answers*).",
            ),
            (
                "Files",
                "answers.csv (one row per run and item), scores.csv (one row per run), "
                f"{QUESTIONNAIRE_FILE} (the subscale means and the acquiescence counts as printed), "
                "run.sqlite (every request and answer); `llmpsych export` writes the transcripts.",
            ),
        ]
        if chart:
            sections.insert(2, ("Chart", f"![scores]({chart.name})"))
        game_files: list[Path] = []
        if game_result is not None:
            game_section, game_files = game_report(game_result, run_dir)
            sections.insert(-1, game_section)
        outputs = write_run_report(
            run_dir,
            "llmpsych quickstart report",
            sections,
            tables=[("answers", answers), ("scores", scores)],
            figures=[chart],
            files=game_files,
        )
        atomic_write_text(run_dir / "summary.json", json.dumps(summary.to_dict(orient="records"), indent=1))
        outputs.append(run_dir / "summary.json")
        result = {
            "scale": scale.name,
            "subscales": json.loads(summary.to_json(orient="records")) if not summary.empty else [],
            "acquiescence": leaning.to_json(),
            "acquiescence_line": leaning.line(),
            "warning": warning,
        }
        atomic_write_text(run_dir / QUESTIONNAIRE_FILE, json.dumps(result, indent=1))
        outputs.append(run_dir / QUESTIONNAIRE_FILE)
        return outputs


def acquiescence_text(leaning: Agreement, warning: str) -> str:
    """The report's acquiescence section: the counts, the rule, and what the scores mean."""
    return (
        f"{leaning.line()}\n\n"
        + (
            f"**{warning}**\n\n"
            if warning
            else "By the rule below the answers are not an acquiescence artefact. "
        )
        + f"Rule: the profile is called an acquiescence artefact when at least {ARTEFACT_SHARE:.0%} of the "
        f"answers to the forward-keyed statements and at least {ARTEFACT_SHARE:.0%} of the answers to the "
        "reverse-keyed ones (which say the opposite) lie on the same side of the midpoint (agree, or "
        "disagree). Even without an artefact the "
        "demonstration scale is unvalidated and has no human norms: its scores show the pipeline working, "
        "not a trait of the model."
    )


def _summary(scores: pd.DataFrame, subscales: tuple[str, ...]) -> pd.DataFrame:
    rows = []
    for name in subscales:
        column = scores[name].dropna()
        rows.append(
            {
                "subscale": name,
                "n": len(column),
                "mean": column.mean() if len(column) else math.nan,
                "sd": column.std(ddof=1) if len(column) > 1 else math.nan,
            }
        )
    return pd.DataFrame(rows)


def game_report(result: dict[str, Any], run_dir: Path) -> tuple[tuple[str, str], list[Path]]:
    """The report section of the short game, and the files it wrote (``game.csv``, ``game.json``,
    ``game.png``)."""
    from ..games.guessing import GuessingRound
    from ..games.leaderboard import game_score
    from ..games.result import as_result

    score = game_score(result)
    rows = [
        {
            "round": r.round,
            "choices": " ".join(str(c) for c in r.choices),
            "mean": r.mean,
            "target": r.target,
            "winning number": " ".join(str(w) for w in r.winning),
        }
        for r in as_result(result).rounds_as(GuessingRound)
    ]
    frame = pd.DataFrame(rows)
    files = [run_dir / "game.csv", run_dir / "game.json"]
    write_csv(frame, files[0])
    plot = choices_plot(result, run_dir / "game.png")
    summary = {
        "game": "Guess 2/3 of the Average",
        "players": result["players"],
        "rounds": len(result["rounds"]),
        "score": score,
        "mean_choice": result["summary"].get("mean_choice"),
        "fallbacks": result["fallbacks"],
        "plot": None if plot is None else str(plot),
    }
    atomic_write_text(files[1], json.dumps(summary, indent=1))
    score_text = "not computable" if score is None else f"{score:.1f}"
    body = (
        f"{result['players']} seats of the same model played {len(result['rounds'])} rounds of Guess 2/3 of "
        "the Average (GAMA-Bench): each picks an integer in 0-100 and whoever is closest to "
        "2/3 of the mean wins; the equilibrium is everyone picking 0. Each seat keeps its own conversation, "
        "at temperature 1.0 as in the paper. "
        f"**Score {score_text}** on the paper's 0-100 scale (100 - mean choice; higher is closer to the "
        f"equilibrium); mean choice {summary['mean_choice']:.1f}; {result['fallbacks']} unreadable answer(s) "
        "replaced by the fallback (50).\n\n" + table(frame)
    )
    if plot is not None:
        body += f"\n\n![choices per round]({plot.name})"
        files.append(plot)
    return ("Guess 2/3 of the Average (short game)", body), files


def choices_plot(result: dict[str, Any], path: Path) -> Path | None:
    """The games report's Guess 2/3 plot (:mod:`llmpsych.games.plots`): every choice per round with the mean,
    the target and the winning number; None without matplotlib."""
    from ..games.plots import draw, plot_data

    return draw(
        "guessing", plot_data("guessing", [result]), path, "Guess 2/3 of the Average: choices per round"
    )


def questionnaire_lines(run_dir: Path) -> list[str]:
    """What ``llmpsych quickstart`` prints about the questionnaire: the subscale means with n, the
    acquiescence line and, when the rule finds one, the artefact warning (nothing before analysis)."""
    path = run_dir / QUESTIONNAIRE_FILE
    if not path.is_file():
        return []
    result = json.loads(path.read_text(encoding="utf-8"))
    parts = []
    for row in result["subscales"]:
        mean, sd = row.get("mean"), row.get("sd")
        value = "no score" if mean is None else f"{mean:.2f}" + ("" if sd is None else f" ± {sd:.2f}")
        parts.append(f"{row['subscale']} {value} (n = {row['n']})")
    lines = [
        "Demonstration scale (unvalidated, no human norms), mean ± sd over runs: " + ", ".join(parts),
        result["acquiescence_line"],
    ]
    if result["warning"]:
        lines.append(result["warning"])
    return lines


def console_lines(run_dir: Path) -> list[str]:
    """What ``llmpsych quickstart`` prints after its summary: the questionnaire's result
    (:func:`questionnaire_lines`), then the short game's (nothing when it was not played)."""
    lines = questionnaire_lines(run_dir)
    path = run_dir / "game.json"
    if not path.is_file():
        return lines
    game = json.loads(path.read_text(encoding="utf-8"))
    score = "not computable" if game["score"] is None else f"{game['score']:.1f} / 100"
    lines.append(
        f"Guess 2/3 of the Average, {game['players']} seats x {game['rounds']} rounds: score {score} "
        f"(mean choice {game['mean_choice']:.1f}; the equilibrium is 0)"
    )
    if game.get("plot"):
        lines.append(f"Plot: {game['plot']}")
    return lines
