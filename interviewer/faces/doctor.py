"""``interviewer doctor``: is the configured endpoint usable, and if not, what to fix (one line).

It talks to the endpoint only through :mod:`interviewer.provider` (the model list, one structured call)."""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict

from interviewer.prompts import DOCTOR_PING
from interviewer.provider import (
    DEFAULT_MODEL,
    EndpointUnreachable,
    KeyRejected,
    LLMError,
    Message,
    ModelsNotListed,
    StructuredCaller,
    describe_endpoint,
    list_models,
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
    """Where each setting was given, so a fix names the place the user typed it."""

    base_url: str
    api_key: str
    model: str
    unset: str  # what to do when no endpoint is given at all


ENVIRONMENT = Source(
    "OPENAI_BASE_URL",
    "OPENAI_API_KEY",
    "INTERVIEWER_MODEL",
    "set OPENAI_BASE_URL, OPENAI_API_KEY and INTERVIEWER_MODEL to use a model",
)
FORM = Source(
    "the Base URL field", "the API key field", "the Model field", "fill in the Base URL (and the model and key) above to use a model"
)


def run(settings: Settings, source: Source = ENVIRONMENT) -> list[Check]:
    endpoint = settings.endpoint
    if not endpoint.configured:
        return [Check("endpoint", True, f"offline: no endpoint configured, so grading and follow-ups run offline ({source.unset})")]
    url = urlsplit(endpoint.base_url or "")
    if url.scheme not in ("http", "https") or not url.hostname:
        shown = endpoint.base_url or ""
        return [Check("url", False, f"'{shown}' is not an http(s) URL: check {source.base_url} (e.g. http://127.0.0.1:8000/v1)")]
    where = describe_endpoint(settings)
    model = endpoint.model or DEFAULT_MODEL
    checks: list[Check] = []
    try:
        served = list_models(settings)
    except EndpointUnreachable:
        return [Check("reachable", False, f"cannot reach {where}: is the server running, and is {source.base_url} right?")]
    except KeyRejected:
        return [Check("reachable", False, f"the endpoint rejected the API key (401): check {source.api_key}")]
    except ModelsNotListed:
        checks.append(Check("reachable", True, f"{where}: reachable (it does not list models)"))
    else:
        checks.append(Check("reachable", True, f"{where}: reachable"))
        if served and model not in served:
            shown = ", ".join(served[:8])
            checks.append(Check("model", False, f"model '{model}' is not served here; set {source.model} to one of: {shown}"))
            return checks
        checks.append(Check("model", True, f"model '{model}' is served"))
    caller = StructuredCaller(settings)
    try:
        caller.ask(Ping, [Message("user", DOCTOR_PING)])
    except LLMError as exc:
        checks.append(Check("structured output", False, f"structured output failed: {exc}"))
        return checks
    checks.append(Check("structured output", True, f"structured output works with {caller.method}"))
    return checks
