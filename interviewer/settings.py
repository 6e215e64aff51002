"""One typed settings tree, read from the environment (``INTERVIEWER_*`` and the OpenAI names).

Nested groups use ``__`` in environment names, e.g. ``INTERVIEWER_RETRIEVAL__K=8``. The OpenAI
endpoint uses the standard names ``OPENAI_BASE_URL`` and ``OPENAI_API_KEY`` so that a machine
already set up for OpenAI-compatible tools needs nothing more.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Literal

from platformdirs import user_data_path
from pydantic import AliasChoices, BaseModel, ConfigDict, Field, SecretStr
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    TomlConfigSettingsSource,
)

PROJECT_ROOT = Path(__file__).resolve().parent.parent


class EndpointSettings(BaseSettings):
    """An OpenAI-compatible endpoint: OpenAI itself, vLLM, Ollama, DeepSeek, Qwen and others."""

    model_config = SettingsConfigDict(extra="ignore", populate_by_name=True)

    base_url: str | None = Field(
        default=None,
        validation_alias=AliasChoices("OPENAI_BASE_URL", "OPENAI_API_BASE", "base_url"),
        description="Base URL of the OpenAI-compatible API, e.g. http://127.0.0.1:8000/v1.",
    )
    api_key: SecretStr | None = Field(
        default=None,
        validation_alias=AliasChoices("OPENAI_API_KEY", "api_key"),
        description="API key; never printed, logged or stored.",
    )
    model: str | None = Field(
        default=None,
        validation_alias=AliasChoices("INTERVIEWER_MODEL", "model"),
        description="Chat model name used for grading and follow-ups.",
    )

    @property
    def configured(self) -> bool:
        return bool(self.base_url or self.api_key)


class IndexSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    extra_dirs: list[Path] = Field(default_factory=list, description="Folders of the user's own Markdown notes indexed beside knowledge/.")
    embedding: Literal["offline", "openai"] = Field(
        default="offline",
        description="offline: the bundled bilingual concept-hashing embedding (no download); "
        "openai: the configured endpoint's embeddings API.",
    )
    embedding_model: str = Field(default="text-embedding-3-small", description="Model for embedding=openai.")
    collection: str = Field(default="knowledge", min_length=3, description="Chroma collection name.")
    # The short name INTERVIEWER_CHROMA_URL is read by the default factory because the settings'
    # environment source only looks for nested fields under INTERVIEWER_INDEX__; the factory runs
    # only when no argument, INTERVIEWER_INDEX__CHROMA_URL or settings.toml value was given.
    chroma_url: str | None = Field(
        default_factory=lambda: os.environ.get("INTERVIEWER_CHROMA_URL") or None,
        validation_alias=AliasChoices("INTERVIEWER_CHROMA_URL", "chroma_url"),
        description="URL of a Chroma server shared by several app processes, e.g. http://127.0.0.1:8001 "
        "(https and a path prefix allowed). None: the embedded store under <home>/index. INTERVIEWER_CHROMA_URL.",
    )


class RetrievalSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    k: int = Field(default=5, ge=1, le=50, description="Passages returned by default.")
    candidates: int = Field(default=20, ge=1, le=200, description="Results taken from each retriever before fusion.")
    rrf_k: int = Field(default=20, ge=1, description="Reciprocal-rank-fusion constant: larger flattens the ranks.")
    dense_weight: float = Field(default=1.0, ge=0, description="Weight of the Chroma (dense) ranking in the fusion.")
    lexical_weight: float = Field(default=1.0, ge=0, description="Weight of the BM25 (lexical) ranking in the fusion.")


SETTINGS_FILE = "settings.toml"


def default_home() -> Path:
    """``INTERVIEWER_HOME``, else the per-user data folder (e.g. ~/.local/share/interviewer)."""
    configured = os.environ.get("INTERVIEWER_HOME")
    return Path(configured).expanduser() if configured else user_data_path("interviewer", appauthor=False)


def settings_file() -> Path:
    return default_home() / SETTINGS_FILE


class LLMSettings(BaseModel):
    """How the model is called when an endpoint is configured."""

    model_config = ConfigDict(extra="forbid")

    temperature: float = Field(default=0.0, ge=0, le=2, description="Sampling temperature for grading and follow-ups.")
    timeout_s: float = Field(default=60.0, gt=0, description="Seconds before one model call is abandoned.")
    max_retries: int = Field(default=2, ge=0, le=6, description="Retries of a failed call before the offline fallback.")
    backoff_s: float = Field(default=1.0, ge=0, description="First retry delay; doubles each retry (Retry-After wins).")
    structured_output: Literal["auto", "json_schema", "function_calling", "json_mode"] = Field(
        default="auto", description="How the grade is requested; auto tries json_schema, then tools, then json_mode."
    )
    samples: int = Field(default=1, ge=1, le=5, description="Grades sampled per answer; the spread is reported.")
    disagreement: float = Field(default=3.0, gt=0, description="LLM vs offline score gap (0-10) that is flagged.")
    grade_budget_s: float = Field(
        default=120.0, gt=0, le=900, description="Seconds a model grade may take, retries included, before the offline grade stands."
    )
    grading_workers: int = Field(
        default=64, ge=1, le=256, description="Answers graded at once in the background (model calls wait on the network)."
    )
    price_input_per_mtok: float | None = Field(
        default=None, ge=0, description="Price of a million input tokens, for the report's cost line (none: tokens only)."
    )
    price_output_per_mtok: float | None = Field(default=None, ge=0, description="Price of a million output tokens.")

    @property
    def prices(self) -> tuple[float, float] | None:
        if self.price_input_per_mtok is None and self.price_output_per_mtok is None:
            return None
        return (self.price_input_per_mtok or 0.0, self.price_output_per_mtok or 0.0)


def _environment(name: str) -> Any:
    """A default read from a short environment name (as INTERVIEWER_CHROMA_URL is)."""
    return lambda: os.environ.get(name) or None


class SpeechSettings(BaseModel):
    """Speech: a recorded answer is transcribed through an OpenAI-compatible endpoint's
    ``/audio/transcriptions`` (OpenAI's, or a faster-whisper or whisper.cpp server), and the
    interviewer's words can be spoken through its ``/audio/speech``."""

    model_config = ConfigDict(extra="forbid", validate_default=True)

    stt_model: str | None = Field(
        default_factory=_environment("INTERVIEWER_STT_MODEL"),
        description="Transcription model, e.g. whisper-1 or gpt-4o-transcribe. None: whisper-1 on OpenAI's own API, "
        "and no microphone on any other endpoint (its transcription model must be named). INTERVIEWER_STT_MODEL.",
    )
    tts_model: str | None = Field(
        default_factory=_environment("INTERVIEWER_TTS_MODEL"),
        description="Speech model for the interviewer's voice, e.g. gpt-4o-mini-tts or tts-1. None: gpt-4o-mini-tts on "
        "OpenAI's own API, and no voice on any other endpoint. INTERVIEWER_TTS_MODEL.",
    )
    voice: str = Field(default="alloy", min_length=1, description="The interviewer's voice (the speech endpoint's name for it).")
    base_url: str | None = Field(
        default_factory=_environment("INTERVIEWER_SPEECH_BASE_URL"),
        description="A separate endpoint for transcription and speech (e.g. a local whisper server). None: the model endpoint. "
        "INTERVIEWER_SPEECH_BASE_URL.",
    )
    api_key: SecretStr | None = Field(
        default_factory=_environment("INTERVIEWER_SPEECH_API_KEY"),
        description="Its key (with speech.base_url only; never the model endpoint's key). INTERVIEWER_SPEECH_API_KEY.",
    )
    max_minutes: float = Field(default=20.0, gt=0, le=120, description="Longest recording transcribed; a longer one is refused.")
    chunk_mb: float = Field(
        default=20.0, gt=0.1, le=25, description="WAV recordings above this size are sent in pieces (OpenAI accepts 25 MB a file)."
    )
    keep_recordings: bool = Field(
        default=True,
        description="Keep each spoken answer's recording with its turn (replayed in the history; MP3 at 32 kbit/s with ffmpeg, "
        "else 16 kHz WAV). INTERVIEWER_SPEECH__KEEP_RECORDINGS=false keeps only the words.",
    )


class InterviewSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    max_followups: int = Field(default=2, ge=0, le=4, description="Follow-ups asked at most per question.")
    live_budget_s: float = Field(
        default=4.0,
        gt=0,
        le=30,
        description="Seconds from an answer until the interviewer's next words: the scripted follow-up if the model has not decided.",
    )
    live_total_s: float = Field(default=15.0, gt=0, le=120, description="Seconds it has to finish wording its follow-up.")


class Settings(BaseSettings):
    """Precedence: arguments, then environment, then ``<home>/settings.toml``, then defaults."""

    model_config = SettingsConfigDict(env_prefix="INTERVIEWER_", env_nested_delimiter="__", extra="forbid")

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        return (init_settings, env_settings, TomlConfigSettingsSource(settings_cls, toml_file=settings_file()))

    home: Path = Field(
        default_factory=default_home,
        description="Where everything the product writes goes (index, sessions). INTERVIEWER_HOME.",
    )
    database_url: str | None = Field(
        default=None,
        description="postgresql://user:password@host:port/database: keep sessions, accounts and schedules in PostgreSQL, "
        "shared by several app processes. None: the SQLite file <home>/sessions.db. INTERVIEWER_DATABASE_URL.",
    )
    bank_dir: Path = Field(default=PROJECT_ROOT / "rubrics", description="The question bank (YAML rubrics).")
    knowledge_dir: Path = Field(default=PROJECT_ROOT / "knowledge", description="The shipped knowledge base.")
    index: IndexSettings = Field(default_factory=IndexSettings)
    retrieval: RetrievalSettings = Field(default_factory=RetrievalSettings)
    interview: InterviewSettings = Field(default_factory=InterviewSettings)
    llm: LLMSettings = Field(default_factory=LLMSettings)
    speech: SpeechSettings = Field(default_factory=SpeechSettings)
    endpoint: EndpointSettings = Field(default_factory=EndpointSettings, exclude=True)

    @property
    def index_dir(self) -> Path:
        return self.home / "index"

    @property
    def glossary_dir(self) -> Path:
        return self.knowledge_dir / "glossary"


def add_knowledge_dir(directory: Path) -> Path:
    """Record a user's notes folder in the settings file, so every later build indexes it."""
    import tomlkit

    path = settings_file()
    document = tomlkit.parse(path.read_text(encoding="utf-8")) if path.exists() else tomlkit.document()
    index = document.setdefault("index", tomlkit.table())
    folders = index.setdefault("extra_dirs", tomlkit.array())
    resolved = str(directory.expanduser().resolve())
    if resolved not in [str(f) for f in folders]:
        folders.append(resolved)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(tomlkit.dumps(document), encoding="utf-8")
    return path
