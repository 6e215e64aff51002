"""The report as files to download: HTML always, PDF where WeasyPrint and Pango are installed.

A file is written only when the report changed since it was last written, so showing a
finished interview again writes nothing."""

from __future__ import annotations

import mimetypes
import os
import tempfile
from contextlib import suppress
from pathlib import Path

from interviewer.errors import InterviewerError
from interviewer.interview import report as reports
from interviewer.interview.state import SessionState
from interviewer.interview.store import Recording, Store

REPORTS = "reports"


def report_files(
    folder: Path, state: SessionState, titles: dict[str, str] | None = None, prices: tuple[float, float] | None = None
) -> tuple[reports.Report, Path, Path | None]:
    """The built report, its HTML file and its PDF file (None when no PDF engine is installed);
    ``titles`` name the study plan's passages, ``prices`` cost its model grades (see ``report.build``)."""
    built = reports.build(state, titles, prices)
    page = reports.to_html(built)
    html_path = folder / f"report-{state.id}.html"
    pdf_path = folder / f"report-{state.id}.pdf"
    unchanged = html_path.exists() and html_path.read_text(encoding="utf-8") == page
    if unchanged:
        return built, html_path, pdf_path if pdf_path.exists() else None
    try:
        folder.mkdir(parents=True, exist_ok=True)
        pdf_path.unlink(missing_ok=True)
        html_path.write_text(page, encoding="utf-8")
    except OSError as exc:
        raise InterviewerError(f"cannot write the report to {folder} ({exc.strerror}); your answers are saved") from None
    try:
        pdf_path.write_bytes(reports.to_pdf(built))
    except InterviewerError:
        return built, html_path, None  # no PDF engine here: the HTML prints to PDF from the browser
    except OSError:
        return built, html_path, None
    return built, html_path, pdf_path


def served_copies() -> Path:
    """Where Gradio keeps the copies of files it serves (``GRADIO_TEMP_DIR``, see ``web.create``)."""
    return Path(os.environ.get("GRADIO_TEMP_DIR") or Path(tempfile.gettempdir()) / "gradio")


def delete_reports(home: Path, session_id: str) -> int:
    """Delete a session's report files and the copies the web app served them from (a copy's
    folder is named by the file's hash, the file keeps its name); how many files went."""
    gone = 0
    copies = served_copies()
    for name in (f"report-{session_id}.html", f"report-{session_id}.pdf"):
        path = home / REPORTS / name
        if path.exists():
            path.unlink()
            gone += 1
        if copies.is_dir():
            for copy in copies.glob(f"*/{name}"):
                copy.unlink(missing_ok=True)
                with suppress(OSError):  # the copy's own folder, once empty
                    copy.parent.rmdir()
                gone += 1
    return gone


REPLAYS = "interviewer-recordings"  # under the temporary folder, which Gradio serves files from


def replay_file(store: Store, recording: Recording) -> Path | None:
    """A kept recording as a file the chat can play, written once and named by the recording's
    random token; None when it cannot be written now (the words are on screen all the same)."""
    suffix = {"audio/mpeg": ".mp3", "audio/wav": ".wav"}.get(recording.mime) or mimetypes.guess_extension(recording.mime) or ".bin"
    path = Path(tempfile.gettempdir()) / REPLAYS / f"{recording.token}{suffix}"
    if path.exists():
        return path
    try:
        path.parent.mkdir(exist_ok=True)
        partial = path.with_name(path.name + ".part")
        partial.write_bytes(store.recording_audio(recording.id))
        partial.replace(path)
    except (OSError, InterviewerError):
        return None
    return path


def delete_replays(store: Store, session_id: str) -> int:
    """Delete the files a session's recordings were replayed from, and Gradio's copies of them."""
    gone = 0
    copies = served_copies()
    for recording in store.recordings(session_id):
        for folder in (Path(tempfile.gettempdir()) / REPLAYS, *([copies / "*"] if copies.is_dir() else [])):
            for path in folder.parent.glob(f"{folder.name}/{recording.token}.*"):
                path.unlink(missing_ok=True)
                gone += 1
    return gone


def delete_session(store: Store, home: Path, session_id: str) -> None:
    """A session, its answers, its recordings and its reports, wherever they were written or served from."""
    delete_replays(store, session_id)
    store.delete_session(session_id)
    delete_reports(home, session_id)
