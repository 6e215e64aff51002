"""Speech in the page, in Chromium, against the tests' local OpenAI-compatible server (tests/fake_openai.py).

    python benchmarks/bench_speech.py [--recordings 20]

Answering aloud: the app (``app.py``, its own data folder) with a transcription endpoint; Chromium
records from a fake microphone fed by an espeak-ng sentence, 1.5 s a recording. The page stamps the
moment Stop is clicked and the moment the answer box shows the recording's words (Date.now, the
same clock as the server's); the server stamps the moment the request arrived and how long it took
to answer. The product's overhead is Stop -> words in the box, less the endpoint's own time
(target p95 <= 300 ms): the upload, the event, reading the WAV, the request and the page update.

The interviewer's voice: the voice on, on a fresh page each time, Start; the question is spoken
through /audio/speech (espeak-ng makes the audio, about 0.1 s a sentence); from the question's words
on the page to its first sound playing (the <audio> element playing, its currentTime moving).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from tests.fake_openai import serve
from tests.servers import free_port
from tests.test_browser import ARGS, CHROMIUM, App

SENTENCE = "NCCL all reduce across eight GPUs, with ZeRO three sharding the parameters"
STAMP_BOX = """() => {
  const box = document.querySelector('#answer textarea');
  const seen = box.value;
  window.boxChangedAt = null;
  const check = () => { if (box.value !== seen) window.boxChangedAt = Date.now(); else requestAnimationFrame(check); };
  check();
}"""
WATCH_SOUND = """() => {
  const before = (document.querySelector('#voice audio') || {currentTime: 0}).currentTime;
  window.soundAt = null;
  const check = () => {
    const audio = document.querySelector('#voice audio');
    if (audio && !audio.paused && audio.currentTime > before + 0.01) window.soundAt = Date.now(); else requestAnimationFrame(check);
  };
  check();
}"""


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * len(ordered) + 0.5) - 1))]


def line(name: str, values: list[float], target: str = "") -> None:
    ms = [v * 1000 for v in values]
    print(
        f"  {name}: p50 {pct(ms, 0.5):.0f} ms, p95 {pct(ms, 0.95):.0f} ms, max {max(ms):.0f} ms, n={len(ms)}"
        + (f"   ({target})" if target else "")
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--recordings", type=int, default=20)
    parser.add_argument("--voices", type=int, default=5, help="questions to hear, each on a fresh page")
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory() as tmp, serve() as (url, recorded):
        folder = Path(tmp)
        said = folder / "said.wav"
        subprocess.run(["espeak-ng", "-v", "en", "-w", str(said), SENTENCE], check=True)
        voice = folder / "mic.wav"
        subprocess.run(["sox", str(said), "-r", "48000", str(voice)], check=True)
        env = {"OPENAI_BASE_URL": url, "OPENAI_API_KEY": "sk-bench", "INTERVIEWER_MODEL": "bench-model"}
        env |= {"INTERVIEWER_STT_MODEL": "whisper-bench", "INTERVIEWER_TTS_MODEL": "tts-bench"}
        app = App(folder / "home", free_port(), env).start()
        flags = ["--autoplay-policy=no-user-gesture-required", "--use-fake-ui-for-media-stream", "--use-fake-device-for-media-stream"]
        flags.append(f"--use-file-for-fake-audio-capture={voice}")
        try:
            with sync_playwright() as playwright:
                browser = playwright.chromium.launch(executable_path=CHROMIUM, args=[*ARGS, *flags])
                page = browser.new_page(viewport={"width": 1280, "height": 900})
                page.goto(app.url)
                page.get_by_label("round 3", exact=True).check()
                page.get_by_label("Speak the interviewer's questions").check()
                page.evaluate("() => document.querySelector('textarea[placeholder^=\"Answer in\"]').closest('.block').id = 'answer'")
                page.get_by_role("button", name="Start").click()
                page.get_by_text("[q11]").first.wait_for()

                overheads, totals = [], []
                mic = page.locator("#mic")
                for number in range(args.recordings):
                    recorded.transcripts.append({"text": f"recording {number}: {SENTENCE}"})
                    record = mic.get_by_role("button", name="Record")
                    if not record.is_visible():
                        mic.get_by_role("button", name="Clear").click()
                    record.click()
                    page.wait_for_timeout(1500)
                    page.evaluate(STAMP_BOX)
                    stopped = page.evaluate("() => Date.now()")
                    mic.get_by_role("button", name="Stop").click()
                    shown = page.wait_for_function("() => window.boxChangedAt", timeout=30_000).json_value()
                    request = recorded.transcription_requests()[-1]
                    total = (shown - stopped) / 1000
                    totals.append(total)
                    overheads.append(total - request["endpoint_s"])
                    page.locator("#answer textarea").fill("")
                print(f"\n== speech in: {args.recordings} recordings of 1.5 s in Chromium")
                line("Stop -> the words in the answer box", totals)
                line("the product's overhead (less the endpoint's own time)", overheads, "p95 <= 300 ms")

                firsts = []
                for number in range(args.voices):  # a fresh page each: nothing earlier is still playing
                    fresh = browser.new_page(viewport={"width": 1280, "height": 900})
                    fresh.goto(app.url)
                    fresh.get_by_label("one question", exact=True).check()
                    fresh.get_by_label("Speak the interviewer's questions").check()
                    fresh.evaluate(WATCH_SOUND)
                    fresh.get_by_role("button", name="Start").click()
                    shown_at = fresh.wait_for_function(
                        "() => [...document.querySelectorAll('.message')].some(m => m.innerText.includes('[q01]')) && Date.now()",
                        timeout=20_000,
                    ).json_value()
                    try:
                        sound_at = fresh.wait_for_function("() => window.soundAt", timeout=20_000).json_value()
                        firsts.append((sound_at - shown_at) / 1000)
                    except Exception:
                        print(f"  question {number}: not heard within 20 s")
                    fresh.close()
                print("== the interviewer's voice: the question's words on the page -> its first sound playing")
                line("first sound (espeak-ng as the speech endpoint, about 0.1 s a sentence)", firsts)
                browser.close()
        finally:
            app.stop()


if __name__ == "__main__":
    main()
