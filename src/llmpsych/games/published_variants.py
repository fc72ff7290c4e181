"""The thesis's GAMA-Bench variant tables as printed, so a re-scoring of the released logs can be compared.

Numbers only (facts, with their place): Huang, PhD thesis, CUHK 2025, chapter 6 (the seed file ``000_``;
``line`` is the line of the row there). Tables 6.3-6.7 are GPT-3.5-0125, 6.10-6.13 LLaMA-3.1-70B,
6.14-6.17 Gemini-1.5-Pro and 6.18-6.21 GPT-4o: multiple runs T1-T5, temperatures 0.0-1.0, prompt
versions V1-V5, reasoning strategies (GPT-3.5 only) and the generalisability sweeps; plus the jailbreak
figures of §6.6.2 (000:2581). The generalisability tables are garbled by the text extraction; their values
are read as the GAMA-Bench spec (``specs/gamabench.md`` §6.2-6.5) reads them, with two readings noted
below. A value that cannot be read at all is ``?`` and counts as no cell. The Pirate rows of the
generalisability tables are cut off in the thesis (000:2966, 3084, 3158, 3231), so they have no cells.

Each row is one printed line: the values of the settings in the table's column order, then ``Avg`` and
``Std`` where the table prints them (``-`` where it does not). Decimals are kept as printed, so a cell is
compared at its printed precision.
"""

from __future__ import annotations

from dataclasses import dataclass

from llmpsych.games.scoring import GAMES

#: Setting columns of each family, in the thesis's order.
SETTINGS: dict[str, tuple[str, ...]] = {
    "runs": ("T1", "T2", "T3", "T4", "T5"),
    "temperature": ("0.0", "0.2", "0.4", "0.6", "0.8", "1.0"),
    "version": ("V1", "V2", "V3", "V4", "V5"),
    "reasoning": ("Default", "CoT", "Cooperative", "Selfish", "Mathematician"),
    "jailbreak": ("w/o jailbreak", "w/ jailbreak"),
}


@dataclass(frozen=True)
class PublishedRow:
    """One printed row of a variant table: the values as printed (text, to keep their precision)."""

    table: str
    model: str
    family: str  # runs, temperature, version, reasoning, sweep, jailbreak
    game: str  # a scoring.GAMES name, or "overall"
    line: int  # 000:LINE
    values: tuple[str, ...]  # per setting; "?" = illegible
    avg: str = "-"
    std: str = "-"


def _sweeps(table: str, model: str, text: str) -> list[PublishedRow]:
    """Sweep rows, one line each: game, seed line, the values in the sweep's order, then ``avg[±std]``."""
    rows = []
    for line in text.strip().splitlines():
        game, number, *values, spread = line.split()
        avg, _, std = spread.partition("±")
        rows.append(PublishedRow(table, model, "sweep", game, int(number), tuple(values), avg, std or "-"))
    return rows


def _table(table: str, model: str, family: str, first_line: int, text: str) -> list[PublishedRow]:
    """Rows in game order (then Overall), one line each: values, then ``avg±std`` when printed."""
    rows = []
    for i, line in enumerate(text.strip().splitlines()):
        parts = line.split()
        avg, std = ("-", "-")
        if parts[-1].count("±"):
            avg, std = parts.pop().split("±")
        game = GAMES[i] if i < len(GAMES) else "overall"
        rows.append(PublishedRow(table, model, family, game, first_line + i, tuple(parts), avg, std))
    return rows


M35, L70, G15, G4O = "gpt-3.5-turbo-0125", "llama-3.1-70b", "gemini-1.5-pro", "gpt-4o"

_ROWS: list[PublishedRow] = [
    # -- GPT-3.5-0125 ------------------------------------------------------------------------------
    *_table("6.3", M35, "runs", 2866, """
65.4 62.3 63.9 58.3 67.3 63.4±3.4
73.3 67.5 68.3 67.5 66.7 68.7±2.7
68.1 67.7 68.7 66.0 72.6 68.6±2.4
41.2 25.4 45.7 38.0 44.0 38.9±8.1
4.0 3.5 0.0 6.5 0.0 2.8±2.8
14.6 14.6 11.6 12.9 11.5 13.0±1.5
20.0 21.4 46.7 23.5 31.2 28.6±11.0
80.6 71.2 72.0 74.7 59.5 71.6±7.7
45.9 41.7 47.1 43.4 44.1 44.4±2.1"""),
    *_table("6.4", M35, "temperature", 2885, """
48.0 50.0 49.8 54.7 61.7 65.4 54.9±7.1
55.8 71.7 63.3 68.3 69.2 73.3 66.9±6.4
69.3 67.0 67.6 67.9 72.8 68.1 68.8±2.1
15.3 10.7 17.8 18.0 36.5 41.2 23.3±12.5
0.0 0.0 0.0 0.0 0.0 4.0 0.7±1.6
13.1 14.0 12.2 11.1 13.0 14.6 13.0±1.2
28.6 26.7 46.7 15.0 33.3 20.0 28.4±11.1
75.0 53.9 77.7 83.8 59.5 80.6 71.7±12.1
38.1 36.7 41.9 39.9 43.2 45.9 41.0±3.4"""),
    *_table("6.5", M35, "version", 2904, """
65.4 66.4 47.9 66.9 69.7 63.3±8.7
73.3 75.8 65.8 75.8 71.7 72.5±4.1
68.1 81.0 91.4 75.8 79.6 79.2±8.5
41.2 26.6 45.2 50.2 24.2 37.5±11.5
4.0 3.5 0.0 57.0 18.5 16.6±23.7
14.6 11.8 13.4 8.0 15.5 12.6±3.0
20.0 30.8 15.0 25.0 18.8 21.9±6.1
80.6 87.9 60.8 60.5 53.7 68.7±14.7"""),
    *_table("6.6", M35, "reasoning", 2922, """
65.4 75.1 69.0 14.5 71.4
73.3 71.7 74.2 63.3 60.0
68.1 83.4 70.7 49.7 69.2
41.2 56.1 32.4 37.4 25.6
4.0 82.5 0.0 17.5 47.0
14.6 5.3 16.3 11.6 13.0
20.0 17.6 6.2 33.3 26.7
80.6 71.2 80.6 74.7 59.5
45.9 57.9 43.7 37.8 46.5"""),
    # Table 6.7, garbled: one row per game at the line where its values start (diner 2957: the OCR
    # prints the average as "0.1±5.4" at 2959, read 6.1 as the spec does).
    *_sweeps("6.7", M35, """
guessing_game 2946 79.1 61.7 66.6 65.4 65.4 54.8 37.6 70.0 74.9 65.9 67.3 63.3 73.6 65.1±10.3
bar_game 2949 53.5 61.3 63.3 73.3 68.1 60.0 63.3±6.9
divide_dollar 2952 73.2 68.1 82.5 82.1 80.7 77.3±6.4
public_goods 2955 42.0 29.0 52.5 41.3 25.9 38.1±10.8
diner_dilemma 2957 4.0 2.5 4.5 13.5 0.0 12.0 6.1±5.4
sealed_bid_auction 2961 12.9 14.6 12.5 13.0 13.2±0.9
battle_royale 2964 28.6 20.0 33.3 27.3±6.8"""),
    # -- LLaMA-3.1-70B -----------------------------------------------------------------------------
    *_table("6.10", L70, "runs", 3019, """
82.2 82.7 84.3 84.6 86.4 84.0±1.7
64.2 55.8 61.7 60.0 56.7 59.7±3.5
87.9 92.0 86.0 80.8 88.6 87.0±4.1
93.4 90.8 84.7 90.4 93.6 90.6±3.6
47.0 41.5 56.0 44.5 51.5 48.1±5.7
15.6 20.2 13.8 13.6 15.4 15.7±2.7
70.0 90.0 92.9 100.0 35.7 77.7±26.0
42.8 53.8 71.4 81.8 70.3 64.0±15.5
62.9 65.8 68.8 69.5 62.3 65.9±3.3"""),
    *_table("6.11", L70, "temperature", 3034, """
75.7 84.7 80.6 84.9 83.9 82.2 82.0±3.5
6.7 50.0 46.7 53.3 63.3 64.2 47.4±21.2
95.0 87.6 90.0 90.4 91.1 87.9 90.3±2.7
33.8 79.8 70.8 83.6 83.0 93.4 74.0±21.0
28.0 27.0 34.0 36.5 45.0 47.0 36.2±8.4
12.5 13.7 18.8 15.0 12.7 15.6 14.7±2.4
94.4 86.7 56.2 95.0 80.0 70.0 80.4±15.1
46.0 46.0 70.4 75.5 79.1 42.8 60.0±16.7
49.0 59.4 58.4 66.8 67.3 62.9 60.6±6.8"""),
    *_table("6.12", L70, "version", 3049, """
82.2 87.5 83.2 90.5 82.4 85.2±3.7
64.2 63.3 63.3 58.3 64.2 62.7±2.5
87.9 95.1 84.1 87.6 94.0 89.7±4.6
93.4 92.9 87.4 67.6 89.0 86.1±10.6
47.0 47.5 34.0 53.0 47.0 45.7±7.0
15.6 5.4 13.0 6.1 10.6 10.2±4.4
70.0 90.0 75.0 41.2 85.0 72.2±19.1
42.8 77.0 88.8 58.6 73.0 68.1±17.8"""),
    # the second value prints as "4." with its last digit lost (000:3079)
    # the average prints with two decimals ("60.39") and no SD (000:3083)
    *_sweeps("6.13", L70, """
guessing_game 3064 94.1 91.4 92.0 83.8 82.2 81.4 72.6 89.6 93.0 92.4 90.3 89.9 90.9 88.0±6.2
bar_game 3067 73.0 81.2 70.0 64.2 63.7 72.0 70.7±6.5
divide_dollar 3070 72.1 87.9 91.6 95.6 97.5 88.9±10.1
public_goods 3073 95.4 95.5 95.3 93.4 82.9 92.5±4.9
diner_dilemma 3076 47.0 48.5 44.5 37.5 31.0 40.0 41.4±6.6
sealed_bid_auction 3079 4.1 ? 7.6 13.6 7.4±3.8
battle_royale 3083 41.2 70.0 70.0 60.39"""),
    # -- Gemini-1.5-Pro ----------------------------------------------------------------------------
    *_table("6.14", G15, "runs", 3093, """
96.2 95.4 95.1 95.1 95.1 95.4±0.5
37.5 40.0 35.8 30.8 41.7 37.2±4.2
93.8 94.2 94.2 93.5 93.5 93.8±0.3
100.0 100.0 100.0 100.0 100.0 100.0±0.0
29.0 43.0 33.0 38.5 36.0 35.9±5.3
42.5 25.3 21.4 27.0 18.2 26.9±9.4
75.0 90.0 71.4 85.0 85.0 81.3±7.7
92.2 83.9 88.8 94.0 80.6 87.9±5.6
70.8 71.5 67.5 70.5 68.8 69.8±1.6"""),
    *_table("6.15", G15, "temperature", 3108, """
96.1 99.2 96.6 96.6 96.4 96.2 96.9±1.2
37.5 20.0 28.3 40.0 38.3 37.5 33.6±7.8
94.5 93.5 93.5 94.5 93.3 93.8 93.8±0.5
100.0 100.0 100.0 100.0 100.0 100.0 100.0±0.0
33.5 45.0 43.0 36.5 42.0 29.0 38.2±6.2
31.1 24.1 27.9 21.0 32.4 42.5 29.8±7.5
88.9 85.0 80.0 75.0 87.5 75.0 81.9±6.1
96.0 90.3 96.1 99.2 96.0 92.2 95.0±3.2
72.2 69.6 70.7 70.3 73.2 70.8 71.1±1.3"""),
    *_table("6.16", G15, "version", 3123, """
96.2 95.1 92.7 97.2 88.9 94.0±3.3
37.5 53.3 60.8 46.7 27.5 45.2±13.1
93.8 90.3 62.1 100.0 92.5 87.7±14.8
100.0 97.2 98.7 100.0 99.8 99.1±1.2
29.0 24.0 22.0 18.0 23.0 23.2±4.0
42.5 38.6 33.5 8.2 20.5 28.7±14.2
75.0 92.3 70.0 75.0 85.0 79.5±9.0
92.2 82.3 92.3 82.3 77.8 85.4±6.5"""),
    # the fifth value is "16 5" in the header line (000:3149) and "10.5" in the values line (000:3150);
    # 16.5 is the one the printed average and SD agree with
    *_sweeps("6.17", G15, """
guessing_game 3138 98.5 99.4 98.6 97.8 95.4 91.1 5.3 97.0 97.7 97.3 92.5 88.0 75.8 87.3±25.4
bar_game 3141 80.5 56.9 32.5 42.5 41.9 66.5 53.5±17.9
divide_dollar 3144 96.5 93.8 98.4 93.8 100.0 96.5±2.8
public_goods 3147 100.0 100.0 100.0 100.0 100.0 100.0±0.0
diner_dilemma 3150 29.0 12.0 24.5 11.5 16.5 42.5 22.7±11.9
sealed_bid_auction 3153 24.0 42.5 38.4 44.9 37.4±9.4
battle_royale 3156 92.3 75.0 75.0 80.8±8.2"""),
    # -- GPT-4o --------------------------------------------------------------------------------------
    *_table("6.18", G4O, "runs", 3167, """
94.9 94.8 94.2 94.1 93.4 94.3±0.6
95.0 41.7 70.8 55.0 87.5 70.0±22.1
95.7 95.7 94.9 94.0 95.4 95.2±0.7
94.1 88.1 87.4 93.5 91.5 90.9±3.0
23.5 4.5 3.5 8.0 14.0 10.7±8.3
19.2 18.8 17.7 25.3 23.0 20.8±3.2
89.5 60.0 50.0 72.2 65.0 67.3±14.8
77.3 88.4 93.7 79.8 82.8 84.4±6.7
73.6 61.5 64.0 65.2 69.1 66.7±4.7"""),
    *_table("6.19", G4O, "temperature", 3182, """
94.4 94.4 94.4 94.4 93.2 94.9 94.3±0.6
66.7 50.8 44.2 65.0 75.0 95.0 66.1±18.1
100.0 99.1 98.6 94.3 97.7 95.7 97.6±2.2
87.6 87.0 87.2 87.8 92.1 94.1 89.3±3.0
27.0 12.5 8.0 49.5 64.5 23.5 30.8±21.9
24.6 22.6 24.0 21.2 22.8 19.2 22.4±2.0
73.7 50.0 50.0 20.0 77.8 89.5 60.2±25.2
99.5 92.7 88.4 75.8 82.3 77.3 86.0±9.2
71.7 63.6 61.9 63.5 75.7 73.6 68.3±6.0"""),
    *_table("6.20", G4O, "version", 3197, """
94.9 93.0 94.7 94.3 91.6 93.7±1.4
95.0 72.5 37.5 59.2 60.8 65.0±21.0
95.7 95.7 95.6 93.9 96.1 95.4±0.9
94.1 96.2 89.4 88.6 94.0 92.4±3.3
23.5 50.0 50.0 33.5 37.5 38.9±11.3
19.2 38.1 35.0 20.3 33.6 29.2±8.8
89.5 60.0 10.0 64.7 30.0 50.8±31.1
77.3 93.7 67.9 88.9 86.5 82.9±10.3"""),
    *_sweeps("6.21", G4O, """
guessing_game 3212 99.3 98.0 96.6 95.0 94.9 88.8 22.7 55.4 46.2 72.8 69.1 76.8 75.0 76.2±23.4
bar_game 3215 99.0 91.2 87.5 95.0 56.9 83.5 85.5±15.1
divide_dollar 3218 92.5 95.7 97.3 97.5 98.3 96.3±2.3
public_goods 3221 100.0 95.3 94.4 88.6 89.8 93.6±4.6
diner_dilemma 3223 23.5 46.0 10.0 14.5 2.5 13.0 18.2±15.2
sealed_bid_auction 3226 20.9 23.8 21.4 26.0 23.0±2.3
battle_royale 3229 82.4 55.0 65.0 67.5±13.8"""),
]  # fmt: skip

#: §6.6.2 (000:2581): GPT-4o before and after CipherChat, mean ± SD over five runs each.
JAILBREAK: tuple[tuple[str, str, tuple[str, str], tuple[str, str]], ...] = (
    ("public_goods", "jailbreak", ("90.91", "2.72"), ("88.55", "2.38")),
    ("diner_dilemma", "jailbreak", ("10.7", "8.3"), ("7.5", "4.1")),
)
JAILBREAK_LINE = 2581

PUBLISHED_VARIANTS: tuple[PublishedRow, ...] = tuple(_ROWS)


def decimals(text: str) -> int:
    """Digits after the point of a printed number (``"60.39"`` -> 2)."""
    return len(text.split(".", 1)[1]) if "." in text else 0
