"""The mock-interview app: ``python app.py`` serves it on 127.0.0.1 on the offline default.

Gradio's own GRADIO_SERVER_NAME, GRADIO_SERVER_PORT and GRADIO_SHARE are honoured; listening beyond
this machine needs a sign-in (an account, ``interviewer users add NAME --password-stdin``, or
``interviewer serve --auth user:password``), and is refused without one.
"""

from __future__ import annotations

import os


def main() -> None:
    # before gradio is imported: no version check or telemetry calls at start-up
    os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
    from interviewer.faces.cli import one_line_errors
    from interviewer.faces.web import serve
    from interviewer.services import Services
    from interviewer.settings import Settings

    with one_line_errors():  # a damaged database, a read-only data folder: one line, as the command line says it
        serve(Services(Settings()))  # behind a sign-in when accounts exist; refused beyond loopback without one


if __name__ == "__main__":
    main()
