"""Getting the app ready to serve, the same for ``python app.py`` and ``interviewer serve``."""

from __future__ import annotations

import threading

from interviewer.services import Services


def ready_index(services: Services, progress: bool) -> str | None:
    """The first start builds the knowledge index (with progress) and says so; later starts serve
    at once and bring the index up to date in the background (only changed files are embedded).

    The session database is opened before anything: a damaged or unwritable one ends the start
    with its one line before background work has begun: a process exiting while a thread is in
    Chroma's native code can crash (SIGSEGV) instead of exiting with code 1."""
    _ = services.store
    index = services.index
    if not index.shared and not index.path.exists():  # a Chroma server's index is brought up to date like a later start
        report = index.build(progress=progress)
        return f"knowledge index built: {report.passages} passages"
    threading.Thread(target=index.ensure_current, name="index-refresh", daemon=True).start()
    return None


def warm(services: Services) -> threading.Thread:
    """Prepare, in the background, what the first answer would otherwise wait for: every rubric's
    phrases compiled for the offline reading (about 4 s on two cores) and, with a model, its client
    (the import alone takes over a second) and the grader's threads. A candidate reads the first
    question meanwhile."""

    def run() -> None:
        grader = services.offline_grader
        for question in services.bank.questions:
            grader.grade(question, question.question.en)
            for followup in question.followups:
                grader.grade_followup(question, followup, followup.question.en)
        if services.settings.endpoint.configured:
            from interviewer.interview.interviewer import LLMInterviewer

            interviewer = services.interviewer
            if isinstance(interviewer, LLMInterviewer):
                _ = interviewer.streamer.model  # builds the chat client
            _ = services.model_grader.caller.model
            services.model_grader.start()

    thread = threading.Thread(target=run, name="warm-up", daemon=True)
    thread.start()
    return thread
