"""The report as files to download: HTML always, PDF where WeasyPrint and Pango are installed.

A file is written only when the report changed since it was last written, so showing a
finished interview again writes nothing."""

from __future__ import annotations

from pathlib import Path

from interviewer.errors import InterviewerError
from interviewer.interview import report as reports
from interviewer.interview.state import SessionState


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
