"""Answering aloud: real speech (espeak-ng, converted with sox) through the transcription path to a
local OpenAI-compatible server, which checks what it receives; the faults, each one line."""

from __future__ import annotations

import io
import json
import re
import shutil
import subprocess
import wave
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from interviewer.application.speech import SpeechError, Transcriber, vocabulary_prompt
from interviewer.faces.cli import app
from interviewer.provider import speech_endpoint
from interviewer.services import Services
from interviewer.settings import EndpointSettings, LLMSettings, Settings, SpeechSettings
from tests.fake_openai import Recorded
from tests.servers import free_port

runner = CliRunner()
EN = "NCCL all reduce across eight GPUs, with ZeRO three sharding the parameters"
ZH = "张量并行把每一层的矩阵切到多张卡上"


def spoken(folder: Path, text: str, voice: str, name: str) -> Path:
    """``text`` said by espeak-ng (Debian's espeak-ng; ``make install-test`` installs it)."""
    if shutil.which("espeak-ng") is None:
        pytest.fail("espeak-ng is missing: `make install-test` installs it", pytrace=False)
    path = folder / name
    subprocess.run(["espeak-ng", "-v", voice, "-w", str(path), text], check=True, capture_output=True)
    return path


def frames(audio: bytes) -> tuple[Any, bytes]:
    with wave.open(io.BytesIO(audio)) as read:
        return read.getparams(), read.readframes(read.getnframes())


def settings_for(url: str, tmp_path: Path, **speech: Any) -> Settings:
    return Settings(
        home=tmp_path,
        endpoint=EndpointSettings(base_url=url, api_key="sk-test", model="test-model"),
        llm=LLMSettings(timeout_s=3, max_retries=0),
        speech=SpeechSettings(stt_model="whisper-test", **speech),
    )


def test_a_spoken_answer_reaches_the_endpoint_with_the_questions_words(
    services: Services, server: tuple[str, Recorded], tmp_path: Path
) -> None:
    url, recorded = server
    recording = spoken(tmp_path, EN, "en", "answer.wav")
    recorded.transcripts.append({"text": "  NCCL all-reduce across eight GPUs, with ZeRO-3 sharding the parameters. "})
    result = Transcriber(settings_for(url, tmp_path), services.glossary).transcribe(recording, services.bank.get("q02"), "en")
    assert result.text == "NCCL all-reduce across eight GPUs, with ZeRO-3 sharding the parameters."
    assert result.pieces == 1 and result.audio_s is not None and 2.0 < result.audio_s < 10.0
    assert 0 <= result.endpoint_s <= result.total_s
    (request,) = recorded.transcription_requests()
    form = request["body"]
    assert form["model"] == "whisper-test" and form["language"] == "en"
    assert form["file"]["bytes"] == recording.read_bytes() and form["file"]["filename"] == "answer.wav"  # the audio as recorded
    assert {k.lower(): v for k, v in request["headers"].items()}["authorization"] == "Bearer sk-test"
    prompt = form["prompt"]
    assert prompt.startswith(services.bank.get("q02").question.en)
    assert all(term in prompt for term in ("ZeRO-3", "all-gather", "reduce-scatter")), prompt  # the field's spellings
    assert len(prompt) <= 600


def test_chinese_speech_converted_by_sox_goes_as_it_is(services: Services, server: tuple[str, Recorded], tmp_path: Path) -> None:
    url, recorded = server
    wav = spoken(tmp_path, ZH, "cmn", "zh.wav")
    flac = tmp_path / "zh.flac"
    subprocess.run(["sox", str(wav), "-r", "16000", str(flac)], check=True, capture_output=True)
    recorded.transcripts.append({"text": ZH})
    result = Transcriber(settings_for(url, tmp_path), services.glossary).transcribe(flac, services.bank.get("q01"), "zh")
    assert result.text == ZH and result.audio_s is None  # only WAV is measured and cut
    form = recorded.transcription_requests()[0]["body"]
    assert form["file"]["bytes"] == flac.read_bytes() and form["file"]["filename"] == "zh.flac" and form["language"] == "zh"
    assert form["prompt"].startswith(services.bank.get("q01").question.zh) and "张量并行" in form["prompt"] and "1F1B" in form["prompt"]


def test_a_long_recording_is_sent_in_pieces_that_lose_no_sound(services: Services, server: tuple[str, Recorded], tmp_path: Path) -> None:
    url, recorded = server
    one = spoken(tmp_path, EN, "en", "one.wav")
    long = tmp_path / "long.wav"
    subprocess.run(["sox", str(one), str(one), str(one), str(long)], check=True, capture_output=True)  # about 15 s, 660 kB
    recorded.transcripts += [{"text": "first part"}, {"text": "second part"}, {"text": ""}, {"text": "last part"}]
    seen: list[tuple[int, int]] = []
    result = Transcriber(settings_for(url, tmp_path, chunk_mb=0.2), services.glossary).transcribe(
        long, services.bank.get("q02"), "en", lambda done, total: seen.append((done, total))
    )
    requests = recorded.transcription_requests()
    assert result.pieces == len(requests) == 4 and result.text == "first part second part last part"
    assert seen[0] == (0, 4) and seen[-1] == (4, 4)
    params, whole = frames(long.read_bytes())
    pieces = [frames(r["body"]["file"]["bytes"]) for r in requests]
    assert all(p.framerate == params.framerate and p.nchannels == params.nchannels for p, _ in pieces)
    assert b"".join(f for _, f in pieces) == whole  # cut on frame boundaries, nothing dropped or repeated
    assert all(len(r["body"]["file"]["bytes"]) <= 200_000 for r in requests)
    assert requests[1]["body"]["prompt"].endswith("first part") and requests[2]["body"]["prompt"].endswith("first part second part")


@pytest.mark.parametrize(
    ("reply", "said"),
    [
        ({"status": 400, "error": "Invalid file format."}, "refused the recording (400: Invalid file format.)"),
        ({"status": 401, "error": "bad key"}, "rejected the API key (401)"),
        ({"text": "   "}, "nothing was heard in the recording"),
        ({"text": "late", "delay": 4.5}, "did not transcribe within 3 s"),
    ],
)
def test_what_the_endpoint_does_wrong_is_one_line(
    services: Services, server: tuple[str, Recorded], tmp_path: Path, reply: dict[str, Any], said: str
) -> None:
    url, recorded = server
    recording = spoken(tmp_path, EN, "en", "answer.wav")
    recorded.transcripts += [reply, reply]  # the client's one retry meets the same
    with pytest.raises(SpeechError) as refused:
        Transcriber(settings_for(url, tmp_path), services.glossary).transcribe(recording, None, "en")
    message = str(refused.value)
    assert said in message and "\n" not in message and "sk-test" not in message


def test_recordings_that_cannot_be_sent_are_refused_before_sending(
    services: Services, server: tuple[str, Recorded], tmp_path: Path
) -> None:
    url, recorded = server
    transcriber = Transcriber(settings_for(url, tmp_path, max_minutes=0.02), services.glossary)  # 1.2 s at most
    cases = {
        "empty.wav": (b"", "the recording is empty"),
        "noise.wav": (b"RIFF" + bytes(100), "not a readable WAV file"),
        "notes.txt": (b"hello", ".txt is not an audio format"),
    }
    for name, (content, said) in cases.items():
        (tmp_path / name).write_bytes(content)
        with pytest.raises(SpeechError, match=said):
            transcriber.transcribe(tmp_path / name)
    with pytest.raises(SpeechError, match=r"minutes long, more than the 0 transcribed at most"):
        transcriber.transcribe(spoken(tmp_path, EN, "en", "long.wav"))
    with pytest.raises(SpeechError, match="cannot be read"):
        transcriber.transcribe(tmp_path / "missing.wav")
    assert recorded.transcription_requests() == []


def test_a_dead_endpoint_and_no_endpoint_are_one_line(services: Services, tmp_path: Path) -> None:
    recording = spoken(tmp_path, EN, "en", "answer.wav")
    dead = settings_for(f"http://127.0.0.1:{free_port()}/v1", tmp_path)
    with pytest.raises(SpeechError, match=r"cannot reach whisper-test @ 127\.0\.0\.1:\d+ to transcribe; your typed answer is kept"):
        Transcriber(dead, services.glossary).transcribe(recording)
    nothing = Transcriber(Settings(home=tmp_path, endpoint=EndpointSettings.model_construct()), services.glossary)
    assert not nothing.available and "OPENAI_API_KEY" in nothing.unavailable_reason
    # a local endpoint serves chat; its transcription model must be named, or no microphone
    local = Settings(home=tmp_path, endpoint=EndpointSettings(base_url="http://127.0.0.1:9/v1"), speech=SpeechSettings(stt_model=None))
    assert "INTERVIEWER_STT_MODEL" in str(speech_endpoint(local))
    # OpenAI's own API: whisper-1 unless told otherwise
    openai_own = Settings(home=tmp_path, endpoint=EndpointSettings(api_key="sk-x"), speech=SpeechSettings(stt_model=None))
    assert getattr(speech_endpoint(openai_own), "model", None) == "whisper-1"


def test_a_separate_transcription_endpoint_uses_its_own_key_only(services: Services, server: tuple[str, Recorded], tmp_path: Path) -> None:
    url, recorded = server
    settings = Settings(
        home=tmp_path,
        endpoint=EndpointSettings(base_url="http://127.0.0.1:9/v1", api_key="sk-chat", model="m"),
        speech=SpeechSettings(stt_model="whisper-local", base_url=url, api_key=None),
    )
    Transcriber(settings, services.glossary).transcribe(spoken(tmp_path, EN, "en", "a.wav"))
    (request,) = recorded.transcription_requests()
    assert "sk-chat" not in json.dumps(request["headers"]) and request["body"]["model"] == "whisper-local"


def test_transcribe_prints_what_was_heard(server: tuple[str, Recorded], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    url, recorded = server
    monkeypatch.setenv("INTERVIEWER_HOME", str(tmp_path))
    monkeypatch.setenv("OPENAI_BASE_URL", url)
    monkeypatch.setenv("INTERVIEWER_STT_MODEL", "whisper-test")
    recorded.transcripts.append({"text": "ring all-reduce sends 2(N-1)/N of the data"})
    recording = spoken(tmp_path, EN, "en", "answer.wav")
    result = runner.invoke(app, ["transcribe", str(recording), "--question", "q03", "--lang", "en"])
    assert result.exit_code == 0, result.output
    assert result.stdout == "ring all-reduce sends 2(N-1)/N of the data\n"
    assert "piece(s)" in result.stderr and "the endpoint" in result.stderr
    wrong = runner.invoke(app, ["transcribe", str(recording), "--question", "q99"])
    assert wrong.exit_code == 1 and wrong.stderr.startswith("error: ") and wrong.stderr.count("\n") == 1


def test_the_prompt_keeps_the_fields_spellings_and_drops_plain_words(services: Services) -> None:
    prompt = vocabulary_prompt(services.bank.get("q08"), services.glossary, "en")
    assert prompt.startswith(services.bank.get("q08").question.en + "\nTerms: ")
    assert all(term in prompt for term in ("GEMM", "__syncthreads", "cp.async", "cuBLAS"))
    assert ", thread," not in prompt and ", kernel," not in prompt  # the model spells those unaided
    assert len(prompt) <= 600 and not prompt.endswith(",")
    assert vocabulary_prompt(None, services.glossary, "zh") == ""


def test_the_page_puts_the_words_after_what_was_typed_for_the_question_on_screen(server: tuple[str, Recorded], tmp_path: Path) -> None:
    from interviewer.faces.web import Handlers

    url, recorded = server
    services = Services(settings_for(url, tmp_path))
    handlers = Handlers(services)
    assert handlers.transcriber.available
    view = handlers.start("question", "q06", None, "practice", "zh")
    recorded.transcripts.append({"text": "warp 里的线程走不同分支时会串行执行。"})
    recording = spoken(tmp_path, ZH, "cmn", "zh.wav")
    text, notice = handlers.transcribe(view.session_id, str(recording), "先写的一句。")
    assert text == "先写的一句。\nwarp 里的线程走不同分支时会串行执行。" and re.match(r"已转写 \d+ s，用时 \d+\.\d 秒", notice)
    form = recorded.transcription_requests()[0]["body"]
    assert form["language"] == "zh" and form["prompt"].startswith(services.bank.get("q06").question.zh)
    assert services.store.turns(view.session_id) == []  # nothing is submitted: the candidate reads it first
    with pytest.raises(Exception, match=f"no session '{view.session_id}'"):
        handlers.transcribe(view.session_id, str(recording), "", user="someone-else")
    with pytest.raises(Exception, match=r"No recording arrived|没有收到录音"):
        handlers.transcribe(view.session_id, None, "typed")
    offline = Handlers(Services(Settings(home=tmp_path / "offline", endpoint=EndpointSettings.model_construct())))
    assert not offline.transcriber.available
    said_zh, said_en = offline.transcriber.unavailable_reason_in("zh"), offline.transcriber.unavailable_reason_in("en")
    assert said_zh.startswith("请配置语音端点：OPENAI_API_KEY") and "configure" not in said_zh  # the Chinese page says it in Chinese
    assert said_en.startswith("to answer aloud, configure a speech endpoint") and handlers.transcriber.unavailable_reason_in("zh") == ""


def test_in_the_browser_the_question_is_spoken_and_a_recording_lands_in_the_answer_box(
    server: tuple[str, Recorded], tmp_path: Path
) -> None:
    """With the voice on, Start speaks the question through the endpoint and the page plays it.
    Chromium records from a fake microphone fed by an espeak-ng file; the page sends the
    recording, and what the endpoint heard lands in the answer box, not yet submitted."""
    from playwright.sync_api import sync_playwright

    from tests.test_browser import ARGS, ARTIFACTS, CHROMIUM, App

    url, recorded = server
    voice = tmp_path / "mic.wav"
    subprocess.run(["sox", str(spoken(tmp_path, EN, "en", "said.wav")), "-r", "48000", "-b", "16", str(voice)], check=True)
    recorded.transcripts.append({"text": "NCCL all-reduce across eight GPUs, with ZeRO-3 sharding the parameters."})
    env = {"OPENAI_BASE_URL": url, "OPENAI_API_KEY": "sk-test", "INTERVIEWER_MODEL": "test-model", "INTERVIEWER_STT_MODEL": "whisper-test"}
    env["INTERVIEWER_TTS_MODEL"] = "tts-test"
    served = App(tmp_path / "home", free_port(), env).start()
    microphone = [
        "--autoplay-policy=no-user-gesture-required",
        "--use-fake-ui-for-media-stream",
        "--use-fake-device-for-media-stream",
        f"--use-file-for-fake-audio-capture={voice}",
    ]
    try:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=CHROMIUM, args=[*ARGS, *microphone])
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            page.goto(served.url)
            page.get_by_label("one question", exact=True).check()
            page.get_by_label("Speak the interviewer's questions").check()
            page.get_by_role("button", name="Start").click()
            page.get_by_text("[q01]").first.wait_for()
            page.wait_for_function(  # the voice plays: Gradio's player got the stream and has sound to play
                "() => [...document.querySelectorAll('#voice audio')].some(a => a.duration > 0 || a.currentTime > 0)", timeout=30_000
            )
            page.get_by_label("Your answer").fill("Typed first.")
            mic = page.locator("#mic")
            mic.get_by_role("button", name="Record").click()
            page.wait_for_timeout(2500)
            mic.get_by_role("button", name="Stop").click()
            page.wait_for_function(
                "() => document.querySelector('textarea[data-testid=\"textbox\"], #component-0 textarea, textarea')"
                " && [...document.querySelectorAll('textarea')].some(t => t.value.includes('ZeRO-3'))",
                timeout=30_000,
            )
            box = page.get_by_label("Your answer").input_value()
            page.screenshot(path=str(ARTIFACTS / "speech-in.png"))
            page.get_by_role("button", name="Submit").click()  # the recording is kept with the answer and replays in the chat
            player = page.locator('#chat [data-testid="waveform-Audio"]').first  # Gradio's player, in the candidate's bubble
            player.wait_for(timeout=30_000)
            page.wait_for_function(  # the player has read the recording: it shows how long it is
                "() => [...document.querySelectorAll('#chat [data-testid=\"waveform-Audio\"] .timestamp')]"
                ".some(t => /^0:0[1-9]$/.test(t.textContent.trim()))",
                timeout=30_000,
            )
            link = page.locator('#chat a.download-link[href$=".mp3"]').first.get_attribute("href") or ""
            replay = page.request.get(link).body()
            page.screenshot(path=str(ARTIFACTS / "speech-replay.png"))
            browser.close()
    finally:
        served.stop()
    assert box == "Typed first.\nNCCL all-reduce across eight GPUs, with ZeRO-3 sharding the parameters."
    (request,) = recorded.transcription_requests()
    params, sound = frames(request["body"]["file"]["bytes"])
    assert request["body"]["file"]["filename"].endswith(".wav") and params.nframes / params.framerate > 1.0
    assert any(sound[i] for i in range(0, len(sound), 97)), "the recording carries the fake microphone's sound, not silence"
    assert request["body"]["prompt"].startswith("How do data, tensor and pipeline parallelism")
    spoken_words = [r["body"]["input"] for r in recorded.speech_requests()]
    assert spoken_words[0].startswith("How do data, tensor and pipeline parallelism each work"), spoken_words
    assert "[q01]" not in " ".join(spoken_words)
    assert replay[:3] == b"ID3" and len(replay) > 4000, "the kept recording, as ffmpeg's MP3"


def test_a_denied_microphone_is_one_line_and_typing_goes_on(server: tuple[str, Recorded], tmp_path: Path) -> None:
    """Chromium refuses the page the microphone (no fake permission prompt): Record brings one line
    saying to allow it (the browser never tells the server); what was typed stays, and the typed
    answer is submitted as usual."""
    from playwright.sync_api import sync_playwright

    from tests.test_browser import ARGS, ARTIFACTS, CHROMIUM, App, chat_text

    url, recorded = server
    env = {"OPENAI_BASE_URL": url, "OPENAI_API_KEY": "sk-test", "INTERVIEWER_MODEL": "test-model", "INTERVIEWER_STT_MODEL": "whisper-test"}
    served = App(tmp_path / "home", free_port(), env).start()
    try:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(
                executable_path=CHROMIUM, args=[*ARGS, "--use-fake-device-for-media-stream", "--deny-permission-prompts"]
            )
            page = browser.new_page(viewport={"width": 390, "height": 844})  # a phone
            page.goto(served.url)
            page.get_by_label("one question", exact=True).check()
            page.get_by_role("button", name="Start").click()
            page.get_by_text("[q01]").first.wait_for()
            typed = "Data parallelism copies the model; tensor parallelism splits each layer's matrices."
            page.get_by_label("Your answer").fill(typed)
            page.locator("#mic").get_by_role("button", name="Record").click()
            line = page.locator("#speech-line")
            page.wait_for_function("() => document.querySelector('#speech-line').textContent.includes('refused')", timeout=15_000)
            said = line.inner_text()
            page.screenshot(path=str(ARTIFACTS / "speech-mic-denied.png"))
            kept = page.get_by_label("Your answer").input_value()
            page.get_by_role("button", name="Submit").click()
            page.get_by_text("tensor parallelism splits each layer").first.wait_for(timeout=15_000)
            chat = chat_text(page)
            browser.close()
    finally:
        served.stop()
    assert said.strip().startswith("The browser refused the microphone: allow it for this page") and "\n" not in said.strip(), said
    assert kept == typed and "tensor parallelism splits each layer" in chat
    assert recorded.transcription_requests() == []  # nothing was recorded, nothing sent


def test_the_interviewer_is_spoken_sentence_by_sentence_as_it_is_worded(server: tuple[str, Recorded], tmp_path: Path) -> None:
    from interviewer.application.speech import Speaker

    url, recorded = server
    speaker = Speaker(settings_for(url, tmp_path, tts_model="tts-test", voice="echo"))
    assert speaker.available
    snapshots = [
        "**↪** You gave t=8",
        "**↪** You gave t=8, p=8 for 1,024 GPUs.",
        "**↪** You gave t=8, p=8 for 1,024 GPUs. Why keep `cp.async` in",
        "**↪** You gave t=8, p=8 for 1,024 GPUs. Why keep `cp.async` in the loop? 那么张量并行放在哪里？最后",
        "**↪** You gave t=8, p=8 for 1,024 GPUs. Why keep `cp.async` in the loop? 那么张量并行放在哪里？最后一句",
    ]
    consumed: list[str] = []

    def worded() -> Iterator[str]:
        for text in snapshots:
            consumed.append(text)
            yield text

    audio = speaker.stream(worded())
    first = next(audio)
    assert len(consumed) == 2, "the first sentence is spoken as soon as it is complete, before the rest is worded"
    assert frames(first)[0].nframes > 0  # real speech came back
    rest = list(audio)
    said = [r["body"]["input"] for r in recorded.speech_requests()]
    assert said == ["You gave t=8, p=8 for 1,024 GPUs.", "Why keep cp.async in the loop?", "那么张量并行放在哪里？", "最后一句"]
    assert len(rest) == 3
    assert all(r["body"]["model"] == "tts-test" and r["body"]["voice"] == "echo" for r in recorded.speech_requests())


def test_words_that_change_are_spoken_again_and_a_failing_voice_is_one_line(server: tuple[str, Recorded], tmp_path: Path) -> None:
    from interviewer.application.speech import Speaker

    url, recorded = server
    speaker = Speaker(settings_for(url, tmp_path, tts_model="tts-test"))
    list(speaker.stream(["The model began. And then", "[q01] The scripted question instead. Two sentences."]))
    said = [r["body"]["input"] for r in recorded.speech_requests()]
    assert said == ["The model began.", "The scripted question instead.", "Two sentences."]
    recorded.speeches += [{"status": 400, "error": "voice not found"}] * 2
    with pytest.raises(SpeechError) as refused:
        list(speaker.stream(["Hello there."]))
    assert "refused to speak (400: voice not found); the words are on screen" in str(refused.value) and "\n" not in str(refused.value)
    local = Settings(home=tmp_path, endpoint=EndpointSettings(base_url=url), speech=SpeechSettings(tts_model=None))
    assert not Speaker(local).available and "INTERVIEWER_TTS_MODEL" in str(Speaker(local).endpoint)


def test_doctor_checks_transcription_and_speech(server: tuple[str, Recorded], tmp_path: Path) -> None:
    from interviewer.faces.doctor import transcription

    url, recorded = server
    checks = transcription(settings_for(url, tmp_path, tts_model="tts-test"))
    assert [(c.name, c.ok) for c in checks] == [("transcription", True), ("speech", True)]
    assert "the page shows a microphone" in checks[0].message and "tts-test @ 127.0.0.1" in checks[1].message
    recorded.transcripts += [{"status": 404, "error": "no such route"}] * 2
    failed = transcription(settings_for(url, tmp_path))
    assert not failed[0].ok and "404: no such route" in failed[0].message
    assert failed[1].ok and failed[1].message.startswith("the interviewer's voice is off:"), failed[1]
