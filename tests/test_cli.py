from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from interviewer.faces.cli import app

runner = CliRunner()


def test_bank_json_lists_every_question_with_its_rubric() -> None:
    result = runner.invoke(app, ["bank", "--json"])
    assert result.exit_code == 0, result.output
    bank = json.loads(result.stdout)
    assert [q["id"] for q in bank] == [f"q{n:02d}" for n in range(1, 17)]
    first = bank[0]
    assert first["round"] == 1 and first["question"]["zh"] and first["question"]["en"]
    assert abs(sum(c["weight"] for c in first["criteria"]) - 1.0) < 0.01
    assert all({"id", "weight"} <= set(c) for c in first["criteria"])
    assert 2 <= len(first["followups"]) <= 4


def test_index_then_search_json(tmp_path: Path) -> None:
    built = runner.invoke(app, ["index"])
    assert built.exit_code == 0, built.output
    assert "passages" in built.stdout and "added" in built.stdout
    again = runner.invoke(app, ["index"])
    assert "0 passages embedded" in again.stdout

    found = runner.invoke(app, ["search", "ZeRO-3 通信怎么和计算重叠", "--k", "3", "--json"])
    assert found.exit_code == 0, found.output
    results = json.loads(found.stdout)
    assert len(results) == 3
    assert all({"source", "text", "score"} <= set(r) for r in results)
    assert any(r["source"].startswith("zero.md#") for r in results)


def test_index_add_records_a_notes_folder(tmp_path: Path, _isolated_home: Path) -> None:
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "rdma.md").write_text("# RDMA\n## GPUDirect\nGPUDirect RDMA lets the NIC read GPU memory.\n")
    result = runner.invoke(app, ["index", "--add", str(notes)])
    assert result.exit_code == 0, result.output
    assert str(notes) in (_isolated_home / "settings.toml").read_text()
    found = runner.invoke(app, ["search", "GPUDirect RDMA NIC", "--json"])
    assert "notes/rdma.md#gpudirect" in [r["source"] for r in json.loads(found.stdout)]


@pytest.mark.parametrize(
    ("args", "env", "message"),
    [
        (["search", "  "], {}, "the query is empty"),
        (["bank"], {"INTERVIEWER_BANK_DIR": "/nonexistent/rubrics"}, "does not exist"),
        (["index", "--add", "/nonexistent/notes"], {}, "not a folder"),
        (["index"], {"INTERVIEWER_INDEX__EMBEDDING": "openai"}, "needs OPENAI_API_KEY"),
        (["bank"], {"INTERVIEWER_RETRIEVAL__K": "many"}, "invalid setting"),
    ],
    ids=["empty-query", "missing-bank", "missing-folder", "embedding-without-key", "bad-setting"],
)
def test_errors_are_one_line_and_a_non_zero_exit(args: list[str], env: dict[str, str], message: str) -> None:
    result = runner.invoke(app, args, env=env)
    assert result.exit_code == 1
    assert message in result.stderr
    assert "Traceback" not in result.output
    assert result.stderr.strip().count("\n") == 0


def test_grade_writes_one_line_per_input_and_reports_bad_lines(tmp_path: Path) -> None:
    source = tmp_path / "answers.jsonl"
    lines = [
        json.dumps({"id": "a", "question_id": "q02", "answer": "ZeRO-1 切分优化器状态，ZeRO-2 再切梯度，ZeRO-3 再切参数。"}),
        "{not json",
        json.dumps({"id": "c", "answer": "no question here"}),
        json.dumps({"id": "d", "question_id": "q99", "answer": "x"}),
        "",
        json.dumps({"id": "e", "question": "什么是链表", "answer": "用指针串起来的结点", "reference": "链表是用指针连接结点的线性表"}),
    ]
    source.write_text("\n".join(lines) + "\n", encoding="utf-8")
    out = tmp_path / "graded.jsonl"
    result = runner.invoke(app, ["grade", str(source), "--out", str(out), "--grader", "offline"])
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert len(rows) == 5
    assert rows[0]["id"] == "a" and rows[0]["answer"].startswith("ZeRO-1") and 0 <= rows[0]["grade"]["score"] <= 10
    assert {"score", "criteria", "feedback", "grader"} <= set(rows[0]["grade"])
    assert rows[1]["line"] == 2 and "not valid JSON" in rows[1]["error"]
    assert rows[2]["id"] == "c" and "question_id" in rows[2]["error"]
    assert rows[3]["id"] == "d" and "q99" in rows[3]["error"]
    assert rows[4]["id"] == "e" and rows[4]["grade"]["grader"] == "offline-reference"
    assert "3 line(s) could not be graded" in result.stderr


def test_grade_reads_standard_input() -> None:
    line = json.dumps({"question_id": "q05", "answer": "我不知道"})
    result = runner.invoke(app, ["grade", "-"], input=line + "\n")
    assert result.exit_code == 0
    assert json.loads(result.stdout)["grade"]["score"] == 0


def test_eval_prints_agreement_figures(tmp_path: Path) -> None:
    source = tmp_path / "labelled.jsonl"
    good = "ZeRO-1 切分优化器状态，每卡 4Ψ+12Ψ/N_d；ZeRO-2 再切梯度；ZeRO-3 再切参数，通信约 3Ψ，是数据并行的 1.5 倍，靠预取和重叠隐藏。"
    rows = [
        {"question_id": "q02", "kind": "good", "score": 9, "answer": good},
        {"question_id": "q02", "kind": "bad", "score": 1, "answer": "ZeRO 是个框架。"},
        {"question_id": "q02", "kind": "bad", "score": 0, "answer": "我不知道"},
        {"question_id": "q02", "kind": "wrong", "score": 2, "answer": "ZeRO-1 已经切分参数，ZeRO-3 才切分优化器状态，这样显存就省下来了。"},
    ]
    source.write_text("\n".join(json.dumps(r, ensure_ascii=False) for r in rows), encoding="utf-8")
    result = runner.invoke(app, ["eval", str(source), "--json"])
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    assert summary["graded"] == 4
    assert {"pearson", "spearman", "qwk", "mae", "by_kind"} <= set(summary)
    assert summary["by_kind"]["good"]["mean_score"] > summary["by_kind"]["bad"]["mean_score"]
    named = {kind: row["misconception_named"] for kind, row in summary["by_kind"].items()}
    assert named == {"good": 0, "bad": 0, "wrong": 1}  # how many answers of each kind had an error named


def test_the_llm_grader_without_an_endpoint_says_what_to_set() -> None:
    result = runner.invoke(app, ["grade", "-", "--grader", "llm"], input="")
    assert result.exit_code == 1 and "OPENAI_BASE_URL" in result.stderr
    assert runner.invoke(app, ["grade", "-", "--grader", "magic"], input="").exit_code == 1


def test_simulate_and_list_sessions(tmp_path: Path) -> None:
    script = tmp_path / "candidate.jsonl"
    lines = [
        {"question_id": "q06", "answer": "Grid、Block、Thread 三级；32 个线程一个 warp，同一 warp 走不同分支会串行执行。",
         "followup_answers": ["用 warp 级别一致的条件，让分支按 warp 对齐，或者改成无分支的 select。"]},
        {"question_id": "q07", "answer": "寄存器最快，shared memory 在 SM 上，32 个 bank，padding 可以避免冲突。"},
    ]  # fmt: skip
    script.write_text("\n".join(json.dumps(x, ensure_ascii=False) for x in lines), encoding="utf-8")
    result = runner.invoke(app, ["simulate", str(script), "--json"])
    assert result.exit_code == 0, result.output
    outcome = json.loads(result.stdout)
    assert {"session_id", "overall", "rounds", "questions"} <= set(outcome)
    assert [r["round"] for r in outcome["rounds"]] == [2]
    scores = {q["id"]: q for q in outcome["questions"]}
    assert scores["q06"]["score"] > 0 and scores["q07"]["score"] > 0
    assert scores["q08"]["skipped"] and scores["q08"]["score"] == 0
    assert len(scores["q06"]["followups"]) <= 1

    listed = json.loads(runner.invoke(app, ["sessions", "--json"]).stdout)
    assert [s["id"] for s in listed] == [outcome["session_id"]]
    assert listed[0]["status"] == "finished" and listed[0]["overall"] == outcome["overall"]
    exported = json.loads(runner.invoke(app, ["sessions", "--export", outcome["session_id"]]).stdout)
    assert exported["turns"][0]["answer"].startswith("Grid")
    assert runner.invoke(app, ["sessions", "--delete", outcome["session_id"]]).exit_code == 0
    assert json.loads(runner.invoke(app, ["sessions", "--json"]).stdout) == []


def test_simulate_rejects_a_bad_script(tmp_path: Path) -> None:
    script = tmp_path / "bad.jsonl"
    script.write_text('{"question_id": "q42", "answer": "x"}\n', encoding="utf-8")
    result = runner.invoke(app, ["simulate", str(script)])
    assert result.exit_code == 1 and "q42" in result.stderr


def test_the_terminal_interview_runs_from_typed_input() -> None:
    typed = "\n".join(
        [
            "Grid、Block、Thread 三级结构，32 个线程组成一个 warp。",
            "同一个 warp 里走不同分支会串行执行。",
            ".",
            ":quit",
        ]
    )
    result = runner.invoke(app, ["interview", "--question", "q06", "--mode", "practice"], input=typed + "\n")
    assert result.exit_code == 0, result.output
    assert "[q06]" in result.stdout and "/10" in result.stdout  # practice mode shows the grade at once
    assert "追问" in result.stdout and "interview --resume" in result.stdout
    listed = json.loads(runner.invoke(app, ["sessions", "--json"]).stdout)
    assert listed[0]["answered"] == 1 and listed[0]["status"] == "active"

    resumed = runner.invoke(app, ["interview", "--resume", listed[0]["id"]], input=":idk\n")
    assert resumed.exit_code == 0, resumed.output
    assert "追问" in resumed.stdout and "面试结束" in resumed.stdout
    assert json.loads(runner.invoke(app, ["sessions", "--json"]).stdout)[0]["status"] == "finished"


def test_sharing_needs_a_login() -> None:
    result = runner.invoke(app, ["serve", "--share"])
    assert result.exit_code == 1 and "--auth" in result.stderr
    bad = runner.invoke(app, ["serve", "--auth", "nopassword"])
    assert bad.exit_code == 1 and "user:password" in bad.stderr


def test_the_bank_command_builds_no_index_no_store_and_no_grader(monkeypatch: pytest.MonkeyPatch) -> None:
    import os

    from interviewer.grading.offline import OfflineGrader

    def refuse(*_: object, **__: object) -> None:
        raise AssertionError("`interviewer bank` built a grader")

    monkeypatch.setattr(OfflineGrader, "__init__", refuse)
    listed = CliRunner().invoke(app, ["bank", "--json"])
    assert listed.exit_code == 0, listed.output
    assert len(json.loads(listed.stdout)) == 16
    home = Path(os.environ["INTERVIEWER_HOME"])
    assert not (home / "index").exists() and not (home / "sessions.db").exists()
