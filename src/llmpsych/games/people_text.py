"""What a person at a game table reads: instructions, the question, the answer's input and the history,
written for people and computed from the game's options and its typed rounds, never from a model prompt.

A model seat reads the game's prompts (its rules, a JSON-format instruction, report turns); a person in a
browser reads these texts instead, in English or German (:mod:`llmpsych.i18n`). They are derived from
what decides the game (the players, the rounds, the game's ``Params``: ratio, endowment, costs, ...) and,
for the history, from the game's ``Round`` records (:mod:`llmpsych.games.rounds`), so a person is told
exactly what the game does and what happened, in our own words:

>>> history("guessing", rounds, player=2)
['Round 1: average 24.6, target 16.4, winning number 14; your pick 25, you did not win.']

A person learns what the model in the same seat learns and no more: in El Farol's ``implicit`` mode a
player who stayed home is told only their own points, as the game's report tells a model.

Public functions: :func:`instructions`, :func:`history`, :func:`question`, :func:`answer_input` (what
the form asks for: a number in a range, one of some choices, or one share per pirate),
:func:`title` and :func:`setting` (the options with the game's defaults filled in).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError

from ..errors import ConfigError
from ..i18n import Catalog, language, num
from .rounds import GameRound

# -- the catalog -------------------------------------------------------------------------------------
_EN: dict[str, str] = {
    # titles
    "title.guessing": "Guess 2/3 of the Average",
    "title.public_goods": "Public Goods Game",
    "title.bar": "El Farol Bar",
    "title.diner": "Diner's Dilemma",
    "title.divide_dollar": "Divide the Dollar",
    "title.auction": "Sealed-Bid Auction",
    "title.battle_royale": "Battle Royale",
    "title.pirate": "Pirate Game",
    # the opening paragraph of every game
    "intro": "You play {title} with {players} players in total, over {rounds} rounds. "
    "Every player decides on their own; you do not see the others' choices before you decide.",
    "intro.battle_royale": "You play {title} with {players} players in total, over at most {rounds} shots.",
    "intro.pirate": "You play {title} with {players} pirates in total.",
    "you.player": "You are player {player}.",
    # Guess 2/3 of the Average
    "guessing.rules": "In every round each player picks a whole number from {min} to {max}. The average "
    "of all picks is computed, and the target is {ratio} of that average. The player whose number is "
    "closest to the target wins the round.",
    "guessing.tie.all": "If several numbers are equally close, every player who picked one of them wins.",
    "guessing.tie.first": "If two numbers are equally close, the one picked first in player order wins.",
    "guessing.stakes": "Your result is the number of rounds you win. After each round you see the "
    "average, the target, the winning number and whether you won.",
    "guessing.opponents.smart-ne": "About the other players: they are all smart, and each of them will "
    "always pick {ne}.",
    "guessing.opponents.smart": "About the other players: they are all smart.",
    "guessing.opponents.random": "About the other players: they are not smart; each of them picks a "
    "number at random.",
    # Public Goods
    "public_goods.endowment.fixed": "Every player starts with {tokens} tokens.",
    "public_goods.endowment.random": "Every player starts with a number of tokens drawn at random between "
    "{low} and {tokens}.",
    "public_goods.reset": "Each round starts again from that amount.",
    "public_goods.carry": "What you hold after a round is what you have in the next one.",
    "public_goods.rules": "In every round you decide how many of your tokens to put into a common pot. "
    "The pot is multiplied by {ratio} and shared equally among all {players} players, whatever each of "
    "them put in. The tokens you do not put in stay yours.",
    "public_goods.stakes": "Your result is your gain in tokens: in each round, your share of the pot minus "
    "what you put in. After each round you see what everyone put in, your gain and your tokens.",
    # El Farol Bar
    "bar.rules": "In every round each player decides to go to the bar or to stay home. If at most {ratio} "
    "of the players go, the bar is fun: everyone who went gets {high} points. If more go, it is crowded: "
    "everyone who went gets {low} points. Staying home always gives {home} points.",
    "bar.implicit": "After each round, the players who went learn how many went; a player who stayed "
    "home learns only their own points.",
    "bar.explicit": "After each round, everyone learns how many went.",
    "bar.stakes": "Your result is the points you collect over all rounds.",
    # Diner's Dilemma
    "diner.rules": "In every round all {players} players dine together and split the bill equally. Each "
    "orders one dish: the costly dish costs {exp_cost} and is worth {exp_utility} to you; the cheap dish "
    "costs {cheap_cost} and is worth {cheap_utility} to you.",
    "diner.stakes": "Your points in a round are the worth of your dish minus your equal share of the whole "
    "bill. Your result is the points you collect over all rounds.",
    # Divide the Dollar
    "divide_dollar.rules": "In every round the players share {golds} golds. Each player asks for a whole "
    "number of golds from 0 to {golds}. If all requests together are at most {golds}, everyone gets what "
    "they asked for; if they are more, nobody gets anything that round.",
    "divide_dollar.stakes": "Your result is the golds you receive over all rounds.",
    # Sealed-Bid Auction
    "auction.rules": "In every round one item is sold. Each player is told privately what the item is "
    "worth to them (their value: a multiple of {interval} from {vmin} to {vmax}, different for every "
    "player and round). Each player makes one sealed bid from 0 up to their value. The highest bid wins "
    "(a tie is decided by lot) and the winner pays {price}.",
    "auction.price.first": "their own bid",
    "auction.price.second": "the second-highest bid",
    "auction.stakes": "The winner earns their value minus the price; everyone else earns 0 that round. "
    "Your result is what you earn over all rounds.",
    # Battle Royale
    "battle_royale.rules": "The players take turns to shoot, one shot per turn, in the order of their "
    "numbers. Each hits with a known chance: {rates}. On your turn you choose another player still in the "
    "game to shoot at, or you miss on purpose. A player who is hit is out. The game ends when one player "
    "is left or after {rounds} shots.",
    "battle_royale.rate": "player {player} {rate}%",
    "battle_royale.you": "You are player {player}; you hit with a chance of {rate}%.",
    "battle_royale.stakes": "Your goal is to be the last player standing, or to stay in the game as long "
    "as possible.",
    # Pirate Game
    "pirate.rules": "The pirates share {gold} golds. They are ranked by seniority, rank 1 the most senior. "
    "The most senior pirate still on board proposes how to split the golds: a whole number for every "
    "pirate on board, adding up to {gold}. Every other pirate on board votes to accept or reject; the "
    "proposer counts as accepting. If at least half of the pirates on board accept, the plan is carried "
    "out and the game ends. Otherwise the proposer is thrown overboard, gets nothing, and the next most "
    "senior pirate proposes.",
    "pirate.you": "You are the pirate of rank {rank}.",
    "pirate.stakes": "Your result is the golds the accepted plan gives you (nothing if you are thrown "
    "overboard).",
    # questions
    "q.guessing": "Round {round}: pick a whole number from {min} to {max}. The winner is closest to "
    "{ratio} of the average of all picks.",
    "q.public_goods": "Round {round}: you hold {tokens} tokens. How many do you put into the pot "
    "(0 to {tokens})?",
    "q.bar": "Round {round}: do you go to the bar or stay home?",
    "q.diner": "Round {round}: which dish do you order?",
    "q.divide_dollar": "Round {round}: how many of the {golds} golds do you ask for (0 to {golds})?",
    "q.auction": "Round {round}: the item is worth {value} to you. What is your sealed bid (0 to {value})?",
    "q.battle_royale": "Shot {round}: it is your turn to shoot. Still in the game: {survivors}. Whom do you "
    "shoot at?",
    "q.pirate.propose": "You are now the most senior pirate on board (rank {rank}). Split the {gold} golds "
    "among the pirates of rank {rank} to {last}: one whole number each, adding up to {gold}.",
    "q.pirate.vote": "The pirate of rank {proposer} proposes: {plan}. You (rank {rank}) would get {share}. "
    "Do you accept or reject the plan?",
    # answer choices and labels
    "choice.go": "Go to the bar",
    "choice.stay": "Stay home",
    "choice.costly": "The costly dish (costs {cost}, worth {worth})",
    "choice.cheap": "The cheap dish (costs {cost}, worth {worth})",
    "choice.shoot": "Shoot at player {player} (hits with {rate}%)",
    "choice.miss": "Miss on purpose",
    "choice.accept": "Accept",
    "choice.reject": "Reject",
    "share.rank": "Rank {rank}",
    "share.you": "Rank {rank} (you)",
    "plan.item": "rank {rank} gets {golds}",
    "range": "a whole number from {low} to {high}",
    "shares": "one whole number for each pirate, adding up to {total}",
    "choose": "one of the choices",
    # history
    "h.guessing": "Round {round}: average {mean}, target {target}, winning number {winning}; your pick "
    "{pick}, you {won}.",
    "h.won": "won",
    "h.lost": "did not win",
    "h.public_goods": "Round {round}: the players put in {all} ({pot} tokens in the pot); each player got "
    "{share} from it. You put in {mine}: your gain {gain}; you ended the round with {tokens} tokens.",
    "h.bar.explicit": "Round {round}: {go} of {players} players went, the bar was {mood}. You {choice}: "
    "{points} points.",
    "h.bar.implicit": "Round {round}: you stayed home: {points} points.",
    "h.bar.fun": "fun",
    "h.bar.crowded": "crowded",
    "h.bar.went": "went",
    "h.bar.stayed": "stayed home",
    "h.diner": "Round {round}: {costly} ordered the costly dish and {cheap} the cheap one; the bill was "
    "{total}, everyone paid {share}. You ordered the {dish} dish: {points} points.",
    "h.dish.costly": "costly",
    "h.dish.cheap": "cheap",
    "h.divide_dollar.within": "Round {round}: the requests added up to {total}, within the {golds} golds: "
    "everyone got what they asked for. You asked for {bid} and got {got}.",
    "h.divide_dollar.over": "Round {round}: the requests added up to {total}, more than the {golds} golds: "
    "nobody got anything. You asked for {bid}.",
    "h.auction": "Round {round}: your value {value}, your bid {bid}; the winning bid was {winning}, the "
    "price paid {price}. You {won}: {points} points.",
    "h.auction.won": "won",
    "h.auction.lost": "did not win",
    "h.battle.miss": "Shot {round}: {shooter} missed on purpose. {left} players are left.",
    "h.battle.hit": "Shot {round}: {shooter} shot at {target} and hit; {target} is out. {left} players "
    "are left.",
    "h.battle.missed": "Shot {round}: {shooter} shot at {target} and missed. {left} players are left.",
    "h.you.miss": "Shot {round}: you missed on purpose. {left} players are left.",
    "h.you.hit": "Shot {round}: you shot at {target} and hit; {target} is out. {left} players are left.",
    "h.you.missed": "Shot {round}: you shot at {target} and missed. {left} players are left.",
    "h.you": "you",
    "h.player": "player {player}",
    "h.pirate": "Proposal of rank {proposer}: {plan}. {accepted} of {pirates} pirates accepted{vote}: "
    "{outcome}",
    "h.pirate.vote": " (you voted {vote})",
    "h.vote.accept": "accept",
    "h.vote.reject": "reject",
    "h.pirate.passed": "the plan passed; you get {share} golds.",
    "h.pirate.failed": "the plan failed; the pirate of rank {proposer} was thrown overboard.",
    "h.pirate.failed.you": "your plan failed; you were thrown overboard and get nothing.",
}

_DE: dict[str, str] = {
    "title.guessing": "Errate 2/3 des Durchschnitts",
    "title.public_goods": "Öffentliches-Gut-Spiel",
    "title.bar": "El-Farol-Bar",
    "title.diner": "Dilemma der Restaurantgäste",
    "title.divide_dollar": "Teile den Dollar",
    "title.auction": "Verdeckte Auktion",
    "title.battle_royale": "Battle Royale",
    "title.pirate": "Piratenspiel",
    "intro": "Sie spielen {title} mit insgesamt {players} Spielern über {rounds} Runden. Jeder Spieler "
    "entscheidet für sich; Sie sehen die Entscheidungen der anderen nicht, bevor Sie entscheiden.",
    "intro.battle_royale": "Sie spielen {title} mit insgesamt {players} Spielern über höchstens {rounds} "
    "Schüsse.",
    "intro.pirate": "Sie spielen {title} mit insgesamt {players} Piraten.",
    "you.player": "Sie sind Spieler {player}.",
    "guessing.rules": "In jeder Runde wählt jeder Spieler eine ganze Zahl von {min} bis {max}. Aus allen "
    "Zahlen wird der Durchschnitt berechnet; das Ziel ist {ratio} dieses Durchschnitts. Wer dem Ziel am "
    "nächsten ist, gewinnt die Runde.",
    "guessing.tie.all": "Liegen mehrere Zahlen gleich nah, gewinnen alle, die eine davon gewählt haben.",
    "guessing.tie.first": "Liegen zwei Zahlen gleich nah, gewinnt die in Spielerreihenfolge zuerst gewählte.",
    "guessing.stakes": "Ihr Ergebnis ist die Zahl der Runden, die Sie gewinnen. Nach jeder Runde sehen Sie "
    "den Durchschnitt, das Ziel, die Gewinnzahl und ob Sie gewonnen haben.",
    "guessing.opponents.smart-ne": "Über die anderen Spieler: Sie sind alle klug, und jeder von ihnen wählt "
    "immer {ne}.",
    "guessing.opponents.smart": "Über die anderen Spieler: Sie sind alle klug.",
    "guessing.opponents.random": "Über die anderen Spieler: Sie sind nicht klug; jeder wählt eine "
    "zufällige Zahl.",
    "public_goods.endowment.fixed": "Jeder Spieler beginnt mit {tokens} Spielmarken.",
    "public_goods.endowment.random": "Jeder Spieler beginnt mit einer zufällig gezogenen Zahl von "
    "Spielmarken zwischen {low} und {tokens}.",
    "public_goods.reset": "Jede Runde beginnt wieder mit diesem Betrag.",
    "public_goods.carry": "Was Sie nach einer Runde besitzen, haben Sie in der nächsten.",
    "public_goods.rules": "In jeder Runde entscheiden Sie, wie viele Ihrer Spielmarken Sie in einen "
    "gemeinsamen Topf geben. Der Topf wird mit {ratio} multipliziert und gleichmäßig auf alle {players} "
    "Spieler verteilt, egal wie viel jeder eingezahlt hat. Was Sie nicht einzahlen, behalten Sie.",
    "public_goods.stakes": "Ihr Ergebnis ist Ihr Gewinn in Spielmarken: in jeder Runde Ihr Anteil am Topf "
    "minus Ihre Einzahlung. Nach jeder Runde sehen Sie alle Einzahlungen, Ihren Gewinn und Ihren Bestand.",
    "bar.rules": "In jeder Runde entscheidet jeder Spieler, ob er in die Bar geht oder zu Hause bleibt. "
    "Gehen höchstens {ratio} der Spieler hin, ist es schön: Wer hinging, bekommt {high} Punkte. Gehen mehr "
    "hin, ist es überfüllt: Wer hinging, bekommt {low} Punkte. Zu Hause bleiben bringt immer {home} Punkte.",
    "bar.implicit": "Nach jeder Runde erfahren die Spieler, die hingingen, wie viele hingingen; wer zu "
    "Hause blieb, erfährt nur die eigenen Punkte.",
    "bar.explicit": "Nach jeder Runde erfahren alle, wie viele hingingen.",
    "bar.stakes": "Ihr Ergebnis sind die Punkte, die Sie über alle Runden sammeln.",
    "diner.rules": "In jeder Runde essen alle {players} Spieler zusammen und teilen die Rechnung zu "
    "gleichen Teilen. Jeder bestellt ein Gericht: Das teure kostet {exp_cost} und ist Ihnen {exp_utility} "
    "wert; das günstige kostet {cheap_cost} und ist Ihnen {cheap_utility} wert.",
    "diner.stakes": "Ihre Punkte in einer Runde: der Wert Ihres Gerichts minus Ihr gleicher Anteil an der "
    "ganzen Rechnung. Ihr Ergebnis sind die Punkte über alle Runden.",
    "divide_dollar.rules": "In jeder Runde teilen die Spieler {golds} Goldstücke. Jeder fordert eine ganze "
    "Zahl von 0 bis {golds}. Sind alle Forderungen zusammen höchstens {golds}, bekommt jeder seine "
    "Forderung; sind es mehr, bekommt in dieser Runde niemand etwas.",
    "divide_dollar.stakes": "Ihr Ergebnis sind die Goldstücke, die Sie über alle Runden erhalten.",
    "auction.rules": "In jeder Runde wird ein Gegenstand versteigert. Jeder Spieler erfährt geheim, was er "
    "ihm wert ist (sein Wert: ein Vielfaches von {interval} von {vmin} bis {vmax}, für jeden Spieler und "
    "jede Runde verschieden). Jeder gibt ein verdecktes Gebot von 0 bis zu seinem Wert ab. Das höchste "
    "Gebot gewinnt (bei Gleichstand entscheidet das Los), und der Gewinner zahlt {price}.",
    "auction.price.first": "sein eigenes Gebot",
    "auction.price.second": "das zweithöchste Gebot",
    "auction.stakes": "Der Gewinner verdient seinen Wert minus den Preis; alle anderen verdienen in dieser "
    "Runde 0. Ihr Ergebnis ist, was Sie über alle Runden verdienen.",
    "battle_royale.rules": "Die Spieler schießen abwechselnd, ein Schuss pro Zug, in der Reihenfolge ihrer "
    "Nummern. Jeder trifft mit einer bekannten Wahrscheinlichkeit: {rates}. In Ihrem Zug wählen Sie einen "
    "anderen Spieler, der noch im Spiel ist, als Ziel, oder Sie schießen absichtlich daneben. Wer getroffen "
    "wird, scheidet aus. Das Spiel endet, wenn nur noch ein Spieler übrig ist, oder nach {rounds} Schüssen.",
    "battle_royale.rate": "Spieler {player} {rate} %",
    "battle_royale.you": "Sie sind Spieler {player}; Sie treffen mit {rate} % Wahrscheinlichkeit.",
    "battle_royale.stakes": "Ihr Ziel ist es, als Letzter übrig zu bleiben oder so lange wie möglich im "
    "Spiel zu bleiben.",
    "pirate.rules": "Die Piraten teilen {gold} Goldstücke. Sie sind nach Dienstalter geordnet, Rang 1 ist "
    "der älteste. Der älteste Pirat an Bord schlägt eine Aufteilung vor: eine ganze Zahl für jeden Piraten "
    "an Bord, zusammen {gold}. Jeder andere Pirat an Bord stimmt zu oder lehnt ab; der Vorschlagende zählt "
    "als zustimmend. Stimmt mindestens die Hälfte der Piraten an Bord zu, wird der Plan ausgeführt und das "
    "Spiel endet. Sonst wird der Vorschlagende über Bord geworfen, bekommt nichts, und der nächstälteste "
    "Pirat schlägt vor.",
    "pirate.you": "Sie sind der Pirat mit Rang {rank}.",
    "pirate.stakes": "Ihr Ergebnis sind die Goldstücke, die Ihnen der angenommene Plan gibt (nichts, wenn "
    "Sie über Bord geworfen werden).",
    "q.guessing": "Runde {round}: Wählen Sie eine ganze Zahl von {min} bis {max}. Es gewinnt, wer {ratio} "
    "des Durchschnitts aller Zahlen am nächsten ist.",
    "q.public_goods": "Runde {round}: Sie besitzen {tokens} Spielmarken. Wie viele geben Sie in den Topf "
    "(0 bis {tokens})?",
    "q.bar": "Runde {round}: Gehen Sie in die Bar oder bleiben Sie zu Hause?",
    "q.diner": "Runde {round}: Welches Gericht bestellen Sie?",
    "q.divide_dollar": "Runde {round}: Wie viele der {golds} Goldstücke fordern Sie (0 bis {golds})?",
    "q.auction": "Runde {round}: Der Gegenstand ist Ihnen {value} wert. Wie hoch ist Ihr verdecktes Gebot "
    "(0 bis {value})?",
    "q.battle_royale": "Schuss {round}: Sie sind am Zug. Noch im Spiel: {survivors}. Auf wen schießen Sie?",
    "q.pirate.propose": "Sie sind jetzt der älteste Pirat an Bord (Rang {rank}). Teilen Sie die {gold} "
    "Goldstücke unter den Piraten von Rang {rank} bis {last} auf: je eine ganze Zahl, zusammen {gold}.",
    "q.pirate.vote": "Der Pirat mit Rang {proposer} schlägt vor: {plan}. Sie (Rang {rank}) bekämen {share}. "
    "Stimmen Sie zu oder lehnen Sie ab?",
    "choice.go": "In die Bar gehen",
    "choice.stay": "Zu Hause bleiben",
    "choice.costly": "Das teure Gericht (kostet {cost}, wert {worth})",
    "choice.cheap": "Das günstige Gericht (kostet {cost}, wert {worth})",
    "choice.shoot": "Auf Spieler {player} schießen (trifft mit {rate} %)",
    "choice.miss": "Absichtlich danebenschießen",
    "choice.accept": "Zustimmen",
    "choice.reject": "Ablehnen",
    "share.rank": "Rang {rank}",
    "share.you": "Rang {rank} (Sie)",
    "plan.item": "Rang {rank} bekommt {golds}",
    "range": "eine ganze Zahl von {low} bis {high}",
    "shares": "eine ganze Zahl für jeden Piraten, zusammen {total}",
    "choose": "eine der Möglichkeiten",
    "h.guessing": "Runde {round}: Durchschnitt {mean}, Ziel {target}, Gewinnzahl {winning}; Ihre Zahl "
    "{pick}, Sie haben {won}.",
    "h.won": "gewonnen",
    "h.lost": "nicht gewonnen",
    "h.public_goods": "Runde {round}: Die Spieler zahlten {all} ein ({pot} Spielmarken im Topf); jeder "
    "Spieler bekam {share} daraus. Sie zahlten {mine} ein: Ihr Gewinn {gain}; Sie beendeten die Runde mit "
    "{tokens} Spielmarken.",
    "h.bar.explicit": "Runde {round}: {go} von {players} Spielern gingen hin, die Bar war {mood}. Sie "
    "{choice}: {points} Punkte.",
    "h.bar.implicit": "Runde {round}: Sie blieben zu Hause: {points} Punkte.",
    "h.bar.fun": "schön",
    "h.bar.crowded": "überfüllt",
    "h.bar.went": "gingen hin",
    "h.bar.stayed": "blieben zu Hause",
    "h.diner": "Runde {round}: {costly} bestellten das teure und {cheap} das günstige Gericht; die Rechnung "
    "war {total}, jeder zahlte {share}. Sie bestellten das {dish} Gericht: {points} Punkte.",
    "h.dish.costly": "teure",
    "h.dish.cheap": "günstige",
    "h.divide_dollar.within": "Runde {round}: Die Forderungen ergaben zusammen {total}, nicht mehr als "
    "{golds} Goldstücke: Jeder bekam seine Forderung. Sie forderten {bid} und bekamen {got}.",
    "h.divide_dollar.over": "Runde {round}: Die Forderungen ergaben zusammen {total}, mehr als {golds} "
    "Goldstücke: Niemand bekam etwas. Sie forderten {bid}.",
    "h.auction": "Runde {round}: Ihr Wert {value}, Ihr Gebot {bid}; das höchste Gebot war {winning}, der "
    "gezahlte Preis {price}. Sie haben {won}: {points} Punkte.",
    "h.auction.won": "gewonnen",
    "h.auction.lost": "nicht gewonnen",
    "h.battle.miss": "Schuss {round}: {shooter} schoss absichtlich daneben. {left} Spieler sind übrig.",
    "h.battle.hit": "Schuss {round}: {shooter} schoss auf {target} und traf; {target} scheidet aus. "
    "{left} Spieler sind übrig.",
    "h.battle.missed": "Schuss {round}: {shooter} schoss auf {target} und verfehlte. {left} Spieler sind "
    "übrig.",
    "h.you.miss": "Schuss {round}: Sie schossen absichtlich daneben. {left} Spieler sind übrig.",
    "h.you.hit": "Schuss {round}: Sie schossen auf {target} und trafen; {target} scheidet aus. {left} "
    "Spieler sind übrig.",
    "h.you.missed": "Schuss {round}: Sie schossen auf {target} und verfehlten. {left} Spieler sind übrig.",
    "h.you": "Sie",
    "h.player": "Spieler {player}",
    "h.pirate": "Vorschlag von Rang {proposer}: {plan}. {accepted} von {pirates} Piraten stimmten zu{vote}: "
    "{outcome}",
    "h.pirate.vote": " (Sie haben {vote})",
    "h.vote.accept": "zugestimmt",
    "h.vote.reject": "abgelehnt",
    "h.pirate.passed": "Der Plan ist angenommen; Sie bekommen {share} Goldstücke.",
    "h.pirate.failed": "Der Plan ist abgelehnt; der Pirat mit Rang {proposer} wurde über Bord geworfen.",
    "h.pirate.failed.you": "Ihr Plan ist abgelehnt; Sie wurden über Bord geworfen und bekommen nichts.",
}

#: The people's texts of the eight games, in every shipped language.
TEXTS = Catalog({"en": _EN, "de": _DE})


# -- the setting -------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Setting:
    """What decides a game for its players: the game, the players, the rounds and the game's parameters
    with its defaults filled in (``ratio``, ``tokens``, ...)."""

    game: str
    players: int
    rounds: int
    params: dict[str, Any] = field(default_factory=dict)


def _game_class(game: str) -> Any:
    from . import registry

    try:
        return registry.get(game)
    except KeyError:
        raise ConfigError(f"no people's texts for game {game!r}", f"one of: {', '.join(_WRITERS)}") from None


def setting(game: str, params: Mapping[str, Any] | None = None, *, players: int, rounds: int) -> Setting:
    """The game's options for its people's texts: ``params`` (the game's options, e.g. a result's
    ``params`` or ``{"ratio": 0.5}``) checked by the game's ``Params`` with its defaults filled in."""
    if game not in _WRITERS:
        raise ConfigError(f"no people's texts for game {game!r}", f"one of: {', '.join(_WRITERS)}")
    cls = _game_class(game)
    try:
        checked = cls.Params.model_validate(dict(params or {})).model_dump()
    except ValidationError as exc:  # a misspelt option would otherwise be described with its default
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise ConfigError(f"options for game {game!r}: {where}: {first['msg']}") from None
    if "ratio_str" in checked and not checked["ratio_str"]:
        checked["ratio_str"] = _ratio_text(game, float(checked["ratio"]))
    return Setting(game, int(players), int(rounds), checked)


def _ratio_text(game: str, ratio: float) -> str:
    if game == "bar":
        return f"{ratio * 100:g}%"
    from .guessing import ratio_text

    return ratio_text(ratio)


def title(game: str, lang: str = "en") -> str:
    """The game's title for people."""
    return TEXTS.text(language(lang), f"title.{game}") if game in _WRITERS else game


# -- instructions ------------------------------------------------------------------------------------
def instructions(
    game: str,
    params: Mapping[str, Any] | None = None,
    *,
    players: int,
    rounds: int,
    player: int | None = None,
    lang: str = "en",
) -> list[str]:
    """The game's instructions for people, one paragraph per item: the game and its size, its rules with
    the numbers of this setting, what the person earns (the stakes) and, given ``player``, who they are
    in it (a Battle Royale hit rate, a pirate's rank)."""
    lang = language(lang)
    s = setting(game, params, players=players, rounds=rounds)
    t = TEXTS.bound(lang)
    intro_key = f"intro.{game}" if f"intro.{game}" in TEXTS.messages["en"] else "intro"
    out = [t(intro_key, title=title(game, lang), players=players, rounds=rounds)]
    out += _RULES[game](s, lang)
    if player is not None:
        if game == "battle_royale":
            rate = s.params["base_hit_rate"] + player * s.params["interval"]
            out.append(t("battle_royale.you", player=player, rate=rate))
        elif game == "pirate":
            out.append(t("pirate.you", rank=player + 1))
        else:
            out.append(t("you.player", player=player))
    return out


def _guessing_rules(s: Setting, lang: str) -> list[str]:
    p, t = s.params, TEXTS.bound(lang)
    ratio = _localized_ratio(str(p["ratio_str"]), lang)
    out = [t("guessing.rules", min=p["min"], max=p["max"], ratio=ratio), t(f"guessing.tie.{p['tie_rule']}")]
    if p.get("opponents"):
        ne = p["max"] if p["ratio"] > 1 else p["min"]
        out.append(t(f"guessing.opponents.{p['opponents']}", ne=ne))
    out.append(t("guessing.stakes"))
    return out


def _goods_rules(s: Setting, lang: str) -> list[str]:
    p, t = s.params, TEXTS.bound(lang)
    low = min(p["rand_min"], p["tokens"])
    start = t(f"public_goods.endowment.{p['endowment']}", tokens=p["tokens"], low=low)
    start += " " + t("public_goods.reset" if p["reset"] else "public_goods.carry")
    rules = t("public_goods.rules", ratio=num(p["ratio"], lang), players=s.players)
    return [start, rules, t("public_goods.stakes")]


def _bar_rules(s: Setting, lang: str) -> list[str]:
    p, t = s.params, TEXTS.bound(lang)
    ratio = _localized_ratio(str(p["ratio_str"]), lang)
    rules = t(
        "bar.rules", ratio=ratio, high=num(p["max"], lang), low=num(p["min"], lang), home=num(p["home"], lang)
    )
    return [rules, t(f"bar.{p['mode']}"), t("bar.stakes")]


def _diner_rules(s: Setting, lang: str) -> list[str]:
    p, t = s.params, TEXTS.bound(lang)
    values = {k: num(p[k], lang) for k in ("exp_cost", "exp_utility", "cheap_cost", "cheap_utility")}
    return [t("diner.rules", players=s.players, **values), t("diner.stakes")]


def _dollar_rules(s: Setting, lang: str) -> list[str]:
    t = TEXTS.bound(lang)
    return [t("divide_dollar.rules", golds=s.params["golds"]), t("divide_dollar.stakes")]


def _auction_rules(s: Setting, lang: str) -> list[str]:
    p, t = s.params, TEXTS.bound(lang)
    price = t(f"auction.price.{p['mode']}")
    rules = t(
        "auction.rules", interval=p["interval"], vmin=p["valuation_min"], vmax=p["valuation_max"], price=price
    )
    return [rules, t("auction.stakes")]


def _battle_rules(s: Setting, lang: str) -> list[str]:
    p, t = s.params, TEXTS.bound(lang)
    rates = ", ".join(
        t("battle_royale.rate", player=i, rate=p["base_hit_rate"] + i * p["interval"])
        for i in range(s.players)
    )
    return [t("battle_royale.rules", rates=rates, rounds=s.rounds), t("battle_royale.stakes")]


def _pirate_rules(s: Setting, lang: str) -> list[str]:
    t = TEXTS.bound(lang)
    return [t("pirate.rules", gold=s.params["gold"]), t("pirate.stakes")]


def _localized_ratio(text: str, lang: str) -> str:
    """A printed ratio (``2/3``, ``60%``, ``0.5``) as ``lang`` writes it (German: ``60 %``, ``0,5``)."""
    if lang != "de":
        return text
    return text.replace("%", " %").replace(".", ",")


_RULES: dict[str, Callable[[Setting, str], list[str]]] = {
    "guessing": _guessing_rules,
    "public_goods": _goods_rules,
    "bar": _bar_rules,
    "diner": _diner_rules,
    "divide_dollar": _dollar_rules,
    "auction": _auction_rules,
    "battle_royale": _battle_rules,
    "pirate": _pirate_rules,
}


# -- the question and its input -----------------------------------------------------------------------
@dataclass(frozen=True)
class AnswerInput:
    """What a person's form asks for: ``number`` (a whole number from ``low`` to ``high``), ``choice``
    (one of ``choices``: the value the game reads, its label) or ``shares`` (one whole number per
    ``labels`` entry, adding up to ``total``, sent to the game as ``a,b,c``); ``valid`` says it in words."""

    kind: str
    valid: str
    low: int | None = None
    high: int | None = None
    choices: tuple[tuple[str, str], ...] = ()
    labels: tuple[str, ...] = ()
    total: int | None = None

    def answer(self, values: Sequence[str]) -> str:
        """The text the game reads from the form's values (``shares``: joined by commas)."""
        if self.kind == "shares":
            return ",".join(v.strip() for v in values)
        return values[0].strip() if values else ""


def question(
    game: str,
    kind: str,
    info: Mapping[str, Any],
    *,
    round_no: int,
    player: int,
    params: Mapping[str, Any] | None = None,
    players: int,
    lang: str = "en",
) -> str:
    """The question of one decision for people (``kind`` and ``info``: the decision's, as an
    :class:`~llmpsych.games.observation.Observation` carries them; a plain mapping is read as the game's
    info)."""
    from .auction import BidInfo
    from .pirate import ProposalInfo, VoteInfo

    lang = language(lang)
    s = setting(game, params, players=players, rounds=max(round_no, 1))
    p, t = s.params, TEXTS.bound(lang)
    if game == "guessing":
        ratio = _localized_ratio(str(p["ratio_str"]), lang)
        return t("q.guessing", round=round_no, min=p["min"], max=p["max"], ratio=ratio)
    if game == "public_goods":
        return t("q.public_goods", round=round_no, tokens=_tokens(info, p["tokens"]))
    if game == "divide_dollar":
        return t("q.divide_dollar", round=round_no, golds=p["golds"])
    if game == "auction":
        return t("q.auction", round=round_no, value=BidInfo.of(info).valuation)
    if game == "battle_royale":
        names = ", ".join(_who(int(i), player, lang) for i in _survivors(info))
        return t("q.battle_royale", round=round_no, survivors=names)
    if game == "pirate" and kind == "propose":
        return t("q.pirate.propose", rank=ProposalInfo.of(info).proposer, last=players, gold=p["gold"])
    if game == "pirate":
        vote = VoteInfo.of(info)
        plan = _plan_text(int(vote.proposer), list(vote.plan), lang)
        return t("q.pirate.vote", proposer=vote.proposer, plan=plan, rank=vote.rank, share=vote.share)
    return t(f"q.{game}", round=round_no)


def _tokens(info: Mapping[str, Any], default: Any) -> Any:
    """The tokens a Public Goods contributor holds (``default``: the game's endowment, when ``info`` does
    not say)."""
    from .public_goods import ContributionInfo

    return info.tokens if isinstance(info, ContributionInfo) else info.get("tokens", default)


def _survivors(info: Mapping[str, Any]) -> list[int]:
    """The survivors of a Battle Royale shot (none, when ``info`` does not say)."""
    from .battle_royale import ShotInfo

    return ShotInfo.of(info).survivors if "survivors" in info else []


def answer_input(
    game: str,
    kind: str,
    info: Mapping[str, Any],
    *,
    player: int,
    params: Mapping[str, Any] | None = None,
    players: int,
    lang: str = "en",
) -> AnswerInput:
    """The input a person answers one decision with, its values those the game's own check reads."""
    from .auction import BidInfo
    from .battle_royale import ShotInfo
    from .pirate import ProposalInfo

    lang = language(lang)
    s = setting(game, params, players=players, rounds=1)
    p, t = s.params, TEXTS.bound(lang)

    def number(low: int, high: int) -> AnswerInput:
        return AnswerInput("number", t("range", low=low, high=high), low=low, high=high)

    def choice(*options: tuple[str, str]) -> AnswerInput:
        return AnswerInput("choice", t("choose"), choices=tuple(options))

    if game == "guessing":
        return number(int(p["min"]), int(p["max"]))
    if game == "public_goods":
        return number(0, int(_tokens(info, p["tokens"])))
    if game == "divide_dollar":
        return number(0, int(p["golds"]))
    if game == "auction":
        return number(0, int(BidInfo.of(info).valuation))
    if game == "bar":
        return choice(("go", t("choice.go")), ("stay", t("choice.stay")))
    if game == "diner":
        costly = t("choice.costly", cost=num(p["exp_cost"], lang), worth=num(p["exp_utility"], lang))
        cheap = t("choice.cheap", cost=num(p["cheap_cost"], lang), worth=num(p["cheap_utility"], lang))
        return choice(("costly", costly), ("cheap", cheap))
    if game == "battle_royale":
        shot = ShotInfo.of(info) if "survivors" in info else ShotInfo(survivors=[])
        rates = shot.hit_rates or [p["base_hit_rate"] + i * p["interval"] for i in range(players)]
        targets = [
            (f"player_{i}", t("choice.shoot", player=i, rate=rates[int(i)]))
            for i in shot.survivors
            if int(i) != player
        ]
        return choice(*targets, ("null", t("choice.miss")))
    if game == "pirate" and kind == "propose":
        proposer = int(ProposalInfo.of(info).proposer)
        labels = tuple(
            t("share.you" if rank == player + 1 else "share.rank", rank=rank)
            for rank in range(proposer, players + 1)
        )
        total = int(p["gold"])
        return AnswerInput("shares", t("shares", total=total), low=0, high=total, labels=labels, total=total)
    if game == "pirate":
        return choice(("accept", t("choice.accept")), ("reject", t("choice.reject")))
    raise ConfigError(f"no people's input for game {game!r}")


def _who(player: int, me: int, lang: str) -> str:
    return TEXTS.text(lang, "h.you") if player == me else TEXTS.text(lang, "h.player", player=player)


def _plan_text(proposer: int, plan: Sequence[Any], lang: str) -> str:
    return ", ".join(
        TEXTS.text(lang, "plan.item", rank=rank, golds=golds) for rank, golds in enumerate(plan, proposer)
    )


# -- history -------------------------------------------------------------------------------------------
def history(
    game: str,
    rounds: Sequence[Mapping[str, Any] | GameRound],
    player: int,
    *,
    params: Mapping[str, Any] | None = None,
    players: int | None = None,
    lang: str = "en",
) -> list[str]:
    """What happened so far, one line per round the player was told about, for ``player`` (0-based):
    computed from the game's typed rounds (stored mappings are parsed as the game's ``Round``), in the
    words of :data:`TEXTS`. ``players``: the table's size (default: read from the rounds)."""
    lang = language(lang)
    cls = _game_class(game) if game in _WRITERS else None
    if cls is None:
        raise ConfigError(f"no people's texts for game {game!r}", f"one of: {', '.join(_WRITERS)}")
    typed = [r if isinstance(r, cls.Round) else cls.Round.model_validate(_mapping(r)) for r in rounds]
    size = players if players is not None else _players(typed)
    s = setting(game, params, players=size, rounds=len(typed))
    out: list[str] = []
    for r in typed:
        line = _WRITERS[game](r, player, s, lang)
        if line is not None:
            out.append(line)
    return out


def _mapping(r: Mapping[str, Any] | GameRound) -> Mapping[str, Any]:
    return r.stored() if isinstance(r, GameRound) else r


def _players(rounds: Sequence[Any]) -> int:
    for r in rounds:
        for name in ("decisions", "survivors_before"):
            value = getattr(r, name, None)
            if value:
                return len(value)
    return 0


def _guessing_line(r: Any, player: int, s: Setting, lang: str) -> str:
    t = TEXTS.bound(lang)
    winning = ", ".join(num(w, lang) for w in r.winning)
    return t(
        "h.guessing",
        round=r.round,
        mean=num(r.mean, lang),
        target=num(round(float(r.target), 2), lang),
        winning=winning,
        pick=num(r.choices[player], lang),
        won=t("h.won" if player in r.winners else "h.lost"),
    )


def _goods_line(r: Any, player: int, s: Setting, lang: str) -> str:
    return TEXTS.text(
        lang,
        "h.public_goods",
        round=r.round,
        all=", ".join(num(c, lang) for c in r.contributions),
        pot=num(r.pot, lang),
        share=num(r.share, lang),
        mine=num(r.contributions[player], lang),
        gain=num(r.gain[player], lang),
        tokens=num(r.tokens_after[player], lang),
    )


def _bar_line(r: Any, player: int, s: Setting, lang: str) -> str:
    t = TEXTS.bound(lang)
    choice = r.choices[player]
    points = num(r.utility[player], lang)
    if s.params["mode"] == "implicit" and choice == "stay":
        return t("h.bar.implicit", round=r.round, points=points)
    return t(
        "h.bar.explicit",
        round=r.round,
        go=r.go,
        players=len(r.choices),
        mood=t("h.bar.fun" if r.good else "h.bar.crowded"),
        choice=t("h.bar.went" if choice == "go" else "h.bar.stayed"),
        points=points,
    )


def _diner_line(r: Any, player: int, s: Setting, lang: str) -> str:
    t = TEXTS.bound(lang)
    return t(
        "h.diner",
        round=r.round,
        costly=r.costly,
        cheap=r.cheap,
        total=num(r.total, lang),
        share=num(r.share, lang),
        dish=t(f"h.dish.{r.dishes[player]}"),
        points=num(r.utility[player], lang),
    )


def _dollar_line(r: Any, player: int, s: Setting, lang: str) -> str:
    key = "h.divide_dollar.within" if r.within else "h.divide_dollar.over"
    return TEXTS.text(
        lang,
        key,
        round=r.round,
        total=num(r.total, lang),
        golds=s.params["golds"],
        bid=num(r.bids[player], lang),
        got=num(r.received[player], lang),
    )


def _auction_line(r: Any, player: int, s: Setting, lang: str) -> str:
    t = TEXTS.bound(lang)
    return t(
        "h.auction",
        round=r.round,
        value=num(r.valuations[player], lang),
        bid=num(r.bids[player], lang),
        winning=num(r.winning_bid, lang),
        price=num(r.price, lang),
        won=t("h.auction.won" if r.winner == player else "h.auction.lost"),
        points=num(r.utility[player], lang),
    )


def _battle_line(r: Any, player: int, s: Setting, lang: str) -> str | None:
    if player not in r.survivors_before:  # out before this shot: the game tells them nothing more
        return None
    t = TEXTS.bound(lang)
    prefix = "h.you" if r.shooter == player else "h.battle"
    shooter = _who(r.shooter, player, lang)
    left = len(r.survivors)
    if r.target is None:
        return t(f"{prefix}.miss", round=r.round, shooter=shooter, left=left)
    target = _who(r.target, player, lang)
    return t(
        f"{prefix}.{'hit' if r.hit else 'missed'}", round=r.round, shooter=shooter, target=target, left=left
    )


def _pirate_line(r: Any, player: int, s: Setting, lang: str) -> str | None:
    rank = player + 1
    if rank < r.proposer:  # already thrown overboard
        return None
    t = TEXTS.bound(lang)
    vote = ""
    for v in r.votes:
        if v.player == player:
            vote = t("h.pirate.vote", vote=t(f"h.vote.{v.action}"))
    if r.accepted:
        outcome = t("h.pirate.passed", share=r.plan[rank - r.proposer])
    elif rank == r.proposer:
        outcome = t("h.pirate.failed.you")
    else:
        outcome = t("h.pirate.failed", proposer=r.proposer)
    return t(
        "h.pirate",
        proposer=r.proposer,
        plan=_plan_text(r.proposer, r.plan, lang),
        accepted=r.accepted_count,
        pirates=r.pirates,
        vote=vote,
        outcome=outcome,
    )


_WRITERS: dict[str, Callable[[Any, int, Setting, str], str | None]] = {
    "guessing": _guessing_line,
    "public_goods": _goods_line,
    "bar": _bar_line,
    "diner": _diner_line,
    "divide_dollar": _dollar_line,
    "auction": _auction_line,
    "battle_royale": _battle_line,
    "pirate": _pirate_line,
}

#: The games with people's texts (every one of the paper's eight).
GAMES: tuple[str, ...] = tuple(_WRITERS)

__all__ = [
    "GAMES",
    "TEXTS",
    "AnswerInput",
    "Setting",
    "answer_input",
    "history",
    "instructions",
    "question",
    "setting",
    "title",
]
