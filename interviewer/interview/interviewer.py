"""The live interviewer: what it says after an answer, the moment it can say it.

With a model (:class:`LLMInterviewer`) one short streamed call reads the answer, decides what comes
next and words it: its first line is the move (``ASK <follow-up>``, ``OWN <criteria>`` or ``NEXT``),
checked against the engine's options before a word is shown; the question follows as it streams;
a follow-up of the model's own ends with what a good answer to it contains. The engine's rules
still hold (the cap, the clock, a pass moves on): the model is asked only when a follow-up is
allowed, and only among the follow-ups the answer has not already covered.

The live turn has a budget: no move within ``interview.live_budget_s`` seconds, or no finished
question within ``interview.live_total_s``, and the engine's own choice is asked in the bank's words,
with a one-line notice beside it (never inside it). Offline (:class:`ScriptedInterviewer`) the
engine's choice is the move and the bank's wording is the question, at once.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from interviewer import prompts
from interviewer.content.rubric import Lang
from interviewer.grading.reading import for_the_model
from interviewer.interview.engine import Options
from interviewer.interview.followups import Decision, OwnFollowUp
from interviewer.provider import Message, TextStreamer
from interviewer.settings import Settings

FALLBACK_DELIVERY_S = 0.3  # of the live budget, kept for showing the scripted follow-up instead
MAX_CHARS = 600  # a talkative model is cut off: a follow-up is one or two sentences
MAX_EXPECTS = 6
FALLBACK = {
    "zh": "（模型未能及时给出追问，改用题库追问。）",
    "en": "(The model did not give its follow-up in time; here is the scripted one.)",
}


@dataclass(frozen=True)
class Spoken:
    """What the interviewer has said so far. Values grow as tokens arrive; the last one is
    ``final`` and carries the model's ``move`` (None: the engine's own choice is asked, in the bank's
    words). ``notice`` (only on a fallback) is for the candidate, not part of the question."""

    text: str
    final: bool
    move: Decision | None = None
    notice: str | None = None


class ScriptedInterviewer:
    """The offline interviewer: the engine's choice, in the bank's words, at once."""

    def live(
        self, options: Options, asked: str, earlier: list[str], answer: str, lang: Lang, since: float | None = None
    ) -> Iterator[Spoken]:
        yield Spoken("", final=True)


class _Parser:
    """Reads the live reply as it streams: the move line, the question, then an own follow-up's
    EXPECTS lines. ``question`` is what may be shown so far: a line that could still turn out to
    be the EXPECTS marker is held back until it cannot."""

    def __init__(self) -> None:
        self.raw = ""

    @property
    def header(self) -> str | None:
        head, newline, _ = self.raw.partition("\n")
        return head.strip() if newline else None

    def _body(self) -> tuple[str, list[str] | None]:
        _, _, body = self.raw.partition("\n")
        lines = body.split("\n")
        for index, line in enumerate(lines):
            if line.strip().upper().rstrip(":") == "EXPECTS":
                expects = [ln.strip().lstrip("-*• ").strip() for ln in lines[index + 1 :]]
                return "\n".join(lines[:index]).strip(), [e for e in expects if e]
        if lines and "EXPECTS".startswith(lines[-1].strip().upper()) and lines[-1].strip():
            lines = lines[:-1]  # perhaps the marker, still arriving
        return "\n".join(lines).strip(), None

    @property
    def question(self) -> str:
        return self._body()[0][:MAX_CHARS]

    @property
    def expects(self) -> list[str]:
        return (self._body()[1] or [])[:MAX_EXPECTS]


def read_move(header: str, options: Options) -> Decision | None:
    """The move line as a decision, if it keeps to the options (else None: the engine decides)."""
    word, _, rest = header.strip().strip("`*").partition(" ")
    word, rest = word.upper(), rest.strip()
    if word == "NEXT":
        return Decision(action="move-on", reason="the interviewer moved on", by="model")
    if word == "ASK" and rest in {f.id for f in options.allowed}:
        return Decision(action="ask", reason="the interviewer chose this follow-up", followup=rest, by="model")
    if word == "OWN":
        targets = [t.strip() for t in rest.replace(" ", ",").split(",") if t.strip() in options.open_targets]
        if targets:
            own = OwnFollowUp(id=options.own_id, targets=targets)
            return Decision(action="ask", reason="the interviewer's own follow-up on what was said", followup=own.id, own=own, by="model")
    return None


class LLMInterviewer:
    def __init__(self, settings: Settings, passages: dict[str, str] | None = None, chat_model: Any = None):
        self.settings = settings
        self.passages = passages or {}
        budget = settings.interview.live_total_s
        live = settings.model_copy(update={"llm": settings.llm.model_copy(update={"timeout_s": budget})})
        self.streamer = TextStreamer(live, chat_model)

    def messages(self, options: Options, asked: str, earlier: list[str], answer: str, lang: Lang) -> list[Message]:
        return [
            Message("system", prompts.live_system(lang)),
            Message(
                "user",
                prompts.live_user(
                    options.question,
                    asked,
                    options.allowed,
                    options.open_targets,
                    [for_the_model(text) for text in earlier],  # cut, and nothing addressed to the grader, as the grader is sent
                    for_the_model(answer),
                    self.passages,
                    lang,
                ),
            ),
        ]

    def live(
        self, options: Options, asked: str, earlier: list[str], answer: str, lang: Lang, since: float | None = None
    ) -> Iterator[Spoken]:
        """Yield the interviewer's words as they arrive; the last value is final and names the move.
        The budgets count from ``since`` (the moment the answer was committed, ``time.time()``; now
        by default), so the candidate's wait, not only the model's, is what they bound.

        Nothing is asked of the model when the rules decide (``options.imposed``). On any failure
        (no move in time, a move outside the options, a refused connection, an error status, a
        stream cut off, no question) the last value has no move: the engine's choice is asked in the
        bank's words, with the notice beside it when the engine's choice is a follow-up."""
        if options.imposed:
            yield Spoken("", final=True)
            return
        parser = _Parser()
        move: Decision | None = None
        shown = ""
        waited = time.time() - since if since is not None else 0.0
        if not 0.0 <= waited <= self.settings.interview.live_total_s:  # a clock that is not this one (a test's, a replay)
            waited = 0.0
        started = time.monotonic() - waited
        try:
            for piece, finished in self._timed(self.messages(options, asked, earlier, answer, lang), started):
                parser.raw += piece
                if move is None:
                    header = parser.header
                    if header is None:
                        if finished:
                            header = parser.raw.strip()
                        else:
                            continue
                    move = read_move(header, options)
                    if move is None:
                        raise ValueError(f"the model's move '{header[:40]}' is not one of the options")
                    if move.action == "move-on":
                        yield Spoken("", final=True, move=move)
                        return
                question = parser.question
                if question != shown and not finished:
                    shown = question
                    yield Spoken(shown, final=False)
                if finished or len(parser.raw) > 4 * MAX_CHARS:
                    break
            else:
                raise ConnectionError("the stream was cut off before the model finished")
            if move is None or not parser.question:
                raise ValueError("the model gave no question")
        except Exception:  # any model or transport failure, or the budget spent: the engine decides
            notice = FALLBACK[lang] if options.fallback.action == "ask" else None
            yield Spoken("", final=True, notice=notice)
            return
        own = move.own.model_copy(update={"expects": parser.expects}) if move.own is not None else None
        yield Spoken(parser.question, final=True, move=move.model_copy(update={"wording": parser.question, "own": own}))

    def _timed(self, messages: list[Message], started: float) -> Iterator[tuple[str, bool]]:
        """The stream's (text, finished) pieces, read on a thread of its own so that the budget holds
        even when the server sends nothing at all: no move line within ``live_budget_s`` and no end
        within ``live_total_s`` raise TimeoutError (the thread is left to the client's timeout)."""
        pieces: queue.Queue[tuple[str, bool] | BaseException | None] = queue.Queue()

        def pump() -> None:
            try:
                for piece in self.streamer.stream(messages):
                    pieces.put((piece.text, piece.finished))
                pieces.put(None)
            except BaseException as exc:  # handed to the reader, which decides
                pieces.put(exc)

        threading.Thread(target=pump, name="live-interviewer", daemon=True).start()
        budget, total = self.settings.interview.live_budget_s, self.settings.interview.live_total_s
        # the budget is for the candidate: the scripted follow-up must be on the page by then, and
        # deciding, storing and sending it took 0.10-0.15 s with ten candidates waiting on a hung model
        budget -= min(FALLBACK_DELIVERY_S, budget / 4)
        seen_newline = False
        while True:
            deadline = started + (total if seen_newline else budget)
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError("the live turn's budget is spent")
            try:
                item = pieces.get(timeout=remaining)
            except queue.Empty:
                raise TimeoutError("the live turn's budget is spent") from None
            if item is None:
                return
            if isinstance(item, BaseException):
                raise item
            seen_newline = seen_newline or "\n" in item[0]
            yield item
