"""Getting the app ready to serve, the same for ``python app.py`` and ``interviewer serve``."""

from __future__ import annotations

import threading

from interviewer.services import Services


def ready_index(services: Services, progress: bool) -> str | None:
    """The first start builds the knowledge index (with progress) and says so; later starts serve
    at once and bring the index up to date in the background (only changed files are embedded)."""
    index = services.index
    if not index.path.exists():
        report = index.build(progress=progress)
        return f"knowledge index built: {report.passages} passages"
    threading.Thread(target=index.ensure_current, name="index-refresh", daemon=True).start()
    return None
