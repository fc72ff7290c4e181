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
            "deadline.policy": "Please answer within {deadline} seconds of the question appearing; then "
            "{then}, and this page moves on by itself.",
            "deadline.then.default": "the game's default answer is entered for you",
            "deadline.then.skip": "you sit this round out",
            "deadline.then.repeat": "your previous answer is entered again (the game's default answer if you "
            "have none)",
            "deadline.then.llm": "a computer player answers for you",
            "countdown": "{left} seconds left",
            "countdown.paused": "{left} seconds left (paused)",
            "paused": "The experimenter has paused the game; the clock is stopped.",
            "removed.title": "Your part in the game has ended",
            "removed.text": "The experimenter has closed your seat. Thank you for taking part; you can close "
            "this page.",
            "notice.deadline": "Time ran out",
            "notice.advance": "The experimenter moved the game on",
            "notice.remove": "Your seat was closed by the experimenter",
            "notice.where": "round {round}",
            "notice.where.of": "round {round} of {title}",
            "notice.frame": "{why} in {where}: {what}",
            "notice.skipped": "you sat this round out (no answer of yours was counted).",
            "notice.repeated": "your previous answer ({answer}) was entered again for you.",
            "notice.stand-in": "a computer player answered for you this round.",
            "notice.default": "the game's default answer ({answer}) was entered for you.",
            "notice.default.none": "the game's default answer was entered for you.",
            "notice.entered": "The experimenter entered the game's default answer ({answer}) for you in "
            "round {round}.",
            "late.closed": "Your answer came after this question had closed, so it was not counted.",
            "late.not.open": "This question is not open now, so this answer was not counted.",
            "late.moved": "The page now shows where the game is.",
            "form.old": "This form was out of date, so nothing was taken; the page now shows where the game "
            "is.",
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
            "step.title.consent": "Information and consent",
            "step.title.instructions": "Instructions",
            "step.title.questionnaire": "Questionnaire",
            "step.title.debrief": "Thank you",
            "continue": "Continue",
            "consent.needed": "To take part, please tick the box to agree.",
            "quiz.title": "Check your understanding",
            "quiz.hint": "Answer every question correctly to continue.",
            "quiz.not.right": "(not right)",
            "quiz.your.answer": "Your answer",
            "quiz.check": "Check my answers",
            "quiz.none": "I have read the instructions",
            "quiz.wrong": "{wrong} of {total} answers are not right (question {numbers}). Please read the "
            "instructions again and correct them.",
            "questionnaire.range": "From {low} to {high}.",
            "questionnaire.send": "Send",
            "questionnaire.missing": "Please answer every statement (number {item} has no answer).",
            "payment.title": "Your payment",
            "payment.points": "Points",
            "payment.of.default": "of which {points} from default answers entered for you",
            "payment.fee": "Participation fee",
            "payment.total": "Total",
            "completion.title": "Completion",
            "completion.code": "Your completion code",
            "completion.link": "Return to the panel to confirm your participation",
            "room.title": "Welcome",
            "room.label": "Your participant label",
            "room.unlisted": "this participant label is not on the session's list (check your link)",
            "room.need.label": "please give your participant label",
            "room.full": "this session is full: every seat is taken",
            "room.label.empty": "a participant label cannot be empty",
            "room.label.long": "a participant label has at most {chars} characters",
            "room.label.chars": "a participant label holds letters, digits, '-', '_' and '.' only",
            "table.others": "At your table: you, {others}.",
            "table.people": "{people} other participant(s)",
            "table.nobody": "no other participant",
            "table.machines": "{others} and {machines} computer player(s) answering through an AI language "
            "model",
            "instructions.deadline": "You have {deadline} seconds for each decision; if you do not answer in "
            "time, {then}, and this is marked as such.",
            "instructions.payment": "Payment: {stakes}.",
            "instructions.per.point": "each point you earn in the game is paid {rate} {currency}",
            "instructions.fee": "you receive {fee} {currency} for taking part",
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
            "deadline.policy": "Bitte antworten Sie innerhalb von {deadline} Sekunden nach Erscheinen der "
            "Frage; danach {then}, und diese Seite geht von selbst weiter.",
            "deadline.then.default": "wird die Standardantwort des Spiels für Sie eingetragen",
            "deadline.then.skip": "setzen Sie diese Runde aus",
            "deadline.then.repeat": "wird Ihre vorige Antwort erneut eingetragen (die Standardantwort des "
            "Spiels, wenn Sie noch keine haben)",
            "deadline.then.llm": "antwortet ein Computerspieler für Sie",
            "countdown": "noch {left} Sekunden",
            "countdown.paused": "noch {left} Sekunden (angehalten)",
            "paused": "Die Versuchsleitung hat das Spiel angehalten; die Uhr steht.",
            "removed.title": "Ihr Teil des Spiels ist zu Ende",
            "removed.text": "Die Versuchsleitung hat Ihren Platz geschlossen. Danke für Ihre Teilnahme; Sie "
            "können diese Seite schließen.",
            "notice.deadline": "Die Zeit ist abgelaufen",
            "notice.advance": "Die Versuchsleitung hat das Spiel weitergeführt",
            "notice.remove": "Die Versuchsleitung hat Ihren Platz geschlossen",
            "notice.where": "Runde {round}",
            "notice.where.of": "Runde {round} von {title}",
            "notice.frame": "{why} ({where}): {what}",
            "notice.skipped": "Sie haben diese Runde ausgesetzt (keine Antwort von Ihnen wurde gezählt).",
            "notice.repeated": "Ihre vorige Antwort ({answer}) wurde erneut für Sie eingetragen.",
            "notice.stand-in": "Ein Computerspieler hat in dieser Runde für Sie geantwortet.",
            "notice.default": "Die Standardantwort des Spiels ({answer}) wurde für Sie eingetragen.",
            "notice.default.none": "Die Standardantwort des Spiels wurde für Sie eingetragen.",
            "notice.entered": "Die Versuchsleitung hat in Runde {round} die Standardantwort des Spiels "
            "({answer}) für Sie eingetragen.",
            "late.closed": "Ihre Antwort kam, nachdem diese Frage geschlossen war, und wurde daher nicht "
            "gezählt.",
            "late.not.open": "Diese Frage ist gerade nicht offen; diese Antwort wurde daher nicht gezählt.",
            "late.moved": "Die Seite zeigt jetzt, wo das Spiel steht.",
            "form.old": "Dieses Formular war veraltet, daher wurde nichts übernommen; die Seite zeigt jetzt, "
            "wo das Spiel steht.",
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
            "step.title.consent": "Information und Einwilligung",
            "step.title.instructions": "Anleitung",
            "step.title.questionnaire": "Fragebogen",
            "step.title.debrief": "Vielen Dank",
            "continue": "Weiter",
            "consent.needed": "Um teilzunehmen, kreuzen Sie bitte das Kästchen an, um zuzustimmen.",
            "quiz.title": "Prüfen Sie Ihr Verständnis",
            "quiz.hint": "Beantworten Sie jede Frage richtig, um fortzufahren.",
            "quiz.not.right": "(nicht richtig)",
            "quiz.your.answer": "Ihre Antwort",
            "quiz.check": "Antworten prüfen",
            "quiz.none": "Ich habe die Anleitung gelesen",
            "quiz.wrong": "{wrong} von {total} Antworten sind nicht richtig (Frage {numbers}). Bitte lesen "
            "Sie die Anleitung noch einmal und korrigieren Sie sie.",
            "questionnaire.range": "Von {low} bis {high}.",
            "questionnaire.send": "Absenden",
            "questionnaire.missing": "Bitte beantworten Sie jede Aussage (Nummer {item} hat keine Antwort).",
            "payment.title": "Ihre Auszahlung",
            "payment.points": "Punkte",
            "payment.of.default": "davon {points} aus Standardantworten, die für Sie eingetragen wurden",
            "payment.fee": "Teilnahmevergütung",
            "payment.total": "Gesamt",
            "completion.title": "Abschluss",
            "completion.code": "Ihr Abschlusscode",
            "completion.link": "Zurück zum Panel, um Ihre Teilnahme zu bestätigen",
            "room.title": "Willkommen",
            "room.label": "Ihre Teilnehmerkennung",
            "room.unlisted": "diese Teilnehmerkennung steht nicht auf der Liste der Sitzung (prüfen Sie "
            "Ihren Link)",
            "room.need.label": "bitte geben Sie Ihre Teilnehmerkennung an",
            "room.full": "diese Sitzung ist voll: alle Plätze sind vergeben",
            "room.label.empty": "eine Teilnehmerkennung darf nicht leer sein",
            "room.label.long": "eine Teilnehmerkennung hat höchstens {chars} Zeichen",
            "room.label.chars": "eine Teilnehmerkennung enthält nur Buchstaben, Ziffern, '-', '_' und '.'",
            "table.others": "An Ihrem Tisch: Sie, {others}.",
            "table.people": "{people} weitere Teilnehmende",
            "table.nobody": "keine weiteren Teilnehmenden",
            "table.machines": "{others} und {machines} Computerspieler, die über ein KI-Sprachmodell "
            "antworten",
            "instructions.deadline": "Sie haben für jede Entscheidung {deadline} Sekunden; wenn Sie nicht "
            "rechtzeitig antworten, {then}, und dies wird als solches gekennzeichnet.",
            "instructions.payment": "Auszahlung: {stakes}.",
            "instructions.per.point": "jeder Punkt, den Sie im Spiel erzielen, wird mit {rate} {currency} "
            "vergütet",
            "instructions.fee": "Sie erhalten {fee} {currency} für die Teilnahme",
        },
    }
)


def money(value: float, lang: str) -> str:
    """An amount of money to the cent as ``lang`` writes it (``2.50``; German ``2,50``)."""
    text = f"{value:.2f}"
    return text.replace(".", ",") if lang == "de" else text


__all__ = ["PAGES", "money"]
