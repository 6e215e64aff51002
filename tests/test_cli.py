from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from interviewer.cli import app

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
