"""Accounts and isolation: passwords, whose data each face acts on, and that no handler and no HTTP
endpoint of the app reads or changes another user's interview."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from interviewer.application.accounts import AccountError, Accounts
from interviewer.application.exports import delete_session
from interviewer.errors import InterviewerError
from interviewer.faces.cli import app
from interviewer.faces.web import Handlers, on_loopback, serve
from interviewer.interview.plan import Plan, make_plan
from interviewer.interview.store import LOCAL, SavedEndpoint, Store
from interviewer.provider import describe_endpoint, redacted
from interviewer.services import Services
from interviewer.settings import PROJECT_ROOT, EndpointSettings, Settings

runner = CliRunner()
ANSWER = "先看是前向、反向还是优化器阶段 OOM，再用 torch.cuda.memory_summary 看显存构成，碎片多就调 expandable_segments。"


def test_passwords_are_hashed_and_checked(tmp_path: Path) -> None:
    store = Store(tmp_path / "s.db").open()
    accounts = Accounts(store)
    assert accounts.add("ann", "correct horse battery") is True
    assert accounts.add("bob", "another long one") is False  # not the first
    stored = store.password_hash("ann") or ""
    assert stored.startswith("$argon2id$") and "correct horse" not in stored
    assert (tmp_path / "s.db").read_bytes().find(b"correct horse") == -1
    assert accounts.verify("ann", "correct horse battery")
    assert not accounts.verify("ann", "correct horse battery ")  # one character off
    assert not accounts.verify("nobody", "correct horse battery")
    assert not accounts.verify("ann", "")
    accounts.passwd("ann", "a new password")
    assert accounts.verify("ann", "a new password") and not accounts.verify("ann", "correct horse battery")
    with pytest.raises(AccountError, match="already a user 'ann'"):
        accounts.add("ann", "whatever it is")
    with pytest.raises(AccountError, match="too short"):
        accounts.add("cat", "short")
    with pytest.raises(AccountError, match="cannot be a user name"):
        accounts.add("bad name!", "long enough pw")
    with pytest.raises(AccountError, match="no user 'zed'"):
        accounts.passwd("zed", "long enough pw")


def test_the_first_account_takes_over_the_local_users_interviews(services: Services) -> None:
    engine = services.engine()
    state = engine.start(make_plan(services.bank, "question", "q05"))
    engine.submit(state.id, ANSWER)
    assert services.store.owner_of(state.id) == LOCAL and services.store.reviews(LOCAL)
    accounts = Accounts(services.store)
    assert accounts.add("ann", "correct horse battery")
    assert services.store.owner_of(state.id) == "ann" and services.store.reviews(LOCAL) == [] and services.store.reviews("ann")
    accounts.add("bob", "another long one")
    assert [r.id for r in services.store.sessions("bob")] == [] and [r.id for r in services.store.sessions("ann")] == [state.id]
    assert accounts.acting_user("bob") == "bob"
    with pytest.raises(AccountError, match="2 accounts: say whose data to use with --user"):
        accounts.acting_user(None)
    removed = accounts.remove("ann")
    assert removed == [state.id] and services.store.owner_of(state.id) is None and services.store.reviews("ann") == []


def test_the_command_line_acts_for_one_user(tmp_path: Path) -> None:
    added = runner.invoke(app, ["users", "add", "ann", "--password-stdin"], input="correct horse battery\n")
    assert added.exit_code == 0, added.output
    assert runner.invoke(app, ["users", "add", "bob", "--password-stdin"], input="another long one\n").exit_code == 0
    assert runner.invoke(app, ["users", "list"]).output.split() == ["ann", "bob"]
    script = tmp_path / "answers.jsonl"
    script.write_text('{"question_id": "q05", "answer": "' + ANSWER + '"}\n', encoding="utf-8")
    ambiguous = runner.invoke(app, ["sessions"])
    assert ambiguous.exit_code == 1 and "say whose data to use with --user (ann, bob)" in ambiguous.output
    sat = runner.invoke(app, ["simulate", str(script), "--json", "--user", "ann"])
    assert sat.exit_code == 0, sat.output
    import json

    session_id = json.loads(sat.output)["session_id"]
    assert session_id in runner.invoke(app, ["sessions", "--user", "ann"]).output
    assert session_id not in runner.invoke(app, ["sessions", "--user", "bob"]).output
    for command in (["report", session_id], ["sessions", "--export", session_id], ["sessions", "--delete", session_id]):
        other = runner.invoke(app, [*command, "--user", "bob"])
        assert other.exit_code == 1 and f"no session '{session_id}'" in other.output, command
    assert runner.invoke(app, ["report", session_id, "--user", "ann"]).exit_code == 0
    unknown = runner.invoke(app, ["sessions", "--user", "zed"])
    assert unknown.exit_code == 1 and "no user 'zed': the accounts are ann, bob" in unknown.output
    no_password = runner.invoke(app, ["users", "add", "cat", "--password-stdin"], input="")
    assert no_password.exit_code == 1 and "no password on standard input" in no_password.output
    refused = runner.invoke(app, ["users", "remove", "ann"])
    assert refused.exit_code == 1 and "add --yes" in refused.output
    assert runner.invoke(app, ["users", "remove", "ann", "--yes"]).exit_code == 0
    assert runner.invoke(app, ["users", "list"]).output.split() == ["bob"]


def test_no_handler_reads_or_changes_another_users_interview(tmp_path: Path) -> None:
    handlers = Handlers(Services(Settings(home=tmp_path)))
    ann = handlers.start("question", "q05", None, "practice", "zh", user="ann")
    list(handlers.answer(ann.session_id, ANSWER, user="ann"))
    store = handlers.store
    before = store.export(ann.session_id)
    sid = ann.session_id
    moves: list[Any] = [
        lambda: handlers.resume(sid, user="bob"),
        lambda: handlers.commit(sid, "BOB WAS HERE", user="bob"),
        lambda: handlers.commit_retry(sid, "BOB WAS HERE", user="bob"),
        lambda: list(handlers.follow(sid, 1, user="bob")),
        lambda: list(handlers.answer(sid, "BOB WAS HERE", user="bob")),
        lambda: handlers.skip(sid, user="bob"),
        lambda: handlers.dont_know(sid, user="bob"),
        lambda: handlers.proceed(sid, user="bob"),
        lambda: handlers.current(sid, user="bob"),
    ]
    for move in moves:
        with pytest.raises(InterviewerError, match=f"no session '{sid}'"):
            move()
    assert handlers.clock(sid, user="bob") is not None and "session" not in str(handlers.clock(sid, user="bob"))
    assert handlers.left_behind(sid, user="bob") is None
    assert [r.id for r in handlers.history(user="bob").rows()] == []
    assert [r.id for r in handlers.history(user="ann").rows()] == [sid]
    assert store.export(sid) == before, "another user's moves changed nothing"
    assert handlers.resume(sid, user="ann").session_id == sid


def test_a_deleted_session_takes_its_reports_with_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    served = tmp_path / "served"
    monkeypatch.setenv("GRADIO_TEMP_DIR", str(served))
    handlers = Handlers(Services(Settings(home=tmp_path / "home")))
    view = handlers.start("question", "q05", None, "interview", "en")
    view = handlers.skip(view.session_id)
    while not view.report_file:
        view = handlers.proceed(view.session_id) if view.can_continue else handlers.skip(view.session_id)
    html = Path(view.report_file)
    copy = served / "0123abcd" / html.name  # as Gradio keeps the copy it serves
    copy.parent.mkdir(parents=True)
    copy.write_text("served copy", encoding="utf-8")
    delete_session(handlers.store, handlers.settings.home, view.session_id)
    assert not html.exists() and not copy.exists() and not copy.parent.exists()
    assert handlers.store.owner_of(view.session_id) is None


def test_credentials_in_an_endpoint_url_are_never_shown() -> None:
    url = "http://user:s3cret@127.0.0.1:8000/v1"
    assert redacted(url) == "http://***@127.0.0.1:8000/v1" and redacted("http://127.0.0.1:8000/v1") == "http://127.0.0.1:8000/v1"
    settings = Settings(endpoint=EndpointSettings(base_url=url, model="m"))
    assert describe_endpoint(settings) == "m @ 127.0.0.1:8000"
    from interviewer.faces.doctor import run

    bad = Settings(endpoint=EndpointSettings(base_url="ftp://user:s3cret@host/v1", model="m"))
    assert all("s3cret" not in check.message for check in run(bad) + run(settings))


@pytest.mark.parametrize("host", ["127.0.0.1", "127.0.0.2", "localhost", "::1", "[::1]"])
def test_loopback_addresses(host: str) -> None:
    assert on_loopback(host)


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "192.168.1.5", "example.com"])
def test_addresses_beyond_loopback(host: str) -> None:
    assert not on_loopback(host)


def test_listening_beyond_loopback_needs_a_sign_in(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    services = Services(Settings(home=tmp_path))
    with pytest.raises(InterviewerError, match=r"listening on 0.0.0.0 \(beyond this machine\) needs a sign-in"):
        serve(services, host="0.0.0.0")
    monkeypatch.setenv("GRADIO_SHARE", "true")
    with pytest.raises(InterviewerError, match="a public link needs a sign-in: add an account"):
        serve(services)
    monkeypatch.delenv("GRADIO_SHARE")
    monkeypatch.setenv("GRADIO_SERVER_NAME", "0.0.0.0")
    with pytest.raises(InterviewerError, match="needs a sign-in"):
        serve(services)
    assert not (tmp_path / "index").exists(), "a refused start builds nothing"


def test_app_py_refuses_every_address_without_a_sign_in(tmp_path: Path) -> None:
    env = {**os.environ, "INTERVIEWER_HOME": str(tmp_path), "GRADIO_SERVER_NAME": "0.0.0.0"}
    done = subprocess.run([sys.executable, str(PROJECT_ROOT / "app.py")], env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 1 and done.stderr.strip().splitlines() == [
        "error: listening on 0.0.0.0 (beyond this machine) needs a sign-in: add an account with "
        "`interviewer users add NAME --password-stdin`, or pass --auth user:password"
    ]


# -- over HTTP, as another user's browser or script would ------------------------------------------
def two_accounts(home: Path, database_url: str | None = None) -> Path:
    """A data folder (or the database at ``database_url``) with the accounts ann and bob (their
    passwords as the tests sign in with)."""
    store = Store(home / "sessions.db", database_url).open()
    Accounts(store).add("ann", "correct horse battery")
    Accounts(store).add("bob", "another long one")
    store.close()
    return home


@pytest.fixture(scope="module")
def signed_in_app(tmp_path_factory: pytest.TempPathFactory) -> Any:
    from test_browser import App, free_port

    served = App(two_accounts(tmp_path_factory.mktemp("accounts-home")), free_port()).start()
    yield served
    served.stop()


def test_the_app_asks_for_a_sign_in_and_no_endpoint_crosses_users(signed_in_app: Any) -> None:
    import httpx
    from gradio_client import Client, handle_file

    url = signed_in_app.url
    assert httpx.get(url + "gradio_api/info").status_code in {401, 403}, "nothing is served before the sign-in"
    wrong = httpx.post(url + "login", data={"username": "ann", "password": "wrong password"})
    assert wrong.status_code == 400
    ann = Client(url, auth=("ann", "correct horse battery"), verbose=False)
    started = ann.predict("question", "q05", None, "practice", "en", "", api_name="/start")
    sid = started[0]
    ann.predict(sid, "ALPHA answer: look at memory_summary first", "", api_name="/submit")
    seen = Store(signed_in_app.home / "sessions.db").open()
    deadline = time.monotonic() + 60  # ann's turn is decided and graded in the background: wait until it has settled
    while not all(t.status == "graded" and t.decision is not None for t in seen.turns(sid)) and time.monotonic() < deadline:
        time.sleep(0.1)
    before = seen.export(sid)
    bob = Client(url, auth=("bob", "another long one"), verbose=False)
    endpoints = bob.view_api(print_info=False, return_format="dict")["named_endpoints"]
    calls = {  # each takes the session id first (the tab's own position and playing turn are not API inputs)
        "/submit": [sid, "BOB WAS HERE", ""],
        "/retry": [sid, "BOB WAS HERE", ""],
        "/follow": [sid],
        "/follow_retry": [sid],
        "/skip": [sid],
        "/dont_know": [sid],
        "/next_round": [sid],
        "/resume": [sid],
        "/transcribe": [sid, handle_file(str(silence(signed_in_app.home / "silence.wav"))), "typed"],
    }
    assert set(calls) | {"/start", "/check_model"} == set(endpoints), "an endpoint this test does not call as another user"
    for name, data in calls.items():
        if name.startswith("/follow"):  # plays only the turn this tab's own submit stored: none
            assert "ALPHA" not in str(bob.predict(*data, api_name=name)), name
            continue
        with pytest.raises(Exception, match=f"no session '{sid}'"):
            bob.predict(*data, api_name=name)
    # a Start that names ann's interview as the one on screen leaves it alone
    bob.predict("question", "q05", None, "practice", "en", sid, api_name="/start")
    assert seen.export(sid) == before, "another user's calls changed nothing"
    assert [r.id for r in seen.sessions("ann")] == [sid] and sid not in [r.id for r in seen.sessions("bob")]


def silence(path: Path) -> Path:
    import wave

    with wave.open(str(path), "wb") as out:
        out.setnchannels(1)
        out.setsampwidth(2)
        out.setframerate(16000)
        out.writeframes(bytes(16000))
    return path


def test_accounts_endpoints_and_pages_are_kept_per_user_on_either_engine(store: Store) -> None:
    """The store's side of accounts, on SQLite and on PostgreSQL: the first account takes the local
    user's data, a user's endpoint and key are theirs, a removal takes everything the user owns."""
    plan = Plan("question", "q05", ["q05"])
    local = store.create_session("interview", "en", plan, "offline", 2, now=1.0)
    assert store.add_user("ann", "$argon2id$hash-a", now=2.0) and not store.add_user("ann", "$argon2id$again", now=3.0)
    assert store.add_user("bob", "$argon2id$hash-b", now=3.0)
    assert store.users() == ["ann", "bob"] and store.owner_of(local.id) == "ann"
    for n in range(5):
        store.create_session("interview", "en", plan, "offline", 2, now=10.0 + n, owner="bob")
    assert store.count_sessions("bob") == 5 and store.count_sessions("ann") == 1
    pages = [s.created_at for s in store.sessions("bob", limit=2)] + [s.created_at for s in store.sessions("bob", limit=2, offset=2)]
    assert pages == [14.0, 13.0, 12.0, 11.0] and len(store.sessions("bob")) == 5
    store.save_endpoint("bob", SavedEndpoint("http://127.0.0.1:9/v1", "m", "sk-bob"), now=4.0)
    store.save_endpoint("bob", SavedEndpoint("http://127.0.0.1:9/v1", "m2", "sk-bob2"), now=5.0)
    assert store.saved_endpoint("bob") == SavedEndpoint("http://127.0.0.1:9/v1", "m2", "sk-bob2")
    assert store.saved_endpoint("ann") is None and "sk-bob2" not in repr(store.saved_endpoint("bob"))
    removed = store.remove_user("bob")
    assert removed is not None and len(removed) == 5 and store.count_sessions("bob") == 0
    assert store.saved_endpoint("bob") is None and store.users() == ["ann"] and store.remove_user("bob") is None
    assert store.set_password("ann", "$argon2id$new") and store.password_hash("ann") == "$argon2id$new"


@pytest.mark.parametrize(
    ("url", "said"),
    [
        ("postgresql://ann:hunter22@127.0.0.1:9/interviews", "cannot be reached"),  # nothing listens on port 9
        ("mysql://ann:hunter22@127.0.0.1/interviews", "is not a PostgreSQL URL"),
    ],
)
def test_a_database_url_that_cannot_serve_is_one_line_without_its_password(
    url: str, said: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("INTERVIEWER_HOME", str(tmp_path))
    monkeypatch.setenv("INTERVIEWER_DATABASE_URL", url)
    result = runner.invoke(app, ["sessions"])
    assert result.exit_code == 1 and "Traceback" not in result.output
    assert result.stderr.startswith("error: ") and result.stderr.count("\n") == 1 and said in result.stderr
    assert "hunter22" not in result.output and "***@127.0.0.1" in result.stderr
    assert not (tmp_path / "sessions.db").exists()  # no SQLite file made instead
