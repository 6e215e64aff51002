"""The mock-interview app: ``python app.py`` serves it on 127.0.0.1 on the offline default.

Gradio's own GRADIO_SERVER_NAME and GRADIO_SERVER_PORT are honoured; sharing beyond this machine
needs ``interviewer serve --share --auth user:password``.
"""

from __future__ import annotations

import os


def main() -> None:
    # before gradio is imported: no version check or telemetry calls at start-up
    os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
    from interviewer.application.startup import ready_index, warm
    from interviewer.faces.cli import one_line_errors
    from interviewer.faces.web import create, launch
    from interviewer.services import Services
    from interviewer.settings import Settings

    with one_line_errors():  # a damaged database, a read-only data folder: one line, as the command line says it
        services = Services(Settings())
        if note := ready_index(services, progress=True):
            print(note)
        warm(services)
        launch(create(services), server_name=os.environ.get("GRADIO_SERVER_NAME", "127.0.0.1"))


if __name__ == "__main__":
    main()
