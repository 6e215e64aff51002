"""``interviewer doctor``: is the configured endpoint usable, and if not, what to fix (one line).

It talks to the endpoint only through :mod:`interviewer.provider` (the model list, one structured call)."""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict

from interviewer.prompts import DOCTOR_PING
from interviewer.provider import (
    DEFAULT_MODEL,
    METHODS,
    EndpointUnreachable,
    KeyRejected,
    LLMError,
    Message,
    ModelsNotListed,
    StructuredCaller,
    TextStreamer,
    describe_endpoint,
    list_models,
    redacted,
)
from interviewer.settings import Settings


class Ping(BaseModel):
    model_config = ConfigDict(extra="forbid")
    ok: bool


@dataclass
class Check:
    name: str
    ok: bool
    message: str


@dataclass(frozen=True)
class Source:
    """Where each setting was given, so a fix names the place the user typed it, in its language."""

    base_url: dict[str, str]
    api_key: dict[str, str]
    model: dict[str, str]
    unset: dict[str, str]  # what to do when no endpoint is given at all


def _same(name: str) -> dict[str, str]:
    return {"en": name, "zh": name}


ENVIRONMENT = Source(
    _same("OPENAI_BASE_URL"),
    _same("OPENAI_API_KEY"),
    _same("INTERVIEWER_MODEL"),
    {
        "en": "set OPENAI_BASE_URL, OPENAI_API_KEY and INTERVIEWER_MODEL to use a model",
        "zh": "设置 OPENAI_BASE_URL、OPENAI_API_KEY 和 INTERVIEWER_MODEL 即可使用模型",
    },
)
FORM = Source(
    {"en": "the Base URL field", "zh": "“Base URL”一栏"},
    {"en": "the API key field", "zh": "“API key”一栏"},
    {"en": "the Model field", "zh": "“模型”一栏"},
    {
        "en": "fill in the Base URL (and the model and key) above to use a model",
        "zh": "在上方填写 Base URL（以及模型名和 key）即可使用模型",
    },
)

SAID: dict[str, dict[str, str]] = {
    "en": {
        "offline": "offline: no endpoint configured, so grading and follow-ups run offline ({unset})",
        "not_url": "'{shown}' is not an http(s) URL: check {field} (e.g. http://127.0.0.1:8000/v1)",
        "unreachable": "cannot reach {where}: is the server running, and is {field} right?",
        "key_rejected": "the endpoint rejected the API key (401): check {field}",
        "unlisted": "{where}: reachable (it does not list models)",
        "reachable": "{where}: reachable",
        "not_served": "model '{model}' is not served here; set {field} to one of: {shown}",
        "served": "model '{model}' is served",
        "structured_failed": "structured output failed: {error}",
        "structured_ok": "structured output works with {method}",
        "supports": "the endpoint supports: {supported}; not: {unsupported}",
        "use": "set INTERVIEWER_LLM__STRUCTURED_OUTPUT={method} (the grader's first choice it supports; auto finds it once per process)",
        "use_none": "no structured output works: the grader needs json_schema, tools or json_mode (and a context of about 8k tokens)",
        "stream_ok": "streaming works: the live interviewer's words appear as they are written",
        "stream_failed": "streaming failed ({error}): the live interviewer falls back to the bank's follow-ups",
    },
    "zh": {
        "offline": "离线：未配置模型端点，评分和追问都在本地进行（{unset}）",
        "not_url": "“{shown}”不是 http(s) 地址：请检查{field}（例如 http://127.0.0.1:8000/v1）",
        "unreachable": "连不上 {where}：服务是否在运行？{field}是否正确？",
        "key_rejected": "端点拒绝了这个 API key（401）：请检查{field}",
        "unlisted": "{where}：可以连通（它不提供模型列表）",
        "reachable": "{where}：可以连通",
        "not_served": "这里没有模型“{model}”；请把{field}设为其中之一：{shown}",
        "served": "模型“{model}”可用",
        "structured_failed": "结构化输出失败：{error}",
        "structured_ok": "结构化输出可用（{method}）",
        "supports": "端点支持：{supported}；不支持：{unsupported}",
        "use": "设置 INTERVIEWER_LLM__STRUCTURED_OUTPUT={method}（评分优先用的、端点支持的方式；auto 每个进程会自己找一次）",
        "use_none": "结构化输出都不可用：评分需要 json_schema、tools 或 json_mode 之一（以及约 8k tokens 的上下文）",
        "stream_ok": "流式输出可用：现场面试官的话边写边显示",
        "stream_failed": "流式输出失败（{error}）：现场面试官改用题库里的追问",
    },
}


def run(settings: Settings, source: Source = ENVIRONMENT, lang: str = "en") -> list[Check]:
    """The checks in order, each a line in ``lang``; the first failure ends them."""
    lang = lang if lang in SAID else "en"
    said = SAID[lang]
    endpoint = settings.endpoint
    if not endpoint.configured:
        return [Check("endpoint", True, said["offline"].format(unset=source.unset[lang]))]
    url = urlsplit(endpoint.base_url or "")
    if url.scheme not in ("http", "https") or not url.hostname:
        return [Check("url", False, said["not_url"].format(shown=redacted(endpoint.base_url or ""), field=source.base_url[lang]))]
    where = describe_endpoint(settings)
    model = endpoint.model or DEFAULT_MODEL
    checks: list[Check] = []
    try:
        served = list_models(settings)
    except EndpointUnreachable:
        return [Check("reachable", False, said["unreachable"].format(where=where, field=source.base_url[lang]))]
    except KeyRejected:
        return [Check("reachable", False, said["key_rejected"].format(field=source.api_key[lang]))]
    except ModelsNotListed:
        checks.append(Check("reachable", True, said["unlisted"].format(where=where)))
    else:
        checks.append(Check("reachable", True, said["reachable"].format(where=where)))
        if served and model not in served:
            shown = ", ".join(served[:8])
            checks.append(Check("model", False, said["not_served"].format(model=model, field=source.model[lang], shown=shown)))
            return checks
        checks.append(Check("model", True, said["served"].format(model=model)))
    caller = StructuredCaller(settings)
    try:
        caller.ask(Ping, [Message("user", DOCTOR_PING)])
    except LLMError as exc:
        checks.append(Check("structured output", False, said["structured_failed"].format(error=exc)))
        return checks
    checks.append(Check("structured output", True, said["structured_ok"].format(method=caller.method)))
    return checks


def capabilities(settings: Settings, lang: str = "en") -> list[Check]:
    """What the endpoint supports, each way asked once: json_schema, tools (function calling) and
    json_mode with the doctor's ping, then a streamed reply; and the setting to use. Four small
    requests: ``interviewer doctor`` makes them after the checks above have passed."""
    lang = lang if lang in SAID else "en"
    said = SAID[lang]
    working: list[str] = []
    for method in METHODS:
        one = settings.model_copy(update={"llm": settings.llm.model_copy(update={"structured_output": method, "max_retries": 0})})
        try:
            StructuredCaller(one).ask(Ping, [Message("user", DOCTOR_PING)])
        except LLMError:
            continue
        working.append(method)
    names = {"json_schema": "json_schema", "function_calling": "tools", "json_mode": "json_mode"}
    shown = ", ".join(names[m] for m in working) or "-"
    missing = ", ".join(names[m] for m in METHODS if m not in working) or "-"
    checks = [Check("supports", bool(working), said["supports"].format(supported=shown, unsupported=missing))]
    checks.append(Check("use", bool(working), said["use"].format(method=working[0]) if working else said["use_none"]))
    try:
        text = "".join(piece.text for piece in TextStreamer(settings).stream([Message("user", "Say ok.")]))
        if not text.strip():
            raise LLMError("an empty stream", retryable=False)
    except LLMError as exc:
        checks.append(Check("streaming", False, said["stream_failed"].format(error=exc)))
    else:
        checks.append(Check("streaming", True, said["stream_ok"]))
    return checks


def transcription(settings: Settings) -> list[Check]:
    """When answering aloud is configured: half a second of silence sent to ``/audio/transcriptions``
    (an empty transcript is the right answer; any reply that is not an error passes); when the
    interviewer's voice is, the word "ok" sent to ``/audio/speech``."""
    import io
    import wave

    from interviewer.provider import SpeechEndpoint, speak, speech_endpoint, transcribe

    endpoint = speech_endpoint(settings)
    if not isinstance(endpoint, SpeechEndpoint):
        return [Check("transcription", True, f"answering aloud is off: {endpoint}")]
    silence = io.BytesIO()
    with wave.open(silence, "wb") as out:
        out.setnchannels(1)
        out.setsampwidth(2)
        out.setframerate(16000)
        out.writeframes(bytes(16000))
    try:
        transcribe(endpoint, silence.getvalue(), "doctor.wav", None, "", settings.llm.timeout_s)
    except LLMError as exc:
        checks = [Check("transcription", False, f"transcription through {endpoint.where} failed: {exc}")]
    else:
        checks = [Check("transcription", True, f"transcription works through {endpoint.where}: the page shows a microphone")]
    voice = speech_endpoint(settings, "speech")
    if not isinstance(voice, SpeechEndpoint):
        return [*checks, Check("speech", True, f"the interviewer's voice is off: {voice}")]
    try:
        speak(voice, "ok", settings.speech.voice, settings.llm.timeout_s)
    except LLMError as exc:
        return [*checks, Check("speech", False, f"speech through {voice.where} failed: {exc}")]
    return [*checks, Check("speech", True, f"speech works through {voice.where} (voice {settings.speech.voice})")]
