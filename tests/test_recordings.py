"""Spoken answers kept with their turns: stored on either engine, compacted (ffmpeg's MP3, else a
16 kHz WAV), taken by the answer committed to the prompt they were recorded on, replayed in the
chat after a restart, gone with their session; a setting turns keeping off, and a store that
refuses costs the recording, never the words."""

from __future__ import annotations

import errno
import io
import json
import shutil
import subprocess
import time
import wave
from pathlib import Path

import pytest

from interviewer.application.exports import delete_session
from interviewer.application.speech import as_recorded, compact_recording
from interviewer.errors import StorageError
from interviewer.interview.plan import Plan
from interviewer.interview.store import Recording, Store
from interviewer.services import Services
from tests.fake_openai import Recorded
from tests.test_speech import EN, ZH, settings_for, spoken


def seconds_of(audio: bytes) -> float:
    """The length of any audio ffmpeg reads, decoded by ffmpeg itself to 16-bit samples at 16 kHz."""
    command = ["ffmpeg", "-nostdin", "-loglevel", "error", "-i", "pipe:0", "-f", "s16le", "-ac", "1", "-ar", "16000", "pipe:1"]
    return len(subprocess.run(command, input=audio, capture_output=True, check=True).stdout) / 32_000


def settled(store: Store, recording_id: int) -> Recording:
    """The recording once the page's background work on it (compacting, the transcript) is done."""
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        recording = store.recording(recording_id)
        if recording.mime == "audio/mpeg" and recording.transcript is not None:
            return recording
        time.sleep(0.05)
    return store.recording(recording_id)


def test_recordings_are_kept_and_taken_by_the_answer_to_their_prompt_on_either_engine(store: Store) -> None:
    session = store.create_session("practice", "en", Plan("question", "q05", ["q05"]), "offline", 2, now=1.0)
    first = store.add_recording(session.id, 0, "audio/mpeg", b"ID3 first", 4.5, "words heard", now=2.0)
    again = store.add_recording(session.id, 0, "audio/mpeg", b"ID3 again", None, None, now=3.0)
    later = store.add_recording(session.id, 1, "audio/wav", b"RIFF later", 1.0, None, now=4.0)
    assert (first.turn_id, first.position, first.size, first.seconds, first.transcript) == (None, 0, 9, 4.5, "words heard")
    assert len({first.token, again.token, later.token}) == 3 and len(first.token) == 32
    turn = store.add_turn(session.id, "answer", "q05", None, 1, "typed and said", "Q?", "bank", 1.0, now=5.0, after_seq=0)
    kept = {r.id: r.turn_id for r in store.recordings(session.id)}
    assert kept == {first.id: turn.id, again.id: turn.id, later.id: None}  # the next prompt's is not this answer's
    assert store.recording_audio(again.id) == b"ID3 again" and isinstance(store.recording_audio(again.id), bytes)
    summary = store.add_turn(session.id, "summary", None, None, 1, None, None, None, 1.0, now=6.0, status="none", after_seq=1)
    assert store.recording(later.id).turn_id is None and summary.kind == "summary"  # a round's end answers nothing
    store.set_transcript(later.id, "late words")
    store.replace_audio(later.id, "audio/mpeg", b"ID3 compacted")
    assert (store.recording(later.id).mime, store.recording(later.id).size) == ("audio/mpeg", 13)
    exported = json.loads(json.dumps(store.export(session.id)))
    assert [r["turn_id"] for r in exported["recordings"]] == [turn.id, turn.id, None]
    assert "token" not in exported["recordings"][0] and "audio" not in exported["recordings"][0]  # metadata only
    assert exported["recordings"][2]["transcript"] == "late words"
    store.delete_session(session.id)
    assert store.recordings(session.id) == []
    with pytest.raises(Exception, match="no recording"):
        store.recording_audio(first.id)
    assert "0006_recordings" in store.applied_migrations()


def test_a_users_removal_takes_their_recordings(store: Store) -> None:
    assert store.add_user("ann", "$argon2id$hash", now=1.0)
    session = store.create_session("interview", "en", Plan("question", "q05", ["q05"]), "offline", 2, now=1.0, owner="ann")
    recording = store.add_recording(session.id, 0, "audio/wav", b"RIFF", 1.0, None, now=2.0)
    store.add_turn(session.id, "skip", "q05", None, 1, None, "Q?", "bank", 1.0, now=3.0)
    assert store.recording(recording.id).turn_id is not None  # a pass keeps what was said before it
    store.remove_user("ann")
    assert store.recordings(session.id) == []


def test_a_recording_is_compacted_with_ffmpeg_and_without_it(tmp_path: Path) -> None:
    """ffmpeg's MP3 is about a tenth of a 48 kHz WAV and as long; without ffmpeg, a 16 kHz mono WAV
    with the same sound; a format nothing here converts is kept as it came."""
    said = spoken(tmp_path, EN, "en", "said.wav")
    recorded = tmp_path / "browser.wav"  # as a browser records: 48 kHz, stereo
    subprocess.run(["sox", str(said), "-r", "48000", "-c", "2", "-b", "16", str(recorded)], check=True)
    raw = recorded.read_bytes()
    with wave.open(str(recorded)) as source:
        length = source.getnframes() / source.getframerate()
    assert shutil.which("ffmpeg"), "`make install-test` installs ffmpeg"
    mp3 = compact_recording(as_recorded(recorded))
    assert mp3.mime == "audio/mpeg" and mp3.seconds == pytest.approx(length)
    assert len(mp3.audio) < len(raw) / 10 and seconds_of(mp3.audio) == pytest.approx(length, abs=0.1)
    plain = compact_recording(as_recorded(recorded), ffmpeg="")
    assert plain.mime == "audio/wav" and plain.seconds == pytest.approx(length)
    with wave.open(io.BytesIO(plain.audio)) as kept:
        assert (kept.getframerate(), kept.getnchannels(), kept.getsampwidth()) == (16_000, 1, 2)
        assert kept.getnframes() / 16_000 == pytest.approx(length, abs=0.01)
        samples = kept.readframes(kept.getnframes())
    loudest = max(abs(int.from_bytes(samples[i : i + 2], "little", signed=True)) for i in range(0, len(samples), 2))
    assert loudest > 1000  # sound, not silence
    assert len(plain.audio) < len(raw) / 5
    ogg = tmp_path / "answer.ogg"
    ogg.write_bytes(b"OggS not really")
    assert compact_recording(as_recorded(ogg), ffmpeg="") == type(mp3)("audio/ogg", b"OggS not really", None)
    assert compact_recording(as_recorded(ogg)).audio == b"OggS not really"  # ffmpeg cannot read it either: kept as it came
    assert as_recorded(recorded) == type(mp3)("audio/wav", raw, pytest.approx(length))


def test_the_page_keeps_a_spoken_answer_and_replays_it_after_a_restart(server: tuple[str, Recorded], tmp_path: Path) -> None:
    from interviewer.faces.web import Handlers

    url, recorded = server
    settings = settings_for(url, tmp_path)
    handlers = Handlers(Services(settings))
    view = handlers.start("question", "q06", None, "practice", "zh")
    recorded.transcripts.append({"text": "warp 里的线程走不同分支时会串行执行。"})
    text, notice = handlers.transcribe(view.session_id, str(spoken(tmp_path, ZH, "cmn", "zh.wav")), "")
    assert "未能保存" not in notice
    (kept,) = handlers.store.recordings(view.session_id)  # stored as it came, before the words were shown
    assert (kept.position, kept.turn_id) == (0, None) and kept.mime in {"audio/wav", "audio/mpeg"}
    kept = settled(handlers.store, kept.id)  # then compacted, and the words noted beside it
    assert (kept.mime, kept.transcript) == ("audio/mpeg", text)
    handlers.commit(view.session_id, text, at=view.position)
    for _ in handlers.follow(view.session_id, handlers.store.turns(view.session_id)[0].id):
        pass

    again = Handlers(Services(settings))  # a restart: the chat is rebuilt from the store
    chat = again.resume(view.session_id).chat
    answer = next(i for i, m in enumerate(chat) if m["role"] == "user")
    assert chat[answer]["content"].startswith("warp")
    replay = chat[answer + 1]
    assert replay["role"] == "user" and replay["content"]["alt_text"] == "录音"
    played = Path(replay["content"]["path"])
    assert played.suffix == ".mp3" and played.read_bytes() == again.store.recording_audio(kept.id) and kept.token in played.name
    assert again.store.recording(kept.id).turn_id == again.store.turns(view.session_id)[0].id

    delete_session(again.store, tmp_path, view.session_id)
    assert not played.exists() and again.store.recordings(view.session_id) == []


def test_keeping_off_a_failed_transcription_and_a_refusing_store(
    server: tuple[str, Recorded], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from interviewer.faces.web import Handlers

    url, recorded = server
    recording = str(spoken(tmp_path, EN, "en", "en.wav"))
    off = Handlers(Services(settings_for(url, tmp_path / "off", keep_recordings=False)))
    view = off.start("question", "q02", None, "interview", "en")
    recorded.transcripts.append({"text": "NCCL all-reduce."})
    assert off.transcribe(view.session_id, recording, "")[0] == "NCCL all-reduce."
    assert off.store.recordings(view.session_id) == []

    handlers = Handlers(Services(settings_for(url, tmp_path / "on")))
    view = handlers.start("question", "q02", None, "interview", "en")
    recorded.transcripts += [{"status": 503, "error": "overloaded"}] * 2  # the client retries once
    with pytest.raises(Exception, match=r"typing still works; the recording is kept with this answer$"):
        handlers.transcribe(view.session_id, recording, "typed")
    (kept,) = handlers.store.recordings(view.session_id)
    assert kept.transcript is None and kept.size > 1000  # what was said is not lost with the endpoint

    def full(*args: object, **kwargs: object) -> None:
        raise StorageError(OSError(errno.ENOSPC, "No space left on device"))

    monkeypatch.setattr(handlers.store, "add_recording", full)
    recorded.transcripts.append({"text": "ZeRO-3 shards the parameters."})
    text, notice = handlers.transcribe(view.session_id, recording, "typed")
    assert text == "typed\nZeRO-3 shards the parameters."  # the words still land
    assert "(the recording could not be kept: " in notice and notice.endswith("; the words are unaffected)") and "\n" not in notice
    assert "No space left" in notice or "full" in notice
