"""The web app: start-up against a bare Gradio app, and an offline turn as a browser sees it.

    python benchmarks/bench_app.py [--runs 3] [--turns 20]

Start-up: from process start to the first page served (HTTP 200), for `python app.py` (index
already built) and for a one-textbox Gradio app, measured in the same run.
Turn: in headless Chromium, from the click on Submit to the interviewer's next message on screen.
"""

from __future__ import annotations

import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import typer

ROOT = Path(__file__).resolve().parent.parent
BARE = "import gradio as gr\nwith gr.Blocks() as demo:\n    gr.Textbox()\ndemo.launch(server_name='127.0.0.1')\n"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def time_to_first_page(command: list[str], env: dict[str, str]) -> tuple[float, subprocess.Popen[bytes], str]:
    port = free_port()
    url = f"http://127.0.0.1:{port}/"
    started = time.perf_counter()
    process = subprocess.Popen(command, env={**env, "GRADIO_SERVER_PORT": str(port)}, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    while True:
        try:
            with urllib.request.urlopen(url, timeout=1) as response:
                if response.status == 200:
                    return time.perf_counter() - started, process, url
        except OSError:
            time.sleep(0.05)
        if time.perf_counter() - started > 120:
            process.kill()
            raise RuntimeError(f"{command} did not serve within 120 s")


def main(runs: int = 3, turns: int = 20) -> None:
    env = {**os.environ, "GRADIO_ANALYTICS_ENABLED": "False"}
    with tempfile.TemporaryDirectory() as tmp:
        env["INTERVIEWER_HOME"] = tmp
        bare_script = Path(tmp) / "bare.py"
        bare_script.write_text(BARE)
        subprocess.run([sys.executable, "-m", "interviewer.faces.cli", "index"], env=env, check=True, capture_output=True)
        bare, ours = [], []
        for _ in range(runs):
            for command, into in (([sys.executable, str(bare_script)], bare), ([sys.executable, str(ROOT / "app.py")], ours)):
                seconds, process, _ = time_to_first_page(command, env)
                into.append(seconds)
                process.terminate()
                process.wait()
        b, o = statistics.median(bare), statistics.median(ours)
        print(f"start-up to first page: bare Gradio {b:.2f} s, app.py {o:.2f} s, ratio {o / b:.2f} (target <= 1.5), median of {runs}")

        chromium = shutil.which("chromium")
        if chromium is None:
            print("browser turn: skipped (no chromium)")
            return
        from playwright.sync_api import sync_playwright

        _, process, url = time_to_first_page([sys.executable, str(ROOT / "app.py")], env)
        latencies = []
        try:
            with sync_playwright() as playwright:
                browser = playwright.chromium.launch(executable_path=chromium, args=ARGS)
                page = browser.new_page()
                page.goto(url)
                page.get_by_role("button", name="Start").click()  # the full loop: more turns than measured
                page.get_by_text("[q01]").first.wait_for()
                for i in range(turns + 2):
                    page.wait_for_timeout(100)
                    if page.get_by_role("button", name="Next round").is_visible():
                        page.get_by_role("button", name="Next round").click()
                        page.wait_for_function(
                            "!document.querySelector('textarea[data-testid=\"textbox\"], textarea').disabled", polling="raf"
                        )
                    count = page.locator(".message-row, .message").count()
                    page.get_by_label("Your answer").fill(f"数据并行每张卡一份模型，梯度 all-reduce 同步，第 {i} 次。")
                    started = time.perf_counter()
                    page.get_by_role("button", name="Submit").click()
                    page.wait_for_function(f"document.querySelectorAll('.message-row, .message').length > {count}", polling="raf")
                    if i >= 2:
                        latencies.append((time.perf_counter() - started) * 1000)
                browser.close()
        finally:
            process.terminate()
            process.wait()
        latencies.sort()
        p95 = latencies[int(0.95 * len(latencies))]
        p50 = statistics.median(latencies)
        print(f"offline turn in the browser (submit -> next message): p50 {p50:.0f} ms, p95 {p95:.0f} ms (target <= 300 ms)")


if __name__ == "__main__":
    typer.run(main)
