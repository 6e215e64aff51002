"""The LLM interviewer: words the follow-up the session chose, from what the candidate said.

The session engine decides whether to follow up and which follow-up (its aim, its criteria, the
cap); the model only phrases it, streamed token by token, in the interview's language. If the
model fails or its stream is cut off, the scripted follow-up from the bank is used for that turn
and the candidate is told so in one line.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from interviewer.content.rubric import FollowUp, Lang, Question
from interviewer.grading.grade import Grade
from interviewer.grading.model import fence
from interviewer.provider import make_chat_model
from interviewer.settings import Settings

MAX_CHARS = 600  # a talkative model is cut off: a follow-up is one or two sentences
FALLBACK = {
    "zh": "（模型追问失败，改用题库追问。）",
    "en": "(The model could not phrase the follow-up; here is the scripted one.)",
}

SYSTEM = """You are the interviewer in a technical AI-infrastructure interview. Ask exactly ONE follow-up
question, in {language}, one or two sentences, that probes: {aim}. Build on what the candidate actually said
(quote or refer to it); do not give away the answer, do not grade, do not add anything else. The scripted
follow-up you may rephrase: {scripted}"""


class LLMInterviewer:
    def __init__(self, settings: Settings, chat_model: Any = None):
        self.settings = settings
        self._model = chat_model

    @property
    def model(self) -> Any:
        if self._model is None:
            self._model = make_chat_model(self.settings)
        return self._model

    def messages(self, question: Question, followup: FollowUp, answer: str, grade: Grade, lang: Lang) -> list[Any]:
        from langchain_core.messages import HumanMessage, SystemMessage

        aims = [c.description.get(lang) for c in question.criteria if c.id in followup.targets]
        missed = [f"{c.description}: {c.missing[-1]}" for c in grade.criteria if c.id in followup.targets and c.missing]
        system = SYSTEM.format(language="Chinese" if lang == "zh" else "English", aim="; ".join(aims), scripted=followup.question.get(lang))
        human = (
            f"Interview question: {question.question.get(lang)}\n\n"
            f"What the answer missed: {'; '.join(missed) or 'nothing major'}\n\n"
            f"<answer>\n{fence(answer)}\n</answer>"
        )
        return [SystemMessage(system), HumanMessage(human)]

    def stream(self, question: Question, followup: FollowUp, answer: str, grade: Grade, lang: Lang) -> Iterator[str]:
        """Yield the follow-up's text so far, growing as tokens arrive; the last value is final.

        On any failure (a refused connection, an error status, a stream cut off) the last value is
        a one-line notice and the scripted follow-up, so the caller always ends with a usable question."""
        text = ""
        finished = False
        try:
            for chunk in self.model.stream(self.messages(question, followup, answer, grade, lang)):
                piece = chunk.content if isinstance(chunk.content, str) else ""
                finished = finished or bool(getattr(chunk, "response_metadata", {}).get("finish_reason"))
                if piece:
                    text = (text + piece)[:MAX_CHARS]
                    yield text
                if len(text) >= MAX_CHARS:
                    finished = True
                    break
            if not finished:
                raise ConnectionError("the stream was cut off before the model finished")
            if not text.strip():
                raise ValueError("the model returned no text")
        except Exception:  # any model or transport failure: the scripted follow-up takes over
            yield FALLBACK[lang] + "\n" + followup.question.get(lang)
