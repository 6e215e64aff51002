"""Words every face shows alike: which grader is at work."""

from __future__ import annotations

from interviewer.content.rubric import Lang
from interviewer.settings import Settings

OFFLINE = {"zh": "离线评分（未配置模型）", "en": "Offline grading (no model configured)"}


def grader_line(settings: Settings, lang: Lang | None = None) -> str:
    """ "LLM: model @ host (offline grader as second opinion)", or the offline notice in ``lang``
    (both languages when ``lang`` is None)."""
    if settings.endpoint.configured:
        from interviewer.provider import describe_endpoint

        return f"LLM: {describe_endpoint(settings)} (offline grader as second opinion)"
    return OFFLINE[lang] if lang else f"{OFFLINE['zh']} · {OFFLINE['en']}"
