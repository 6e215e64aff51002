"""``interviewer doctor``: is the configured endpoint usable, and if not, what to fix (one line)."""

from __future__ import annotations

from dataclasses import dataclass

import openai
from pydantic import BaseModel, ConfigDict

from interviewer.provider import DEFAULT_MODEL, LLMError, StructuredCaller, describe_endpoint
from interviewer.settings import Settings


class Ping(BaseModel):
    model_config = ConfigDict(extra="forbid")
    ok: bool


@dataclass
class Check:
    name: str
    ok: bool
    message: str


def run(settings: Settings) -> list[Check]:
    endpoint = settings.endpoint
    if not endpoint.configured:
        return [
            Check(
                "endpoint",
                True,
                "offline: no endpoint configured, so grading and follow-ups run offline "
                "(set OPENAI_BASE_URL, OPENAI_API_KEY and INTERVIEWER_MODEL to use a model)",
            )
        ]
    where = describe_endpoint(settings)
    client = openai.OpenAI(
        base_url=endpoint.base_url,
        api_key=endpoint.api_key.get_secret_value() if endpoint.api_key else "not-needed",
        timeout=settings.llm.timeout_s,
        max_retries=0,
    )
    model = endpoint.model or DEFAULT_MODEL
    checks: list[Check] = []
    try:
        served = [m.id for m in client.models.list()]
        checks.append(Check("reachable", True, f"{where}: reachable"))
        if served and model not in served:
            shown = ", ".join(served[:8])
            checks.append(Check("model", False, f"model '{model}' is not served here; set INTERVIEWER_MODEL to one of: {shown}"))
            return checks
        checks.append(Check("model", True, f"model '{model}' is served"))
    except openai.APIConnectionError:
        return [Check("reachable", False, f"cannot reach {where}: is the server running, and is OPENAI_BASE_URL right?")]
    except openai.AuthenticationError:
        return [Check("reachable", False, "the endpoint rejected the API key (401): check OPENAI_API_KEY")]
    except openai.APIStatusError:
        checks.append(Check("reachable", True, f"{where}: reachable (it does not list models)"))
    from langchain_core.messages import HumanMessage

    caller = StructuredCaller(settings)
    try:
        caller.ask(Ping, [HumanMessage('Reply with the JSON object {"ok": true}.')])
    except LLMError as exc:
        checks.append(Check("structured output", False, f"structured output failed: {exc}"))
        return checks
    checks.append(Check("structured output", True, f"structured output works with {caller.method}"))
    return checks
