"""The mock-interview app: ``python app.py`` serves it on 127.0.0.1 on the offline default.

Gradio's own GRADIO_SERVER_NAME and GRADIO_SERVER_PORT are honoured; sharing beyond this machine
needs ``interviewer serve --share --auth user:password``.
"""

from __future__ import annotations

import os
import threading


def main() -> None:
    # before gradio is imported: no version check or telemetry calls at start-up
    os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
    from interviewer.faces.web import create
    from interviewer.retrieval.index import KnowledgeIndex
    from interviewer.settings import Settings

    settings = Settings()
    index = KnowledgeIndex(settings)
    if not index.path.exists():  # the first run builds the index, with progress
        report = index.build(progress=True)
        print(f"knowledge index built: {report.passages} passages")
    else:  # later runs start at once and bring the index up to date in the background
        threading.Thread(target=index.ensure_current, name="index-refresh", daemon=True).start()
    create(settings).launch(server_name=os.environ.get("GRADIO_SERVER_NAME", "127.0.0.1"))


if __name__ == "__main__":
    main()
