"""Several app processes behind one address share one store: a candidate who starts on one process
continues on another, signed in, and sees only their own interviews on both. Run twice: on one
SQLite file, and as a server deployment is run (one PostgreSQL, one Chroma server)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from interviewer.interview.store import Store


@pytest.fixture(params=["sqlite", "postgresql+chroma"])
def two_processes(request: pytest.FixtureRequest, tmp_path: Path) -> Any:
    from test_accounts import two_accounts
    from test_browser import App, free_port

    env: dict[str, str] = {}
    if request.param == "postgresql+chroma":
        env = {"INTERVIEWER_DATABASE_URL": request.getfixturevalue("postgres").new_database()}
        env["INTERVIEWER_CHROMA_URL"] = request.getfixturevalue("chroma_url")
        env["INTERVIEWER_INDEX__COLLECTION"] = "two-processes"  # the server's other collections are other tests'
    url = env.get("INTERVIEWER_DATABASE_URL")
    home = two_accounts(tmp_path / "first-home", url)
    # with the server deployment each process has a data folder of its own: nothing is shared on disk
    second_home = tmp_path / "second-home" if url else home
    first = App(home, free_port(), env).start()
    second = App(second_home, free_port(), env).start()
    yield first, second, Store(home / "sessions.db", url)
    first.stop()
    second.stop()


def test_a_candidate_who_starts_on_one_process_continues_on_another(two_processes: Any) -> None:
    from gradio_client import Client

    first, second, store = two_processes
    on_first = Client(first.url, auth=("ann", "correct horse battery"), verbose=False)
    started = on_first.predict("question", "q05", None, "practice", "en", "", api_name="/start")
    sid = started[0]
    on_first.predict(sid, "ALPHA: first look at torch.cuda.memory_summary to see what fills the memory", "", api_name="/submit")
    on_second = Client(second.url, auth=("ann", "correct horse battery"), verbose=False)
    resumed = on_second.predict(sid, api_name="/resume")
    assert resumed[0] == sid and "ALPHA" in str(resumed[1]), "the second process shows the interview the first one stored"
    on_second.predict(sid, "BRAVO: then set expandable_segments if fragmentation is the cause", "", api_name="/submit")
    answers = [t.answer or "" for t in store.open().turns(sid)]
    assert any("ALPHA" in a for a in answers) and any("BRAVO" in a for a in answers)
    bob = Client(second.url, auth=("bob", "another long one"), verbose=False)
    with pytest.raises(Exception, match=f"no session '{sid}'"):
        bob.predict(sid, api_name="/resume")
