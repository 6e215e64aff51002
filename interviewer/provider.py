"""The one module that knows the model provider: an OpenAI-compatible chat model via LangChain,
with bounded retries, Retry-After, structured-output method discovery and typed failures; a text
stream for the interviewer; the endpoint's model list for the doctor; Chroma's OpenAI embedding
function for the index; the transcription endpoint for answers spoken aloud. No other module
imports ``openai``, LangChain or that embedding function:
callers pass provider-neutral :class:`Message` values and get plain values and :class:`LLMError` on failure.

The key is passed to the client as a secret and never appears in messages this module raises.
"""

from __future__ import annotations

import functools
import os
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Literal, TypeVar
from urllib.parse import urlparse

import openai
from pydantic import BaseModel, SecretStr, ValidationError

from interviewer.errors import InterviewerError
from interviewer.settings import Settings

Method = Literal["json_schema", "function_calling", "json_mode"]
METHODS: tuple[Method, ...] = ("json_schema", "function_calling", "json_mode")
DEFAULT_MODEL = "gpt-4o-mini"
MAX_RETRY_AFTER_S = 30.0
T = TypeVar("T", bound=BaseModel)
R = TypeVar("R")


class LLMError(InterviewerError):
    """A model call that failed for good. ``retryable`` says whether trying later may work."""

    def __init__(self, message: str, retryable: bool):
        super().__init__(message)
        self.retryable = retryable


class MalformedReply(LLMError):
    """The model answered, but not in the schema asked for."""

    def __init__(self, message: str):
        super().__init__(message, retryable=True)


class EndpointUnreachable(LLMError):
    """Nothing answered at the endpoint (refused, unresolvable, timed out)."""

    def __init__(self, message: str):
        super().__init__(message, retryable=True)


class KeyRejected(LLMError):
    """The endpoint answered 401: the API key is wrong or missing."""

    def __init__(self, message: str):
        super().__init__(message, retryable=False)


class ModelsNotListed(LLMError):
    """The endpoint answered, but does not list its models (another error status)."""

    def __init__(self, message: str):
        super().__init__(message, retryable=False)


@dataclass(frozen=True)
class Message:
    """One message of a prompt, in no provider's terms."""

    role: Literal["system", "user"]
    text: str


@dataclass(frozen=True)
class TextPiece:
    """One chunk of a streamed reply: its text (maybe empty) and whether a finish_reason came with it."""

    text: str
    finished: bool


@dataclass
class Reply:
    """A structured reply with what it cost."""

    parsed: Any
    usage: dict[str, int]
    latency_ms: float
    method: Method


def redacted(url: str) -> str:
    """The URL as it may be shown or stored: any ``user:password@`` in it becomes ``***@``."""
    parts = urlparse(url)
    if "@" not in parts.netloc:
        return url
    return parts._replace(netloc="***@" + parts.netloc.rpartition("@")[2]).geturl()


def describe_endpoint(settings: Settings) -> str:
    """ "model @ host[:port]", as the page, the reports and the stored grades name the endpoint (never
    with the credentials a URL may carry)."""
    endpoint = settings.endpoint
    host = urlparse(endpoint.base_url).netloc.rpartition("@")[2] if endpoint.base_url else "api.openai.com"
    return f"{endpoint.model or DEFAULT_MODEL} @ {host}"


def to_langchain(messages: Sequence[Message]) -> list[Any]:
    """The provider's own message objects for ``messages``."""
    from langchain_core.messages import HumanMessage, SystemMessage

    converted: list[Any] = []
    for message in messages:
        if message.role == "system":
            converted.append(SystemMessage(message.text))
        elif message.role == "user":
            converted.append(HumanMessage(message.text))
        else:
            raise ValueError(f"unknown message role '{message.role}'")
    return converted


def make_chat_model(settings: Settings) -> Any:
    """ChatOpenAI for the configured endpoint. Retries are ours (with fallback), not the client's."""
    from langchain_openai import ChatOpenAI

    endpoint = settings.endpoint
    if not endpoint.configured:
        raise LLMError("no model endpoint is configured: set OPENAI_BASE_URL and/or OPENAI_API_KEY", retryable=False)
    return ChatOpenAI(
        model=endpoint.model or DEFAULT_MODEL,
        base_url=endpoint.base_url,
        api_key=endpoint.api_key or SecretStr("not-needed"),  # local servers often take none; the client wants one
        temperature=settings.llm.temperature,
        timeout=settings.llm.timeout_s,
        max_retries=0,
        use_responses_api=False,
        stream_usage=True,
    )


def _retry_after(exc: openai.APIStatusError) -> float | None:
    value = exc.response.headers.get("retry-after") if exc.response is not None else None
    try:
        return min(MAX_RETRY_AFTER_S, float(value)) if value is not None else None
    except ValueError:
        return None


def with_retries(call: Callable[[], R], settings: Settings, sleep: Callable[[float], None] = time.sleep) -> R:
    """Run ``call``; retry timeouts, 429 (honouring Retry-After), 5xx, lost connections and malformed
    replies up to ``llm.max_retries`` times with doubling backoff; raise :class:`LLMError` after."""
    attempts = settings.llm.max_retries + 1
    delay = settings.llm.backoff_s
    for attempt in range(1, attempts + 1):
        try:
            return call()
        except openai.RateLimitError as exc:
            wait, problem = _retry_after(exc), "rate limited (429)"
        except openai.APITimeoutError:
            wait, problem = None, f"no reply within {settings.llm.timeout_s:.0f} s"
        except openai.APIConnectionError:
            wait, problem = None, "cannot connect to the endpoint"
        except openai.InternalServerError as exc:
            wait, problem = None, f"server error ({exc.status_code})"
        except openai.AuthenticationError:
            raise LLMError("the endpoint rejected the API key (401): check OPENAI_API_KEY", retryable=False) from None
        except openai.NotFoundError:
            raise LLMError(
                f"the endpoint does not know model '{settings.endpoint.model or DEFAULT_MODEL}' (404): check INTERVIEWER_MODEL",
                retryable=False,
            ) from None
        except MalformedReply as exc:
            wait, problem = 0.0, str(exc)
        if attempt == attempts:
            raise LLMError(f"{problem}; gave up after {attempts} attempts", retryable=True)
        sleep(wait if wait is not None else delay)
        delay *= 2
    raise AssertionError("unreachable")


class StructuredCaller:
    """Asks for a pydantic schema, discovering once which method the server supports."""

    def __init__(self, settings: Settings, chat_model: Any = None, sleep: Callable[[float], None] = time.sleep):
        self.settings = settings
        self._model = chat_model
        self.sleep = sleep
        configured = settings.llm.structured_output
        self.method: Method | None = None if configured == "auto" else configured
        self._chains: dict[tuple[type, Method], tuple[Any, Any]] = {}

    @property
    def model(self) -> Any:
        if self._model is None:
            self._model = make_chat_model(self.settings)
        return self._model

    def ask(self, schema: type[T], messages: Sequence[Message]) -> Reply:
        converted = to_langchain(messages)
        methods = [self.method] if self.method else list(METHODS)
        last: Exception | None = None
        for method in methods:
            try:
                reply = with_retries(functools.partial(self._once, schema, converted, method), self.settings, self.sleep)
            except _Unsupported as exc:
                last = exc
                continue
            self.method = method
            return reply
        raise LLMError(f"the endpoint supports none of json_schema, tools or json_mode ({last})", retryable=False)

    def _chain(self, schema: type[T], method: Method) -> tuple[Any, Any]:
        """The model bound to the schema, and the parser of its reply, built once per schema and
        method (building one renders the schema: milliseconds a call). LangChain's ``include_raw``
        runs the two on a thread pool it creates and joins on every call; fifty grades at once then
        queued on the interpreter's lock for starting threads, so the reply is parsed here."""
        key = (schema, method)
        chain = self._chains.get(key)
        if chain is None:
            from langchain_core.runnables import RunnableSequence

            sequence = self.model.with_structured_output(schema, method=method, include_raw=False)
            bound, *parsing = sequence.steps
            chain = self._chains[key] = (bound, RunnableSequence(*parsing) if len(parsing) > 1 else parsing[0])
        return chain

    def _once(self, schema: type[T], messages: list[Any], method: Method) -> Reply:
        bound, parse = self._chain(schema, method)
        started = time.perf_counter()
        try:
            raw = bound.invoke(messages)
            refusal = getattr(raw, "additional_kwargs", {}).get("refusal")
            parsed = None if refusal else parse.invoke(raw)
        except (ValidationError, ValueError) as exc:  # the client parses json_schema replies itself
            raise MalformedReply(f"the reply did not match the schema ({str(exc).splitlines()[0][:160]})") from None
        except openai.BadRequestError as exc:
            text = str(exc).lower()
            if any(word in text for word in ("response_format", "json_schema", "tool", "function", "not supported")):
                raise _Unsupported(f"{method}: {exc.status_code}") from None
            raise LLMError(f"the endpoint refused the request (400): {exc.message[:200]}", retryable=False) from None
        latency = (time.perf_counter() - started) * 1000
        if refusal:
            raise MalformedReply(f"the model refused: {str(refusal)[:120]}")
        if parsed is None:
            raise MalformedReply("the reply did not match the schema (nothing could be parsed from it)")
        usage = dict(getattr(raw, "usage_metadata", None) or {})
        return Reply(
            parsed=parsed,
            usage={k: int(usage[k]) for k in ("input_tokens", "output_tokens", "total_tokens") if k in usage},
            latency_ms=latency,
            method=method,
        )


class _Unsupported(Exception):
    pass


class TextStreamer:
    """Streams a plain-text reply, chunk by chunk, with no retries: a turn that fails is the
    caller's to replace. Status, timeout and connection failures are raised as :class:`LLMError`;
    a stream that stops early is reported (no piece came ``finished``), not raised. The HTTP
    library's own errors while reading the body (a connection torn mid-chunk) pass through as they
    are, so a caller replacing failed turns catches ``Exception``."""

    def __init__(self, settings: Settings, chat_model: Any = None):
        self.settings = settings
        self._model = chat_model

    @property
    def model(self) -> Any:
        if self._model is None:
            self._model = make_chat_model(self.settings)
        return self._model

    def stream(self, messages: Sequence[Message]) -> Iterator[TextPiece]:
        converted = to_langchain(messages)
        try:
            for chunk in self.model.stream(converted):
                text = chunk.content if isinstance(chunk.content, str) else ""
                finished = bool((getattr(chunk, "response_metadata", None) or {}).get("finish_reason"))
                yield TextPiece(text, finished)
        except openai.AuthenticationError:
            raise KeyRejected("the endpoint rejected the API key (401): check OPENAI_API_KEY") from None
        except openai.APIStatusError as exc:
            raise LLMError(f"the endpoint answered {exc.status_code}", retryable=exc.status_code == 429 or exc.status_code >= 500) from None
        except openai.APITimeoutError:
            raise LLMError(f"no reply within {self.settings.llm.timeout_s:.0f} s", retryable=True) from None
        except openai.APIConnectionError:
            raise EndpointUnreachable("cannot connect to the endpoint") from None


def _client(settings: Settings) -> openai.OpenAI:
    endpoint = settings.endpoint
    return openai.OpenAI(
        base_url=endpoint.base_url,
        api_key=endpoint.api_key.get_secret_value() if endpoint.api_key else "not-needed",
        timeout=settings.llm.timeout_s,
        max_retries=0,
    )


def list_models(settings: Settings) -> list[str]:
    """The ids of the models the endpoint serves (``GET /models``).

    Raises :class:`EndpointUnreachable` when nothing answers, :class:`KeyRejected` on 401 and
    :class:`ModelsNotListed` when the endpoint answers another error status."""
    if not settings.endpoint.configured:
        raise LLMError("no model endpoint is configured: set OPENAI_BASE_URL and/or OPENAI_API_KEY", retryable=False)
    where = describe_endpoint(settings)
    with _client(settings) as client:
        try:
            return [m.id for m in client.models.list()]
        except openai.APIConnectionError:
            raise EndpointUnreachable(f"cannot reach {where}") from None
        except openai.AuthenticationError:
            raise KeyRejected("the endpoint rejected the API key (401): check OPENAI_API_KEY") from None
        except openai.APIStatusError as exc:
            raise ModelsNotListed(f"{where} does not list models ({exc.status_code})") from None


def openai_embedding_function(settings: Settings) -> Any:
    """Chroma's OpenAI embedding function for ``index.embedding_model`` at the configured endpoint.

    Chroma's function reads the key from the environment variable it is given, so the key is never
    written into the store's configuration (it travels only in the request's header)."""
    endpoint = settings.endpoint
    if endpoint.api_key is None:
        raise LLMError("embedding = openai needs OPENAI_API_KEY (and OPENAI_BASE_URL for a non-OpenAI server)", retryable=False)
    from chromadb.utils.embedding_functions import OpenAIEmbeddingFunction

    os.environ.setdefault("OPENAI_API_KEY", endpoint.api_key.get_secret_value())
    return OpenAIEmbeddingFunction(
        model_name=settings.index.embedding_model,
        api_base=endpoint.base_url,
        api_key_env_var="OPENAI_API_KEY",
    )


# -- speech: the transcription endpoint ------------------------------------------------------------
OPENAI_TRANSCRIPTION_MODEL = "whisper-1"
OPENAI_SPEECH_MODEL = "gpt-4o-mini-tts"


@dataclass(frozen=True)
class SpeechEndpoint:
    """Where recordings are transcribed or words spoken: ``speech.base_url`` with its own key, else
    the model endpoint with its key (None base URL: OpenAI's own); ``model`` is the one for the job."""

    base_url: str | None
    api_key: SecretStr | None = None
    model: str = OPENAI_TRANSCRIPTION_MODEL

    @property
    def where(self) -> str:
        host = urlparse(self.base_url).netloc.rpartition("@")[2] if self.base_url else "api.openai.com"
        return f"{self.model} @ {host}"


def speech_endpoint(
    settings: Settings, job: Literal["transcription", "speech"] = "transcription", lang: Literal["zh", "en"] = "en"
) -> SpeechEndpoint | str:
    """The endpoint that transcribes recordings (or speaks the interviewer's words), or the one line
    saying what to configure for a microphone (or a voice), in ``lang``."""
    speech, endpoint = settings.speech, settings.endpoint
    transcribing = job == "transcription"
    variable = "INTERVIEWER_STT_MODEL" if transcribing else "INTERVIEWER_TTS_MODEL"
    base_url: str | None
    key: SecretStr | None
    if speech.base_url:
        base_url, key = speech.base_url, speech.api_key
    elif endpoint.configured:
        base_url, key = endpoint.base_url, endpoint.api_key
    else:
        if lang == "zh":
            what = "" if transcribing else "要让面试官开口，"
            return f"{what}请配置语音端点：OPENAI_API_KEY（OpenAI 官方），或 INTERVIEWER_SPEECH_BASE_URL 加 {variable}"
        what = "to answer aloud" if transcribing else "for the interviewer's voice"
        return f"{what}, configure a speech endpoint: OPENAI_API_KEY (OpenAI's own), or INTERVIEWER_SPEECH_BASE_URL and {variable}"
    named = speech.stt_model if transcribing else speech.tts_model
    model = named or ((OPENAI_TRANSCRIPTION_MODEL if transcribing else OPENAI_SPEECH_MODEL) if base_url is None else None)
    if model is None:
        if lang == "zh":
            which = "转写" if transcribing else "语音合成"
            return f"请用 {variable} 指定 {redacted(base_url or '')} 提供的{which}模型"
        which = "transcription" if transcribing else "speech"
        return f"name the {which} model {redacted(base_url or '')} serves: {variable}"
    return SpeechEndpoint(base_url, key, model)


@functools.lru_cache(maxsize=16)
def speech_client(endpoint: SpeechEndpoint, timeout_s: float) -> openai.OpenAI:
    """One client an endpoint, kept (making one took 33 ms a request; a client is safe to share)."""
    key = endpoint.api_key.get_secret_value() if endpoint.api_key else "not-needed"
    return openai.OpenAI(base_url=endpoint.base_url, api_key=key, timeout=timeout_s, max_retries=1)


def transcribe(endpoint: SpeechEndpoint, audio: bytes, filename: str, language: str | None, prompt: str, timeout_s: float) -> str:
    """One ``/audio/transcriptions`` call: the text heard in ``audio`` (``filename`` names its format).
    The prompt carries the words the recording is likely to use, so the model spells them as the field does."""
    client = speech_client(endpoint, timeout_s)
    try:
        reply = client.audio.transcriptions.create(
            model=endpoint.model,
            file=(filename, audio),
            language=language or openai.omit,
            prompt=prompt or openai.omit,
            response_format="json",
        )
    except openai.APITimeoutError:
        raise EndpointUnreachable(f"{endpoint.where} did not transcribe within {timeout_s:.0f} s") from None
    except openai.APIConnectionError:
        raise EndpointUnreachable(f"cannot reach {endpoint.where} to transcribe") from None
    except openai.AuthenticationError:
        raise KeyRejected(f"{endpoint.where} rejected the API key (401)") from None
    except openai.APIStatusError as exc:
        said = exc.body.get("message") if isinstance(exc.body, dict) else None  # the endpoint's own words
        detail = " ".join(str(said or exc.message).split())[:160]
        raise LLMError(f"{endpoint.where} refused the recording ({exc.status_code}: {detail})", retryable=False) from None
    text = getattr(reply, "text", None)
    if not isinstance(text, str):
        raise MalformedReply(f"{endpoint.where} answered without a transcript")
    return text.strip()


def speak(endpoint: SpeechEndpoint, text: str, voice: str, timeout_s: float) -> bytes:
    """One ``/audio/speech`` call: ``text`` spoken in ``voice``, as MP3 bytes."""
    client = speech_client(endpoint, timeout_s)
    try:
        reply = client.audio.speech.create(model=endpoint.model, voice=voice, input=text, response_format="mp3")
        audio = reply.read()
    except openai.APITimeoutError:
        raise EndpointUnreachable(f"{endpoint.where} did not speak within {timeout_s:.0f} s") from None
    except openai.APIConnectionError:
        raise EndpointUnreachable(f"cannot reach {endpoint.where} to speak") from None
    except openai.AuthenticationError:
        raise KeyRejected(f"{endpoint.where} rejected the API key (401)") from None
    except openai.APIStatusError as exc:
        said = exc.body.get("message") if isinstance(exc.body, dict) else None
        detail = " ".join(str(said or exc.message).split())[:160]
        raise LLMError(f"{endpoint.where} refused to speak ({exc.status_code}: {detail})", retryable=False) from None
    if not audio:
        raise MalformedReply(f"{endpoint.where} answered with no audio")
    return audio
