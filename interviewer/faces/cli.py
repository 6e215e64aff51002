"""The ``interviewer`` command. Domain errors and what the disk refuses become one line on stderr
and exit code 1."""

from __future__ import annotations

import functools
import json
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

import typer
from pydantic import ValidationError
from rich import box
from rich.console import Console
from rich.table import Table

from interviewer.errors import InterviewerError, StorageError

if TYPE_CHECKING:
    from interviewer.services import Services

app = typer.Typer(
    name="interviewer",
    help="A mock-interview coach for AI-Infra engineers.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
console = Console()
F = TypeVar("F", bound=Callable[..., Any])


@contextmanager
def one_line_errors() -> Iterator[None]:
    """The product's errors, and what the disk refuses (read-only, full, no permission), as one
    clear line on stderr and exit code 1, not a traceback. A SystemExit, so that ``python app.py``
    outside any command exits the same way."""
    try:
        yield
    except InterviewerError as exc:
        message = str(exc)
    except OSError as exc:
        message = str(StorageError(exc))
    except ValidationError as exc:
        first = exc.errors()[0]
        message = f"invalid setting {'.'.join(str(p) for p in first['loc'])}: {first['msg']}"
    else:
        return
    typer.echo(f"error: {message}", err=True)
    raise SystemExit(1)


def clean_errors(command: F) -> F:
    @functools.wraps(command)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        with one_line_errors():
            return command(*args, **kwargs)

    return wrapper  # type: ignore[return-value]


def _services() -> Services:
    """The composition root for one command (each part is built when the command first uses it)."""
    from interviewer.services import Services
    from interviewer.settings import Settings

    return Services(Settings())


UserOption = Annotated[str | None, typer.Option("--user", help="Whose interviews: default the only account, or the local user.")]


def _acting(services: Services, user: str | None) -> str:
    """Whom the command acts for (see ``Accounts.acting_user``)."""
    from interviewer.application.accounts import Accounts

    return Accounts(services.store).acting_user(user)


def _owned(services: Services, owner: str, session_id: str) -> str:
    """The session id, once it is known to be ``owner``'s (another user's reads as no such session)."""
    if services.store.owner_of(session_id) != owner:
        raise InterviewerError(f"no session '{session_id}' (see `interviewer sessions`)")
    return session_id


@app.command()
@clean_errors
def index(
    add: Annotated[list[Path] | None, typer.Option("--add", help="Also index this folder of Markdown notes, from now on.")] = None,
    rebuild: Annotated[bool, typer.Option(help="Drop the index and embed everything again.")] = False,
) -> None:
    """Build or update the knowledge index (only changed files are embedded again)."""
    from interviewer.settings import add_knowledge_dir

    for folder in add or []:
        if not folder.is_dir():
            raise InterviewerError(f"not a folder: {folder}")
        console.print(f"Added {folder} to {add_knowledge_dir(folder)}")
    services = _services()
    settings = services.settings
    report = services.index.build(rebuild=rebuild, progress=sys.stderr.isatty())
    changes = f"{len(report.added)} added, {len(report.updated)} updated, {len(report.removed)} removed, {report.unchanged} unchanged"
    console.print(
        f"Index at {settings.index_dir}: {report.passages} passages; files {changes}; "
        f"{report.embedded} passages embedded in {report.seconds:.2f} s"
    )


@app.command()
@clean_errors
def bank(as_json: Annotated[bool, typer.Option("--json", help="Print the bank as a JSON array.")] = False) -> None:
    """List the question bank: questions, rubric criteria and follow-ups."""
    loaded = _services().bank
    if as_json:
        items = [
            {
                "id": q.id,
                "round": q.round,
                "version": q.version,
                "topics": q.topics,
                "time_guide_min": q.time_guide_min,
                "answer_format": q.answer_format,
                "question": q.question.model_dump(),
                "criteria": [
                    {
                        "id": c.id,
                        "weight": c.weight,
                        "description": c.description.model_dump(),
                        "max_score": c.max_score,
                    }
                    for c in q.criteria
                ],
                "followups": [
                    {
                        "id": f.id,
                        "targets": f.targets,
                        "from_seed": f.from_seed,
                        "question": f.question.model_dump(),
                        "criteria": [{"id": c.id, "weight": c.weight} for c in f.criteria],
                        "references": f.references,
                    }
                    for f in q.followups
                ],
                "references": q.references,
            }
            for q in loaded.questions
        ]
        typer.echo(json.dumps(items, ensure_ascii=False, indent=2))
        return
    table = Table(title="Question bank")
    for column in ("id", "round", "question", "criteria", "follow-ups"):
        # the question wraps whole at any width (a long CJK run folds): never cut with an ellipsis
        table.add_column(column, overflow="fold", ratio=1 if column == "question" else None, no_wrap=column != "question")
    for q in loaded.questions:
        table.add_row(q.id, str(q.round), q.question.zh, str(len(q.criteria)), str(len(q.followups)))
    console.print(table)


@app.command()
@clean_errors
def search(
    query: Annotated[str, typer.Argument(help="What to look for, in Chinese, English or both.")],
    k: Annotated[int, typer.Option("--k", min=1, max=50, help="How many passages.")] = 5,
    as_json: Annotated[bool, typer.Option("--json", help="Print a JSON array.")] = False,
) -> None:
    """Search the knowledge base (hybrid: dense + BM25), building the index first if needed."""
    if not query.strip():
        raise InterviewerError("the query is empty")
    services = _services()
    services.index.ensure_current(progress=sys.stderr.isatty())
    results = services.retriever.search(query, k=k)
    if as_json:
        typer.echo(json.dumps([r.as_dict() for r in results], ensure_ascii=False, indent=2))
        return
    if not results:
        console.print("No passage matches this query.")
    for rank, result in enumerate(results, start=1):
        console.print(f"[bold]{rank}. {result.source}[/bold]  (score {result.score:.4f})  {result.title}")
        snippet = result.text.replace("\n", " ")
        console.print(f"   {snippet[:240]}{'…' if len(snippet) > 240 else ''}", markup=False)


GraderChoice = typer.Option("--grader", help="offline, llm, or auto (the LLM when one is configured).")


@contextmanager
def _input(path: str | None, command: str) -> Iterator[Any]:
    """The JSONL to read, as bytes: each line is decoded on its own, so one line of invalid UTF-8
    is that line's error. No file at a terminal would wait, silently, for typed JSON."""
    if path is None and sys.stdin.isatty():
        raise InterviewerError(
            f"{command} reads JSONL answers from a file or a pipe: `interviewer {command} answers.jsonl`, "
            f"or `... | interviewer {command} -`; `interviewer {command} --help` lists the fields"
        )
    if path is None or path == "-":
        yield sys.stdin.buffer
        return
    file = Path(path)
    if not file.is_file():
        raise InterviewerError(f"no such file: {path}")
    with file.open("rb") as handle:
        yield handle


def _count_lines(path: str | None) -> int | None:
    if path is None or path == "-":
        return None
    with Path(path).open("rb") as handle:
        return sum(1 for line in handle if line.strip())


@app.command()
@clean_errors
def grade(
    source: Annotated[str | None, typer.Argument(help="JSONL of answers, or - for standard input (read when piped).")] = None,
    grader: Annotated[str, GraderChoice] = "auto",
    out: Annotated[Path | None, typer.Option("--out", help="Write the graded JSONL here.")] = None,
) -> None:
    """Grade answers: each line has answer and question_id (or question, optionally reference)."""
    from rich.progress import Progress

    from interviewer.faces.batch import grade_line, read_lines

    failed = 0
    with _input(source, "grade") as handle:
        total = _count_lines(source)
        services = _services()
        chosen = services.rubric_grader(grader)
        with (
            out.open("w", encoding="utf-8") if out else nullcontext(sys.stdout) as target,
            Progress(console=Console(stderr=True), disable=not sys.stderr.isatty(), transient=True) as bar,
        ):
            task = bar.add_task("Grading", total=total)
            for number, value, error in read_lines(handle):
                result = {"line": number, "error": error} if value is None else grade_line(services, chosen, number, value)
                failed += "error" in result
                target.write(json.dumps(result, ensure_ascii=False) + "\n")
                bar.advance(task)
    if failed:
        typer.echo(f"{failed} line(s) could not be graded; see their error field", err=True)


@app.command(name="eval")
@clean_errors
def eval_(
    source: Annotated[str, typer.Argument(help="Labelled JSONL: answer, question_id or question, score, kind.")],
    grader: Annotated[str, GraderChoice] = "auto",
    as_json: Annotated[bool, typer.Option("--json", help="Print the figures as JSON.")] = False,
) -> None:
    """Measure the grader against expert scores: Pearson, Spearman, QWK, MAE, mean per kind."""
    from rich.progress import Progress

    from interviewer.faces.evaluation import evaluate

    services = _services()
    chosen = services.rubric_grader(grader)
    with _input(source, "eval") as handle, Progress(console=Console(stderr=True), disable=not sys.stderr.isatty(), transient=True) as bar:
        task = bar.add_task("Grading", total=_count_lines(source))
        report = evaluate(services, chosen, handle, progress=lambda: bar.advance(task))
    if reason := report.why_nothing_compared():
        raise InterviewerError(f"{source}: {reason}")
    summary = report.summary()
    if as_json:
        typer.echo(json.dumps(summary, ensure_ascii=False, indent=2))
        return
    console.print(
        f"{summary['graded']} graded ({summary['errors']} errors): Pearson {summary['pearson']}, "
        f"Spearman {summary['spearman']}, QWK {summary['qwk']}, MAE {summary['mae']}, "
        f"Spearman with length partialled out {summary['spearman_length_partialled']}"
    )
    table = Table(title="Mean score per kind")
    for column in ("kind", "n", "grader", "expert", "max", "misconception named"):
        table.add_column(column)
    for kind, row in summary["by_kind"].items():
        cells = (row["n"], row["mean_score"], row["mean_expert"], row["max_score"], row["misconception_named"])
        table.add_row(kind, *map(str, cells))
    console.print(table)


@app.command()
@clean_errors
def interview(
    round_: Annotated[int | None, typer.Option("--round", min=1, max=4, help="Play one round only (4: inference serving).")] = None,
    all_rounds: Annotated[
        bool, typer.Option("--all-rounds", help="The full loop with round 4 (inference serving) after the three.")
    ] = False,
    question: Annotated[str | None, typer.Option("--question", help="Drill one question, e.g. q08.")] = None,
    topic: Annotated[str | None, typer.Option("--topic", help="Drill the questions of one topic.")] = None,
    weak: Annotated[bool, typer.Option("--weak", help="Drill your weak points: the lowest-scored questions so far.")] = False,
    mode: Annotated[str, typer.Option("--mode", help="interview (scores at the round's end) or practice.")] = "interview",
    lang: Annotated[str, typer.Option("--lang", help="zh or en.")] = "zh",
    resume: Annotated[str | None, typer.Option("--resume", help="Continue a saved session.")] = None,
    user: UserOption = None,
) -> None:
    """A mock interview in the terminal: the three rounds, one round, or a drill."""
    from interviewer.application.plans import select_plan

    if mode not in {"interview", "practice"}:
        raise InterviewerError("--mode must be interview or practice")
    if lang not in {"zh", "en"}:
        raise InterviewerError("--lang must be zh or en")
    services = _services()
    owner = _acting(services, user)
    engine = services.engine()
    if resume:
        state = engine.resume(_owned(services, owner, resume))
    else:
        choices: list[tuple[str, str | int | None]] = [("weak", None), ("question", question), ("topic", topic), ("round", round_)]
        wanted = [(k, v) for k, v in choices if (weak if k == "weak" else v is not None)]
        kind, value = wanted[0] if wanted else ("full", "all" if all_rounds else None)
        plan = select_plan(services.store, services.bank, kind, value, owner=owner)
        state = engine.start(
            plan,
            mode=mode,
            lang="en" if lang == "en" else "zh",
            max_followups=services.settings.interview.max_followups,
            owner=owner,
        )
    _run_terminal(services, state)


def _run_terminal(services: Services, state: Any) -> None:
    from interviewer.application.labels import grader_line
    from interviewer.faces.terminal import run

    console.print(f"[dim]{grader_line(services.settings, state.lang)}[/dim]")
    from interviewer.application.grading import GradingWorker

    engine = services.engine()
    # with a model grader the grades are computed alongside the interview; offline they take milliseconds
    worker = None if engine.grades_at_once else GradingWorker(lambda _turn: engine, services.settings.llm.grading_workers)
    run(engine, state, console, interviewer=services.interviewer, worker=worker, grade_wait_s=services.settings.llm.grade_budget_s + 5)


@app.command()
@clean_errors
def simulate(
    answers: Annotated[Path, typer.Argument(help="JSONL: question_id, answer, optional followup_answers.")],
    lang: Annotated[str, typer.Option("--lang", help="zh or en.")] = "zh",
    as_json: Annotated[bool, typer.Option("--json", help="Print the result as JSON.")] = False,
    user: UserOption = None,
) -> None:
    """A scripted candidate sits the interview; prints the session id and the scores."""
    from interviewer.faces.simulate import read_script, result, run

    if lang not in {"zh", "en"}:
        raise InterviewerError("--lang must be zh or en")
    if not answers.is_file():
        raise InterviewerError(f"no such file: {answers}")
    services = _services()
    script = read_script(answers.read_text(encoding="utf-8").splitlines(), services.bank)
    owner = _acting(services, user)
    state = run(services.engine(), script, "en" if lang == "en" else "zh", services.settings.interview.max_followups, owner=owner)
    outcome = result(state)
    if as_json:
        typer.echo(json.dumps(outcome, ensure_ascii=False, indent=2))
        return
    console.print(f"session {outcome['session_id']}: overall {outcome['overall']}/10")
    for r in outcome["rounds"]:
        console.print(f"  round {r['round']}: {r['score']}")
    for q in outcome["questions"]:
        console.print(f"    {q['id']}: {q['score']}")


@app.command()
@clean_errors
def sessions(
    as_json: Annotated[bool, typer.Option("--json", help="Print as JSON.")] = False,
    export: Annotated[str | None, typer.Option("--export", help="Print one session, all its turns and grades, as JSON.")] = None,
    delete: Annotated[str | None, typer.Option("--delete", help="Delete one session, its answers and its reports.")] = None,
    page: Annotated[int, typer.Option("--page", min=1, help="Which page of sessions, newest first.")] = 1,
    user: UserOption = None,
) -> None:
    """List, export or delete saved sessions."""
    from interviewer.application.exports import delete_session
    from interviewer.application.history import PAGE, History

    services = _services()
    store = services.store
    owner = _acting(services, user)
    if export:
        typer.echo(json.dumps(store.export(_owned(services, owner, export)), ensure_ascii=False, indent=2))
        return
    if delete:
        delete_session(store, services.settings.home, _owned(services, owner, delete))
        console.print(f"Deleted session {delete}, its answers and its reports.")
        return
    history = History(store, services.bank, owner, limit=PAGE, offset=(page - 1) * PAGE)
    rows = history.rows()
    if as_json:
        typer.echo(json.dumps([r.as_dict() for r in rows], ensure_ascii=False, indent=2))
        return
    table = Table(
        title="Sessions", box=box.SIMPLE_HEAD, pad_edge=False, collapse_padding=True
    )  # no column rules: 80 columns hold every value whole
    # `report` and `--resume` need the id whole: it never wraps or shrinks; the other columns give way
    table.add_column("id", no_wrap=True, min_width=max((len(r.id) for r in rows), default=2))
    for column in ("started", "status", "mode", "plan", "answered", "overall"):
        table.add_column(column, overflow="fold")  # wrapped, never cut with an ellipsis
    for r in rows:
        table.add_row(r.id, r.started.strftime("%m-%d %H:%M"), r.status, r.mode, r.plan, f"{r.answered}/{r.questions}", str(r.overall))
    console.print(table)
    pages = max(1, -(-history.total // PAGE))
    if pages > 1:
        console.print(f"page {page} of {pages} ({history.total} sessions); --page N for another")


@app.command()
@clean_errors
def serve(
    share: Annotated[bool, typer.Option(help="Share beyond this machine (a public link); needs a sign-in.")] = False,
    auth: Annotated[str | None, typer.Option(help="user:password that may sign in, beside the accounts.")] = None,
    host: Annotated[str | None, typer.Option(help="Address to listen on (default 127.0.0.1); beyond loopback needs a sign-in.")] = None,
) -> None:
    """Serve the app on 127.0.0.1 (GRADIO_SERVER_NAME / GRADIO_SERVER_PORT / GRADIO_SHARE are honoured).
    With accounts (`interviewer users add`), everyone signs in and sees only their own interviews."""
    import os

    os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
    from interviewer.faces.web import serve as serve_app

    credentials = None
    if auth is not None:
        user, _, password = auth.partition(":")
        if not user or not password:
            raise InterviewerError("--auth must be user:password")
        credentials = (user, password)
    serve_app(_services(), host=host, share=share, credentials=credentials, progress=sys.stderr.isatty())


@app.command()
@clean_errors
def report(
    session_id: Annotated[str, typer.Argument(help="The session (see `interviewer sessions`).")],
    format_: Annotated[str, typer.Option("--format", help="md, html (self-contained) or pdf.")] = "md",
    out: Annotated[Path | None, typer.Option("--out", help="Write here instead of printing.")] = None,
    user: UserOption = None,
) -> None:
    """The feedback report of a session, finished or not."""
    from interviewer.interview import report as reports

    if format_ not in {"md", "html", "pdf"}:
        raise InterviewerError("--format must be md, html or pdf")
    if format_ == "pdf" and out is None:
        raise InterviewerError("a PDF needs --out FILE")
    services = _services()
    session_id = _owned(services, _acting(services, user), session_id)
    built = reports.build(services.session_state(session_id), services.titles, services.settings.llm.prices)
    if format_ == "pdf":
        assert out is not None
        out.write_bytes(reports.to_pdf(built))
        console.print(f"Report written to {out}")
        return
    text = reports.markdown(built) if format_ == "md" else reports.to_html(built)
    if out is None:
        typer.echo(text)
        return
    out.write_text(text, encoding="utf-8")
    console.print(f"Report written to {out}")


@app.command()
@clean_errors
def drill(
    topic: Annotated[str | None, typer.Option("--topic", help="Only this topic's weak points.")] = None,
    lang: Annotated[str, typer.Option("--lang", help="zh or en.")] = "zh",
    user: UserOption = None,
) -> None:
    """Practise your weak points: the questions whose criteria are due for review (spaced repetition)."""
    from interviewer.application.plans import weak_plan

    services = _services()
    owner = _acting(services, user)
    plan = weak_plan(services.store, services.bank, topic=topic, owner=owner)
    state = services.engine().start(
        plan, mode="practice", lang="en" if lang == "en" else "zh", max_followups=services.settings.interview.max_followups, owner=owner
    )
    console.print(f"Drill: {', '.join(plan.questions)}")
    _run_terminal(services, state)


@app.command()
@clean_errors
def progress(
    as_json: Annotated[bool, typer.Option("--json", help="Print as JSON.")] = False,
    sessions_: Annotated[int, typer.Option("--sessions", min=1, help="How many of the latest sessions to show.")] = 20,
    user: UserOption = None,
) -> None:
    """Your scores per topic across your latest sessions, and each criterion's review schedule."""
    import time as _time

    from interviewer.application.history import History

    services = _services()
    past = History(services.store, services.bank, _acting(services, user), limit=sessions_)
    history = past.topic_history()
    criteria = past.criterion_history()
    status = past.criterion_status(_time.time())
    if as_json:
        typer.echo(json.dumps({"topics": history, "criteria_over_time": criteria, "criteria": status}, ensure_ascii=False, indent=2))
        return
    sessions = list(dict.fromkeys(r["started"] for r in history))
    table = Table(title="Score per topic over time")
    table.add_column("topic")
    for started in sessions:
        table.add_column(started)
    for topic in sorted({r["topic"] for r in history}):
        cells = {r["started"]: str(r["score"]) for r in history if r["topic"] == topic}
        table.add_row(topic, *(cells.get(s, "") for s in sessions))
    console.print(table)
    latest = {r["criterion"]: r["share"] for r in criteria}
    weak_criteria = sorted((k for k, v in latest.items() if v < 1), key=lambda k: latest[k])[:15]
    if weak_criteria:
        per_criterion = Table(title="Weakest criteria over time (share of full marks)")
        per_criterion.add_column("criterion")
        for started in sessions:
            per_criterion.add_column(started)
        for key in weak_criteria:
            cells = {r["started"]: f"{r['share']:.0%}" for r in criteria if r["criterion"] == key}
            per_criterion.add_row(key, *(cells.get(s, "") for s in sessions))
        console.print(per_criterion)
    due = [s for s in status if s["due_in_days"] <= 0 and (s["last_quality"] or 0) < 5]
    soon = min((s["due_in_days"] for s in status), default=None)
    console.print(
        f"{len(due)} criteria due for review now"
        + (f" (next in {soon:.1f} days)" if not due and soon is not None else "")
        + "; `interviewer drill` practises what is due, else your lowest-scored questions."
    )


@app.command()
@clean_errors
def doctor() -> None:
    """Check the model endpoint: reachable, model served, structured output works; then what it
    supports (json_schema, tools, json_mode, streaming) and the setting to use."""
    from interviewer.faces.doctor import capabilities, run, transcription

    settings = _services().settings
    checks = run(settings)
    if settings.endpoint.configured and all(c.ok for c in checks):
        checks += capabilities(settings)
    if settings.endpoint.configured or settings.speech.base_url:
        checks += transcription(settings)
    for check in checks:
        console.print(("[green]ok[/green]   " if check.ok else "[red]fix[/red]  ") + check.message, markup=True)
    if not all(c.ok for c in checks):
        raise typer.Exit(1)


@app.command()
@clean_errors
def transcribe(
    audio: Annotated[Path, typer.Argument(help="A recording: wav, mp3, m4a, webm, ogg, flac …", exists=False)],
    question: Annotated[str | None, typer.Option(help="The question answered (qNN): its words and terms go in the prompt.")] = None,
    lang: Annotated[str | None, typer.Option(help="zh or en: the language spoken (default: the endpoint detects it).")] = None,
) -> None:
    """Print what the transcription endpoint hears in a recording (to check a set-up for answering aloud)."""
    from interviewer.application.speech import Transcriber

    services = _services()
    try:
        asked = services.bank.get(question) if question else None
    except KeyError as exc:
        raise InterviewerError(str(exc.args[0])) from None
    if lang not in {None, "zh", "en"}:
        raise InterviewerError("--lang must be zh or en")
    transcriber = Transcriber(services.settings, services.glossary)

    def progress(done: int, total: int) -> None:
        if total > 1:
            typer.echo(f"piece {min(done + 1, total)} of {total} …", err=True)

    result = transcriber.transcribe(audio, asked, lang, progress)
    typer.echo(result.text)
    length = f"{result.audio_s:.1f} s of audio, " if result.audio_s is not None else ""
    typer.echo(f"({length}{result.pieces} piece(s); {result.total_s:.2f} s, the endpoint {result.endpoint_s:.2f} s)", err=True)


users = typer.Typer(help="Accounts: once one exists, the app asks everyone to sign in and each user sees only their own.")
app.add_typer(users, name="users")


def _read_password(prompt: str) -> str:
    """The password from standard input: its first line when piped (``--password-stdin``), else
    typed twice without echo."""
    if not sys.stdin.isatty():
        line = sys.stdin.buffer.readline().decode("utf-8", errors="strict").rstrip("\r\n")
        if not line:
            raise InterviewerError("no password on standard input (echo PASSWORD | interviewer users add NAME --password-stdin)")
        return line
    import getpass

    first = getpass.getpass(f"{prompt}: ")
    if getpass.getpass("Again: ") != first:
        raise InterviewerError("the two passwords differ; nothing was changed")
    return first


PasswordStdin = Annotated[bool, typer.Option("--password-stdin", help="Read the password from standard input's first line.")]


@users.command("add")
@clean_errors
def users_add(name: Annotated[str, typer.Argument(help="The user name to sign in with.")], password_stdin: PasswordStdin = False) -> None:
    """Create an account. The first one takes over the interviews already on this machine."""
    from interviewer.application.accounts import Accounts

    del password_stdin  # the password is read from stdin when it is piped, typed otherwise
    store = _services().store
    local = store.count_sessions()  # what the first account takes over
    first = Accounts(store).add(name, _read_password(f"Password for {name}"))
    taken = f" The {local} interviews already on this machine are now theirs." if first and local else ""
    console.print(f"Added user {name}.{taken} The app now asks everyone to sign in.")


@users.command("list")
@clean_errors
def users_list() -> None:
    """The accounts, oldest first."""
    from interviewer.application.accounts import Accounts

    names = Accounts(_services().store).names()
    typer.echo("\n".join(names) if names else "no accounts: the app opens without a sign-in, on this machine only")


@users.command("passwd")
@clean_errors
def users_passwd(name: Annotated[str, typer.Argument(help="Whose password.")], password_stdin: PasswordStdin = False) -> None:
    """Set a new password."""
    from interviewer.application.accounts import Accounts

    del password_stdin
    Accounts(_services().store).passwd(name, _read_password(f"New password for {name}"))
    console.print(f"Password of {name} changed.")


@users.command("remove")
@clean_errors
def users_remove(
    name: Annotated[str, typer.Argument(help="The account to delete, with every interview and report of theirs.")],
    yes: Annotated[bool, typer.Option("--yes", help="Do not ask: delete at once.")] = False,
) -> None:
    """Delete an account and everything it owns (sessions, answers, reports, review schedule, model setting)."""
    from interviewer.application.accounts import Accounts
    from interviewer.application.exports import delete_reports

    services = _services()
    owned = services.store.count_sessions(name)
    if not yes:
        if not sys.stdin.isatty():
            raise InterviewerError(f"this deletes {name} and their {owned} sessions: add --yes to confirm")
        typer.confirm(f"Delete {name} and their {owned} sessions?", abort=True)
    for session_id in Accounts(services.store).remove(name):
        delete_reports(services.settings.home, session_id)
    console.print(f"Removed user {name} and their {owned} sessions.")


def main() -> None:
    app()


if __name__ == "__main__":
    main()
