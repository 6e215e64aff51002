"""Speech: a recorded answer becomes text for the answer box, through the transcription endpoint
(:func:`interviewer.provider.transcribe`); the interviewer's words are spoken through the speech
endpoint (:func:`interviewer.provider.speak`), one sentence at a time as they are worded.

The request's prompt carries the question and the glossary terms it uses, so that NCCL, ZeRO-3,
cp.async or 张量并行 come back spelled as the field spells them. A WAV recording larger than
``speech.chunk_mb`` is sent in pieces cut on frame boundaries, each piece's prompt ending with the
words heard just before it. The transcript is only put in the answer box: the candidate reads it,
corrects it, and submits it (content is graded, not transcription errors).
"""

from __future__ import annotations

import functools
import io
import mimetypes
import re
import shutil
import subprocess
import time
import wave
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from interviewer.content.glossary import Glossary
from interviewer.content.rubric import Question
from interviewer.errors import InterviewerError
from interviewer.provider import LLMError, SpeechEndpoint, speak, speech_client, speech_endpoint, transcribe
from interviewer.settings import Settings

# What /audio/transcriptions accepts (OpenAI's list; whisper servers take the same through ffmpeg)
AUDIO_SUFFIXES = {".wav", ".mp3", ".mp4", ".mpeg", ".mpga", ".m4a", ".webm", ".ogg", ".oga", ".flac"}
UPLOAD_LIMIT_MB = 25.0  # one file, as OpenAI accepts it
PROMPT_CHARS = 600  # the model reads about the last 224 tokens of a prompt
CONTEXT_CHARS = 200  # of the previous piece's transcript, to carry on from
MAX_TERMS = 40
SPELLINGS = 2  # of each term's field spellings (then its first Chinese one)
# a spelling the field writes its own way: capitals inside or after the start, digits, _ . - ( or /
JARGON = re.compile(r"[A-Z]{2}|[a-z][A-Z]|\d|[_.()/-]")


class SpeechError(InterviewerError):
    """A recording that cannot be transcribed; the message says what to do (the typed answer stays)."""


@dataclass(frozen=True)
class Transcript:
    text: str
    audio_s: float | None  # the recording's length (WAV), None when the format does not say
    pieces: int
    endpoint_s: float  # waiting on the endpoint
    total_s: float  # from the file to the text: the product's overhead is total_s - endpoint_s


@functools.cache
def _as_word(alias: str) -> re.Pattern[str]:
    return re.compile(rf"(?<![a-z0-9]){re.escape(alias.casefold())}(?![a-z0-9])")


def _mentions(text: str, alias: str) -> bool:
    if alias.isascii():  # a whole word: "TP" is not in "output"
        return alias.casefold() in text and _as_word(alias).search(text) is not None
    return alias.casefold() in text


def _strings(value: object) -> list[str]:
    """Every string value inside dumped data (not its keys)."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v)]
    if isinstance(value, list | tuple):
        return [s for v in value for s in _strings(v)]
    return []


def vocabulary_prompt(question: Question | None, glossary: Glossary, lang: str) -> str:
    """The question in the interview's language, then the glossary terms its question, reference
    answer, criteria and follow-ups use (every spelling of each, both languages)."""
    if question is None:
        return ""
    asked = question.question.zh if lang == "zh" else question.question.en
    texts = [question.question.zh, question.question.en, question.reference_answer.zh, question.reference_answer.en]
    texts += [part for f in question.followups for part in (f.question.zh, f.question.en)]
    for criterion in question.criteria:
        texts += [criterion.description.zh, criterion.description.en, *_strings([k.model_dump() for k in criterion.concepts])]
    haystack = "\n".join(texts).casefold()
    found: list[tuple[int, list[str]]] = []
    for aliases in glossary.terms.values():
        spellings = [a for a in dict.fromkeys(aliases) if len(a) > 1]
        jargon = [a for a in spellings if JARGON.search(a)]
        if not jargon:  # "communication", "node": the model spells those right unaided
            continue
        positions = [haystack.find(a.casefold()) for a in spellings if _mentions(haystack, a)]
        chinese = [a for a in spellings if not a.isascii()][:1]
        if positions:
            found.append((min(positions), [*jargon[:SPELLINGS], *chinese]))
    terms = list(dict.fromkeys(spelling for _, spellings in sorted(found)[:MAX_TERMS] for spelling in spellings))
    prompt = f"{asked}\n{'术语' if lang == 'zh' else 'Terms'}: "
    for term in terms:  # whole spellings only, up to the length the model reads
        if len(prompt) + len(term) + 2 > PROMPT_CHARS:
            break
        prompt += term + ", "
    return prompt.removesuffix(", ").removesuffix(": ")


def _wav_pieces(audio: bytes, chunk_bytes: int) -> tuple[list[bytes], float]:
    """The recording cut into WAV files of at most ``chunk_bytes`` each, and its length in seconds."""
    try:
        with wave.open(io.BytesIO(audio)) as source:
            params = source.getparams()
            frames = source.readframes(params.nframes)
    except (wave.Error, EOFError) as exc:
        raise SpeechError(f"the recording is not a readable WAV file ({exc}); record it again") from None
    frame_bytes = params.sampwidth * params.nchannels
    seconds = params.nframes / params.framerate if params.framerate else 0.0
    per_piece = max(1, (chunk_bytes - 44) // frame_bytes)
    pieces = []
    for start in range(0, max(len(frames), 1), per_piece * frame_bytes):
        out = io.BytesIO()
        with wave.open(out, "wb") as piece:
            piece.setnchannels(params.nchannels)
            piece.setsampwidth(params.sampwidth)
            piece.setframerate(params.framerate)
            piece.writeframes(frames[start : start + per_piece * frame_bytes])
        pieces.append(out.getvalue())
    return pieces, seconds


class Transcriber:
    """Recordings to text, for one question (its vocabulary in the prompt) or none."""

    def __init__(self, settings: Settings, glossary: Glossary):
        self.settings = settings
        self.glossary = glossary
        self.endpoint: SpeechEndpoint | str = speech_endpoint(settings)
        self._prompts: dict[tuple[str, int, str], str] = {}  # a question's prompt took 340 ms to make: made once

    @property
    def available(self) -> bool:
        return isinstance(self.endpoint, SpeechEndpoint)

    def prompt_for(self, question: Question | None, lang: str) -> str:
        if question is None:
            return ""
        key = (question.id, question.version, lang)
        if key not in self._prompts:
            self._prompts[key] = vocabulary_prompt(question, self.glossary, lang)
        return self._prompts[key]

    def warm(self, questions: Iterable[Question]) -> None:
        """Make every question's prompt and the endpoint's client before the first recording (the
        first took 113 ms more than the next ones)."""
        if not isinstance(self.endpoint, SpeechEndpoint):
            return
        for question in questions:
            for lang in ("zh", "en"):
                self.prompt_for(question, lang)
        speech_client(self.endpoint, self.settings.llm.timeout_s)

    @property
    def unavailable_reason(self) -> str:
        return self.endpoint if isinstance(self.endpoint, str) else ""

    def unavailable_reason_in(self, lang: str) -> str:
        """What to configure for a microphone, in the page's language ("" when there is one)."""
        reason = speech_endpoint(self.settings, "transcription", "zh" if lang == "zh" else "en")
        return reason if isinstance(reason, str) else ""

    def transcribe(
        self,
        path: Path,
        question: Question | None = None,
        lang: str | None = None,
        progress: Callable[[int, int], None] | None = None,
    ) -> Transcript:
        begun = time.perf_counter()
        endpoint = self.endpoint
        if isinstance(endpoint, str):
            raise SpeechError(endpoint)
        suffix = path.suffix.lower()
        if suffix not in AUDIO_SUFFIXES:
            raise SpeechError(
                f"{path.name}: {suffix or 'no suffix'} is not an audio format the endpoint takes ({', '.join(sorted(AUDIO_SUFFIXES))})"
            )
        try:
            audio = path.read_bytes()
        except OSError as exc:
            raise SpeechError(f"the recording {path.name} cannot be read ({exc.strerror or exc})") from None
        if not audio:
            raise SpeechError("the recording is empty: allow the microphone and record again, or type the answer")
        speech = self.settings.speech
        size_mb = len(audio) / 1e6
        audio_s: float | None = None
        if suffix == ".wav":
            pieces, audio_s = _wav_pieces(audio, int(speech.chunk_mb * 1e6))
            if audio_s > speech.max_minutes * 60:
                raise SpeechError(
                    f"the recording is {audio_s / 60:.1f} minutes long, more than the {speech.max_minutes:.0f} transcribed at most "
                    "(speech.max_minutes): record the answer in parts"
                )
            if len(pieces) == 1:
                pieces = [audio]  # sent as recorded
        elif size_mb > UPLOAD_LIMIT_MB:
            raise SpeechError(
                f"the recording is {size_mb:.0f} MB of {suffix}, more than the {UPLOAD_LIMIT_MB:.0f} MB one request takes, and only WAV "
                f"is cut into pieces: convert it (sox {path.name} answer.wav) or record in the page"
            )
        else:
            pieces = [audio]
        base_prompt = self.prompt_for(question, lang or "en")
        texts: list[str] = []
        waited = 0.0
        for number, piece in enumerate(pieces, 1):
            if progress is not None:
                progress(number - 1, len(pieces))
            before = " ".join(texts)[-CONTEXT_CHARS:]
            prompt = (base_prompt + ("\n" + before if before else ""))[-PROMPT_CHARS:]
            name = f"{path.stem}-{number}{suffix}" if len(pieces) > 1 else path.name
            started = time.perf_counter()
            try:
                texts.append(transcribe(endpoint, piece, name, lang, prompt, self.settings.llm.timeout_s))
            except LLMError as exc:
                where = f" (piece {number} of {len(pieces)})" if len(pieces) > 1 else ""
                raise SpeechError(f"{exc}{where}; your typed answer is kept, and typing still works") from None
            waited += time.perf_counter() - started
        if progress is not None:
            progress(len(pieces), len(pieces))
        text = " ".join(t for t in texts if t).strip()
        if not text:
            raise SpeechError("nothing was heard in the recording: check the microphone and record again, or type the answer")
        return Transcript(text, audio_s, len(pieces), waited, time.perf_counter() - begun)


# -- keeping the recording -------------------------------------------------------------------------
KEPT_RATE = 16_000  # Hz: what speech models hear; a browser records at 48 kHz
KEPT_BITRATE = "32k"  # MP3, mono: 240 KB a minute (16-bit WAV at 16 kHz: 1.9 MB)


@dataclass(frozen=True)
class KeptAudio:
    mime: str
    audio: bytes
    seconds: float | None


def _wav_compacted(audio: bytes) -> KeptAudio:
    """16-bit mono WAV at 16 kHz, by averaging the channels and interpolating the samples."""
    import numpy as np

    with wave.open(io.BytesIO(audio)) as source:
        params = source.getparams()
        frames = source.readframes(params.nframes)
    if params.sampwidth != 2 or not params.framerate:
        raise wave.Error(f"{8 * params.sampwidth}-bit samples")
    samples = np.frombuffer(frames, dtype="<i2").reshape(-1, params.nchannels).mean(axis=1)
    seconds = len(samples) / params.framerate
    if params.framerate > KEPT_RATE:
        at = np.arange(int(seconds * KEPT_RATE)) * (params.framerate / KEPT_RATE)
        samples = np.interp(at, np.arange(len(samples)), samples)
        rate = KEPT_RATE
    else:
        rate = params.framerate
    out = io.BytesIO()
    with wave.open(out, "wb") as kept:
        kept.setnchannels(1)
        kept.setsampwidth(2)
        kept.setframerate(rate)
        kept.writeframes(np.clip(np.rint(samples), -32768, 32767).astype("<i2").tobytes())
    return KeptAudio("audio/wav", out.getvalue(), seconds)


def _wav_seconds(audio: bytes) -> float | None:
    try:
        with wave.open(io.BytesIO(audio)) as source:
            return source.getnframes() / source.getframerate() if source.getframerate() else None
    except (wave.Error, EOFError):
        return None


def as_recorded(path: Path) -> KeptAudio:
    """The recording as it came, kept at once (compacted later: :func:`compact_recording`)."""
    audio = path.read_bytes()
    seconds = _wav_seconds(audio) if path.suffix.lower() == ".wav" else None
    mime = mimetypes.guess_type(path.name)[0] or "application/octet-stream"
    return KeptAudio("audio/wav" if mime == "audio/x-wav" else mime, audio, seconds)


def compact_recording(recorded: KeptAudio, ffmpeg: str | None = None) -> KeptAudio:
    """The recording as it is kept: MP3 mono at 16 kHz and 32 kbit/s through ffmpeg when it is
    installed; else a WAV resampled to 16 kHz mono; else as it came."""
    ffmpeg = ffmpeg if ffmpeg is not None else shutil.which("ffmpeg")
    if ffmpeg:
        # at a lower priority, so that a page waiting on the server goes first; through nice(1), not
        # a preexec_fn, which would make Python fork the whole server (and hold its lock meanwhile)
        # instead of spawning ffmpeg with vfork
        nice = shutil.which("nice")
        command = [*([nice, "-n", "10"] if nice else []), ffmpeg, "-nostdin", "-hide_banner", "-loglevel", "error", "-i", "pipe:0", "-vn"]
        command += ["-ac", "1", "-ar", str(KEPT_RATE), "-b:a", KEPT_BITRATE, "-f", "mp3", "pipe:1"]
        try:
            done = subprocess.run(command, input=recorded.audio, capture_output=True, timeout=120, check=False)
            if done.returncode == 0 and done.stdout:
                return KeptAudio("audio/mpeg", done.stdout, recorded.seconds)
        except (OSError, subprocess.TimeoutExpired):
            pass
    if recorded.mime == "audio/wav":
        try:
            return _wav_compacted(recorded.audio)
        except (wave.Error, EOFError, ValueError):
            pass
    return recorded


# -- the interviewer's voice -----------------------------------------------------------------------
# A sentence ends at 。！？；, or at . ! ? ; followed by a space or the end (so cp.async and 3.5 stay whole).
SENTENCE_END = re.compile(r"[。！？；]|[.!?;](?=\s|$)")
MARKUP = re.compile(r"\*\*|__|`|^#+\s*|^\s*[-*]\s+|\[q\d{2}\]|↪|<[^>]+>", re.M)


def speakable(text: str) -> str:
    """The words as they are said: no Markdown marks, question tags or HTML."""
    return " ".join(MARKUP.sub(" ", text).split())


def sentence_ends(text: str, start: int = 0) -> list[int]:
    """Where each whole sentence of ``text`` after ``start`` ends."""
    return [m.end() for m in SENTENCE_END.finditer(text, start)]


class Speaker:
    """The interviewer's words to audio: each sentence is sent to the speech endpoint as soon as it
    is complete, so the first one plays while the rest is still being worded."""

    def __init__(self, settings: Settings):
        self.settings = settings
        self.endpoint: SpeechEndpoint | str = speech_endpoint(settings, "speech")

    @property
    def available(self) -> bool:
        return isinstance(self.endpoint, SpeechEndpoint)

    def say(self, sentence: str) -> bytes:
        endpoint = self.endpoint
        if isinstance(endpoint, str):
            raise SpeechError(endpoint)
        try:
            return speak(endpoint, sentence, self.settings.speech.voice, self.settings.llm.timeout_s)
        except LLMError as exc:
            raise SpeechError(f"{exc}; the words are on screen") from None

    def stream(self, snapshots: Iterable[str]) -> Iterator[bytes]:
        """Audio for the words as they grow: each snapshot holds all that was said so far (the last,
        the words as stored). Words that change under the speaker (a scripted follow-up after the
        model's failed one) are spoken from the start of the new words."""
        said = ""  # the words already sent to be spoken
        latest = ""
        for snapshot in snapshots:
            latest = speakable(snapshot)
            if not latest.startswith(said):
                said = ""
            for end in sentence_ends(latest, len(said)):  # one request a sentence: the first plays soonest
                sentence = latest[len(said) : end].strip()
                said = latest[:end]
                if sentence:
                    yield self.say(sentence)
        rest = latest[len(said) :].strip() if latest.startswith(said) else latest
        if rest:
            yield self.say(rest)
