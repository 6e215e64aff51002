"""A script the page runs before Gradio's own: it calms Gradio 6.31's leaked animation-frame loop.

After the page has loaded, one of Gradio's status trackers (an empty ``gr.Blocks()`` has it too)
keeps asking for an animation frame sixty times a second, forever, to advance an elapsed-time
counter nobody sees. Each request makes the browser produce a frame: 6% of a core for every open
page doing nothing, measured in headless Chromium, and a laptop's battery. Gradio's modules take
their reference to ``requestAnimationFrame`` when they load, and the page's ``head`` option is
added only after they have, so :class:`PageScript` puts the script at the top of the page's
``<head>`` as it is served. The script gives the status trackers' frame requests a timer of a
quarter second instead: a visible progress timer still counts (in tenths, four times a second);
every other animation keeps its frames.
"""

from __future__ import annotations

from typing import Any

SCRIPT = b"""<script>
(() => {
  const frame = window.requestAnimationFrame.bind(window);
  window.requestAnimationFrame = (callback) => {
    if ((new Error().stack || "").includes("statustracker")) {
      return window.setTimeout(() => callback(performance.now()), 250);
    }
    return frame(callback);
  };
})();
</script>"""
HEAD = b"<head>"


class PageScript:
    """ASGI middleware: the page (``GET /``) is served with :data:`SCRIPT` first in its head;
    every other response passes through untouched."""

    def __init__(self, app: Any):
        self.app = app

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        root = scope.get("root_path", "").rstrip("/")
        if scope["type"] != "http" or scope["method"] != "GET" or scope["path"] not in {"/", root + "/"}:
            await self.app(scope, receive, send)
            return
        start: dict[str, Any] = {}
        parts: list[bytes] = []

        async def rewrite(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                start.update(message)
                return
            if message["type"] != "http.response.body":
                await send(message)
                return
            parts.append(message.get("body", b""))
            if message.get("more_body"):
                return
            body = b"".join(parts)
            headers = [(k, v) for k, v in start.get("headers", []) if k.lower() != b"content-length"]
            html = any(k.lower() == b"content-type" and v.startswith(b"text/html") for k, v in headers)
            if html and HEAD in body:
                body = body.replace(HEAD, HEAD + SCRIPT, 1)
            await send({**start, "headers": [*headers, (b"content-length", str(len(body)).encode())]})
            await send({"type": "http.response.body", "body": body})

        await self.app(scope, receive, rewrite)
