"""GAMA-Bench: eight N-player, multi-round game-theory games scored 0-100 (scoring and released logs).

Names are imported on first use, so importing the package (e.g. for ``--help``) stays cheap."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..lazy import first_use

if TYPE_CHECKING:
    from .released_logs import (
        DEFAULT_MODEL,
        PUBLISHED,
        ReleasedRun,
        read_log,
        released_models,
        released_runs,
        score_released,
    )
    from .scoring import (
        GAME_TITLES,
        GAMES,
        AuctionLog,
        BarLog,
        BattleLog,
        BattleTurn,
        DinerLog,
        DollarLog,
        GameLog,
        GoodsLog,
        GuessingLog,
        PirateLog,
        PirateRound,
        RunSummary,
        auction_score,
        bar_score,
        battle_score,
        diner_score,
        dollar_score,
        goods_score,
        guessing_score,
        leaderboard_row,
        overall_score,
        pirate_score,
        score,
        summarize,
    )

#: public name -> the submodule defining it
_WHERE: dict[str, str] = {
    "DEFAULT_MODEL": "released_logs",
    "PUBLISHED": "released_logs",
    "ReleasedRun": "released_logs",
    "read_log": "released_logs",
    "released_models": "released_logs",
    "released_runs": "released_logs",
    "score_released": "released_logs",
    "GAME_TITLES": "scoring",
    "GAMES": "scoring",
    "AuctionLog": "scoring",
    "BarLog": "scoring",
    "BattleLog": "scoring",
    "BattleTurn": "scoring",
    "DinerLog": "scoring",
    "DollarLog": "scoring",
    "GameLog": "scoring",
    "GoodsLog": "scoring",
    "GuessingLog": "scoring",
    "PirateLog": "scoring",
    "PirateRound": "scoring",
    "RunSummary": "scoring",
    "auction_score": "scoring",
    "bar_score": "scoring",
    "battle_score": "scoring",
    "diner_score": "scoring",
    "dollar_score": "scoring",
    "goods_score": "scoring",
    "guessing_score": "scoring",
    "leaderboard_row": "scoring",
    "overall_score": "scoring",
    "pirate_score": "scoring",
    "score": "scoring",
    "summarize": "scoring",
}

__all__ = [
    "AuctionLog",
    "BarLog",
    "BattleLog",
    "BattleTurn",
    "DEFAULT_MODEL",
    "DinerLog",
    "DollarLog",
    "GAMES",
    "GAME_TITLES",
    "GameLog",
    "GoodsLog",
    "GuessingLog",
    "PUBLISHED",
    "PirateLog",
    "PirateRound",
    "ReleasedRun",
    "RunSummary",
    "auction_score",
    "bar_score",
    "battle_score",
    "diner_score",
    "dollar_score",
    "goods_score",
    "guessing_score",
    "leaderboard_row",
    "overall_score",
    "pirate_score",
    "read_log",
    "released_models",
    "released_runs",
    "score",
    "score_released",
    "summarize",
]


__getattr__ = first_use(__name__, _WHERE)
