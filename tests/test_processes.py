"""Several app processes behind one address share one store: a candidate who starts on one process
continues on another, signed in, and sees only their own interviews on both."""

from __future__ import annotations

from typing import Any

import pytest

from interviewer.interview.store import Store


@pytest.fixture(scope="module")
def two_processes(tmp_path_factory: pytest.TempPathFactory) -> Any:
    from test_accounts import two_accounts
    from test_browser import App, free_port

    home = two_accounts(tmp_path_factory.mktemp("shared-home"))
    first = App(home, free_port()).start()
    second = App(home, free_port()).start()
    yield first, second, home
    first.stop()
    second.stop()


def test_a_candidate_who_starts_on_one_process_continues_on_another(two_processes: Any) -> None:
    from gradio_client import Client

    first, second, home = two_processes
    on_first = Client(first.url, auth=("ann", "correct horse battery"), verbose=False)
    started = on_first.predict("question", "q05", None, "practice", "en", "", api_name="/start")
    sid = started[0]
    on_first.predict(sid, "ALPHA: first look at torch.cuda.memory_summary to see what fills the memory", "", api_name="/submit")
    on_second = Client(second.url, auth=("ann", "correct horse battery"), verbose=False)
    resumed = on_second.predict(sid, api_name="/resume")
    assert resumed[0] == sid and "ALPHA" in str(resumed[1]), "the second process shows the interview the first one stored"
    on_second.predict(sid, "BRAVO: then set expandable_segments if fragmentation is the cause", "", api_name="/submit")
    answers = [t.answer or "" for t in Store(home / "sessions.db").open().turns(sid)]
    assert any("ALPHA" in a for a in answers) and any("BRAVO" in a for a in answers)
    bob = Client(second.url, auth=("bob", "another long one"), verbose=False)
    with pytest.raises(Exception, match=f"no session '{sid}'"):
        bob.predict(sid, api_name="/resume")
