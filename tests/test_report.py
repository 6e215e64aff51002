"""Reports for simulated candidates, and hostile answers rendered as text."""

from __future__ import annotations

import html
import json
from pathlib import Path

from interviewer.faces.simulate import run
from interviewer.interview import report as reports
from interviewer.interview.engine import Engine
from interviewer.interview.plan import make_plan
from interviewer.services import Services
from tests.conftest import Q16, dev_candidate, shown_text


def test_expert_and_novice_reports(engine: Engine) -> None:
    expert = reports.build(run(engine, dev_candidate("expert", Q16["expert"]), "zh", 2))
    novice = reports.build(run(engine, dev_candidate("weak", Q16["novice"]), "zh", 2))
    assert expert.overall is not None and novice.overall is not None and expert.overall > novice.overall + 4
    assert len(expert.questions) == 16 and all(q.grade is not None for q in expert.questions)
    # the novice's study plan starts with its weakest question, and its weakest topic leads the chart data
    assert novice.plan[0][1] == min(q.score for q in novice.questions if q.score is not None)
    assert novice.topics[0][1] == min(score for _, score in novice.topics)
    assert len(novice.plan) > len(expert.plan)
    full = 0
    for q in expert.questions:  # what the expert covered fully shows no missed points
        assert q.grade is not None
        for c in q.grade.criteria:
            if c.score == c.max_score:
                full += 1
                lines = reports.criteria_markdown(q.grade.model_copy(update={"criteria": [c], "passages": []}), "zh")
                assert not any("满分还需要" in line for line in lines)
    assert full >= 10
    text = reports.markdown(expert)
    assert "模拟面试反馈报告" in text and "[q01]" in text
    assert ("学习计划" in text) == bool(expert.plan)
    page = reports.to_html(novice)
    assert page.startswith("<!doctype html>") and "<svg" in page and "http" not in page.split("<body>")[0]


def test_hostile_answers_show_as_text(services: Services, engine: Engine) -> None:
    state = engine.start(make_plan(services.bank, "question", "q07"), lang="en")
    hostile = '<script>alert("x")</script><img src=x onerror=alert(1)> shared memory has 32 banks'
    page = reports.to_html(reports.build(engine.submit(state.id, hostile).state))
    assert "<script>alert" not in page and "<img src=x" not in page
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;" in page


def test_code_stays_code_in_every_report(services: Services, engine: Engine) -> None:
    kernel = "__global__ void k(float* __restrict__ a) {\n    __shared__ float s[32][33];\n    s[threadIdx.y][threadIdx.x] = a[0];\n}"
    said = f"Pad the tile by one column:\n\n```cuda\n{kernel}\n```\nso a column read hits 32 banks."
    state = engine.submit(engine.start(make_plan(services.bank, "question", "q07"), lang="en").id, said).state
    built = reports.build(state)
    page = reports.to_html(built)
    assert f'<pre><code class="language-cuda">{html.escape(kernel)}</code></pre>' in page  # monospace (see CSS)
    assert "pre{font-family:" in page.replace(" ", "").replace("\n", "")
    shown = shown_text(reports.markdown(built))  # the in-app report, as the page renders it
    assert kernel in shown and "Pad the tile by one column:" in shown


def test_report_command(services: Services, tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from interviewer.faces.cli import app

    runner = CliRunner()
    script = tmp_path / "a.jsonl"
    script.write_text(
        json.dumps(
            {"question_id": "q09", "answer": "先用 Nsight Systems 看时间线，再用 Nsight Compute 看热点 kernel。"}, ensure_ascii=False
        )
    )
    session_id = json.loads(runner.invoke(app, ["simulate", str(script), "--json"]).stdout)["session_id"]
    md = runner.invoke(app, ["report", session_id])
    assert md.exit_code == 0 and "[q09]" in md.stdout
    out = tmp_path / "r.html"
    assert runner.invoke(app, ["report", session_id, "--format", "html", "--out", str(out)]).exit_code == 0
    assert "Nsight Systems" in out.read_text(encoding="utf-8")
    assert runner.invoke(app, ["report", session_id, "--format", "pdf"]).exit_code == 1


def test_skip_and_i_dont_know_differ_and_the_plan_names_what_to_read(services: Services, engine: Engine) -> None:
    state = engine.start(make_plan(services.bank, "round", "1"), lang="en")
    engine.skip(state.id)
    engine.dont_know(state.id)
    built = reports.build(engine.state(state.id), services.titles)
    page, text = reports.to_html(built), reports.markdown(built)
    assert "<em>skipped</em>" in page and html.escape("did not know (“I don't know”)") in page
    assert "*skipped*" in text and "*did not know" in text
    ref = built.plan[0][2][0]
    assert f"{html.escape(services.titles[ref])} <code>{ref}</code>" in page and f"{services.titles[ref]} ({ref})" in text


def test_the_radar_keeps_every_label_inside_and_on_its_side() -> None:
    import re

    topics = [(f"communication-optimisation-{i}", 5.0) for i in range(16)]
    svg = reports.radar_svg(topics)
    width = float(re.search(r'viewBox="0 -12 (\d+)', svg).group(1))  # type: ignore[union-attr]
    for x, anchor in re.findall(r'<text x="([\d.]+)" y="[\d.-]+" font-size="11" text-anchor="(\w+)"', svg):
        reach = 6.2 * len("communication-optimisation-15 5.0")  # ~6 px a character at 11 px
        left, right = {"start": (float(x), float(x) + reach), "end": (float(x) - reach, float(x))}.get(
            anchor, (float(x) - reach / 2, float(x) + reach / 2)
        )
        assert left >= 0 and right <= width, (x, anchor)
