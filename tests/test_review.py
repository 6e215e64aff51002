"""Spaced repetition of weak criteria, the weak-points drill, and progress over time."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

from interviewer.application.history import History
from interviewer.application.plans import weak_plan
from interviewer.interview import report as reports
from interviewer.interview.engine import Engine
from interviewer.interview.plan import make_plan
from interviewer.interview.schedule import DAY, Schedule, quality, review
from interviewer.interview.store import Store
from interviewer.services import Services
from tests.conftest import FakeClock

STRONG = (
    "ZeRO-1 切分优化器状态，每卡 4Ψ+12Ψ/N_d；ZeRO-2 再切梯度，反向用 reduce-scatter，每卡 2Ψ+14Ψ/N_d；"
    "ZeRO-3 再切参数，每卡 16Ψ/N_d，前向反向都要 all-gather 参数，通信约 3Ψ，是数据并行的 1.5 倍，"
    "所以按执行顺序预取下一层参数、在单独的 stream 上和计算重叠，用 bucket 合并小消息。"
)


def test_sm2_failure_starts_over_and_success_spreads_out() -> None:
    start = Schedule(key="q02/x", question_id="q02")
    failed = review(start, 1, now=0)
    assert failed.repetitions == 0 and failed.interval_days == 1 and failed.easiness < 2.5
    first, second = review(start, 5, now=0), review(review(start, 5, now=0), 5, now=0)
    third = review(second, 4, now=0)
    assert (first.interval_days, second.interval_days) == (1, 6) and third.interval_days > 6
    assert third.due_at == third.interval_days * DAY
    assert quality(3, 3) == 5 and quality(0, 3) == 0 and quality(2, 3) == 3


def test_the_schedule_moves_as_answers_fail_and_improve(services: Services, engine: Engine, store: Store, clock: FakeClock) -> None:
    weak = engine.start(make_plan(services.bank, "question", "q02"), mode="practice")
    engine.submit(weak.id, "ZeRO 是省显存的。")
    before = store.review("q02/communication-volume")
    assert before is not None and before.last_quality is not None and before.last_quality < 3 and before.interval_days == 1
    assert weak_plan(store, services.bank, now=clock.now + 2 * DAY).questions == ["q02"]  # due tomorrow
    clock.now += 2 * DAY
    engine.retry(weak.id, STRONG)
    after = store.review("q02/communication-volume")
    assert after is not None and after.last_quality is not None
    assert after.last_quality > before.last_quality and after.due_at > before.due_at
    passed = [s for s in store.reviews() if s.question_id == "q02" and (s.last_quality or 0) >= 3]
    assert passed, "the strong answer passes at least one criterion"
    for schedule in passed:  # a criterion failed yesterday and passed today counts its first repetition: due in a day
        assert (schedule.repetitions, schedule.interval_days) == (1, 1.0) and schedule.due_at == clock.now + DAY
    shares = [r["share"] for r in History(store, services.bank).criterion_history() if r["criterion"] == "q02/communication-volume"]
    assert shares and shares[-1] > 0


def test_skipping_schedules_the_whole_question(services: Services, engine: Engine, store: Store) -> None:
    engine.skip(engine.start(make_plan(services.bank, "question", "q07")).id)
    keys = {s.key for s in store.reviews()}
    assert keys == {f"q07/{c.id}" for c in services.bank.get("q07").criteria}
    assert all(s.last_quality == 0 for s in store.reviews())


def test_drill_by_topic_and_progress_command(services: Services) -> None:
    from typer.testing import CliRunner

    from interviewer.faces.cli import app

    runner = CliRunner()
    assert runner.invoke(app, ["drill"], input=":quit\n").exit_code == 1  # nothing to drill yet
    runner.invoke(app, ["interview", "--question", "q12"], input=":skip\n:quit\n")
    drilled = runner.invoke(app, ["drill", "--topic", "gpu-fragmentation"], input=":quit\n")
    assert drilled.exit_code == 0 and "q12" in drilled.stdout
    progress = json.loads(runner.invoke(app, ["progress", "--json"]).stdout)
    assert any(r["topic"] == "gpu-fragmentation" and r["score"] == 0 for r in progress["topics"])
    assert any(c["criterion"].startswith("q12/") for c in progress["criteria"])
    runner.invoke(app, ["interview", "--question", "q12", "--mode", "practice"], input="碎片就是空闲卡分散在不同节点上。\n.\n:quit\n")
    table = runner.invoke(app, ["progress"])
    assert table.exit_code == 0 and "Score per topic over time" in table.stdout and "Weakest criteria over time" in table.stdout


def test_the_pdf_report_renders_to_pages_that_are_not_blank(services: Services, engine: Engine, tmp_path: Path) -> None:
    state = engine.submit(engine.start(make_plan(services.bank, "question", "q02")).id, STRONG).state
    pdf = tmp_path / "report.pdf"
    pdf.write_bytes(reports.to_pdf(reports.build(state)))
    assert pdf.read_bytes().startswith(b"%PDF")
    assert shutil.which("pdftoppm"), "make test installs poppler-utils"
    subprocess.run(["pdftoppm", "-png", "-r", "40", str(pdf), str(tmp_path / "page")], check=True)
    pages = sorted(tmp_path.glob("page*.png"))
    assert pages
    from PIL import Image

    with Image.open(pages[0]) as image:
        dark = sum(image.convert("L").histogram()[:200])
    assert dark > 500, "the first page has text on it"
