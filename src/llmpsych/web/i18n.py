"""The text of the participants' pages in every shipped language (:mod:`llmpsych.i18n`): a session's
``lang`` chooses it. A game's own texts (instructions, question, history) are the game's
(:mod:`llmpsych.games.people_text`); the reason a game gives for refusing an answer is its own, in
English, framed in the page's language."""

from __future__ import annotations

from ..i18n import Catalog

PAGES = Catalog(
    {
        "en": {
            "page.title": "{name} · game",
            "you.are": "You are",
            "lobby.title": "Welcome — please wait",
            "lobby.text": "The game starts when every participant has joined, or when the experimenter "
            "starts it.",
            "lobby.count": "{joined} of {seats} participants have joined.",
            "lobby.hint": "Keep this page open; it updates by itself. If you close it, open your link again "
            "to come back to your seat.",
            "waiting.title": "Thank you — your answer is in",
            "waiting.text": "Waiting for the other players. The next question appears here by itself.",
            "finished.title": "The game is over",
            "finished.text": "Thank you for taking part. You can close this page.",
            "finished.result": "Your result",
            "own.title": "Your score so far in {title}",
            "round": "Round {round}",
            "round.of": "Round {round} of {rounds}",
            "round.short": "round {round}",
            "round.short.of": "round {round} of {rounds}",
            "more": "You are also playing another game at this table: its question comes after this one.",
            "retry": "Your last answer could not be used. Please answer with {valid}.",
            "answer.label": "Your answer ({valid})",
            "send": "Send answer",
            "deadline": "Please answer within {deadline} seconds of the question appearing (about {left} s "
            "left when this page loaded); otherwise a default answer is entered for you.",
            "history.title": "What happened so far",
            "rules.title": "Instructions",
            "refused": "This answer cannot be used: {reason}. Please answer with {valid}.",
            "refused.error": "This answer cannot be used ({kind}). Please answer with {valid}.",
            "empty": "Please give an answer.",
            "too.long": "The answer is too long (at most {chars} characters).",
            "score.rounds won": "rounds won",
            "score.total gain": "total gain",
            "score.rounds won of default rounds": "rounds won by the default answers entered for you",
            "score.total gain of default rounds": "gain from the default answers entered for you",
        },
        "de": {
            "page.title": "{name} · Spiel",
            "you.are": "Sie sind",
            "lobby.title": "Willkommen — bitte warten Sie",
            "lobby.text": "Das Spiel beginnt, wenn alle Teilnehmenden da sind oder die Versuchsleitung es "
            "startet.",
            "lobby.count": "{joined} von {seats} Teilnehmenden sind da.",
            "lobby.hint": "Lassen Sie diese Seite offen; sie aktualisiert sich selbst. Wenn Sie sie "
            "schließen, öffnen Sie Ihren Link erneut, um zu Ihrem Platz zurückzukehren.",
            "waiting.title": "Danke — Ihre Antwort ist angekommen",
            "waiting.text": "Wir warten auf die anderen Spieler. Die nächste Frage erscheint hier von "
            "selbst.",
            "finished.title": "Das Spiel ist vorbei",
            "finished.text": "Danke für Ihre Teilnahme. Sie können diese Seite schließen.",
            "finished.result": "Ihr Ergebnis",
            "own.title": "Ihr bisheriges Ergebnis in {title}",
            "round": "Runde {round}",
            "round.of": "Runde {round} von {rounds}",
            "round.short": "Runde {round}",
            "round.short.of": "Runde {round} von {rounds}",
            "more": "Sie spielen an diesem Tisch noch ein weiteres Spiel: Seine Frage kommt nach dieser.",
            "retry": "Ihre letzte Antwort konnte nicht verwendet werden. Bitte antworten Sie mit {valid}.",
            "answer.label": "Ihre Antwort ({valid})",
            "send": "Antwort senden",
            "deadline": "Bitte antworten Sie innerhalb von {deadline} Sekunden nach Erscheinen der Frage "
            "(beim Laden dieser Seite noch etwa {left} s); sonst wird eine Standardantwort für Sie "
            "eingetragen.",
            "history.title": "Was bisher geschah",
            "rules.title": "Anleitung",
            "refused": "Diese Antwort kann nicht verwendet werden: {reason}. Bitte antworten Sie mit "
            "{valid}.",
            "refused.error": "Diese Antwort kann nicht verwendet werden ({kind}). Bitte antworten Sie mit "
            "{valid}.",
            "empty": "Bitte geben Sie eine Antwort ein.",
            "too.long": "Die Antwort ist zu lang (höchstens {chars} Zeichen).",
            "score.rounds won": "gewonnene Runden",
            "score.total gain": "Gesamtgewinn",
            "score.rounds won of default rounds": "Runden, die die für Sie eingetragenen "
            "Standardantworten gewannen",
            "score.total gain of default rounds": "Gewinn aus den für Sie eingetragenen Standardantworten",
        },
    }
)

__all__ = ["PAGES"]
