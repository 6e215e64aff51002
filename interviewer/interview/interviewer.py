"""Who words the follow-up the session chose: the model (streamed) or the bank's script.

The session engine decides whether to follow up and which follow-up (its aim, its criteria, the
cap); the interviewer only phrases it, in the interview's language. :class:`LLMInterviewer` asks
the model (prompt text in :mod:`interviewer.prompts`) and streams its words; if the model fails
or its stream is cut off, the scripted follow-up from the bank is the final wording and a one-line
notice for the candidate rides beside it, never inside it. :class:`ScriptedInterviewer` (offline)
gives the bank's wording at once.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Literal

from interviewer import prompts
from interviewer.content.rubric import FollowUp, Lang, Question
from interviewer.grading.grade import Grade
from interviewer.provider import Message, TextStreamer
from interviewer.settings import Settings

MAX_CHARS = 600  # a talkative model is cut off: a follow-up is one or two sentences
FALLBACK = {
    "zh": "（模型追问失败，改用题库追问。）",
    "en": "(The model could not phrase the follow-up; here is the scripted one.)",
}


@dataclass(frozen=True)
class Wording:
    """The follow-up as worded so far. Values of a stream grow; the last one (``final``) is the
    question as asked. ``notice`` (only on a fallback) is for the candidate, not part of the text."""

    text: str
    by: Literal["model", "scripted"]
    final: bool
    notice: str | None = None


class ScriptedInterviewer:
    """The offline interviewer: the bank's wording, at once."""

    def stream(self, question: Question, followup: FollowUp, answer: str, grade: Grade, lang: Lang) -> Iterator[Wording]:
        yield Wording(followup.question.get(lang), by="scripted", final=True)


class LLMInterviewer:
    def __init__(self, settings: Settings, chat_model: Any = None):
        self.settings = settings
        self.streamer = TextStreamer(settings, chat_model)

    def messages(self, question: Question, followup: FollowUp, answer: str, grade: Grade, lang: Lang) -> list[Message]:
        return [
            Message("system", prompts.interviewer_system(question, followup, lang)),
            Message("user", prompts.interviewer_user(question, followup, answer, grade, lang)),
        ]

    def stream(self, question: Question, followup: FollowUp, answer: str, grade: Grade, lang: Lang) -> Iterator[Wording]:
        """Yield the follow-up's text so far, growing as tokens arrive (``by="model"``); each value
        once, the last one ``final``.

        On any failure (a refused connection, an error status, a stream cut off before the model
        finished, no text) the last value is the scripted follow-up (``by="scripted"``) with the
        one-line notice beside it, so the caller always ends with a usable question."""
        text = ""
        shown: str | None = None  # held back one piece, so the last model value can be marked final
        finished = False
        try:
            for piece in self.streamer.stream(self.messages(question, followup, answer, grade, lang)):
                finished = finished or piece.finished
                if piece.text:
                    if shown is not None:
                        yield Wording(shown, by="model", final=False)
                    text = (text + piece.text)[:MAX_CHARS]
                    shown = text
                if len(text) >= MAX_CHARS:
                    finished = True
                    break
            if not finished:
                raise ConnectionError("the stream was cut off before the model finished")
            if not text.strip():
                raise ValueError("the model returned no text")
        except Exception:  # any model or transport failure: the scripted follow-up takes over
            yield Wording(followup.question.get(lang), by="scripted", final=True, notice=FALLBACK[lang])
            return
        yield Wording(text, by="model", final=True)
