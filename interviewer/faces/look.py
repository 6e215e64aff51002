"""How the page looks: a quiet theme, fonts for English, Chinese and code, and the few rules that
make it an interview room (the round and its clock pinned above the conversation, the card beside
it, the controls out of the way). Layout stays in ``web.py``; this is only its appearance."""

from __future__ import annotations

import gradio as gr

# Bundled with Gradio and served from the app itself (nothing is fetched from the internet). Gradio
# declares only weights 400 and 600; bold text (700) was then drawn from another face, and capitals
# in bold words came out small ("CUDᴀ"). All three weights the bundle has are declared.
WEIGHTS = (400, 600, 700)
# Chinese comes from the system: macOS, Windows, then the Debian/Ubuntu packages (fonts-noto-cjk,
# fonts-wqy-microhei), before the generic families.
CJK_SANS = ["PingFang SC", "Hiragino Sans GB", "Microsoft YaHei", "Noto Sans CJK SC", "Source Han Sans SC", "WenQuanYi Micro Hei"]
CJK_MONO = ["Noto Sans Mono CJK SC", "WenQuanYi Micro Hei Mono"]


def theme() -> gr.themes.Base:
    return gr.themes.Default(
        primary_hue=gr.themes.colors.indigo,
        secondary_hue=gr.themes.colors.slate,
        neutral_hue=gr.themes.colors.slate,
        radius_size=gr.themes.sizes.radius_md,
        font=[gr.themes.LocalFont("IBM Plex Sans", weights=WEIGHTS), *CJK_SANS, "ui-sans-serif", "system-ui", "sans-serif"],
        font_mono=[gr.themes.LocalFont("IBM Plex Mono", weights=WEIGHTS), *CJK_MONO, "ui-monospace", "Consolas", "monospace"],
    ).set(
        body_background_fill="*neutral_50",
        block_border_width="1px",
        block_shadow="none",
        button_primary_background_fill="*primary_600",
        button_primary_background_fill_hover="*primary_700",
    )


CSS = """
/* the round, the question number and the clock stay in sight above the conversation. Gradio's
   container hides its overflow (for the sidebar sliding off), which makes it the scroll box that a
   sticky element sticks in; clipping does the same for the sidebar without being a scroll box */
.gradio-container { overflow-x: clip !important; overflow-y: visible !important; }
#progress { position: sticky; top: 0; z-index: 20; background: var(--body-background-fill);
  padding: 0.4rem 0 0.5rem; border-bottom: 1px solid var(--border-color-primary); }
#progress p { margin: 0.1rem 0; }
/* the feedback card reads as a card */
#card:not(:empty) { background: var(--block-background-fill); border: 1px solid var(--border-color-primary);
  border-radius: var(--radius-lg); padding: 0.25rem 1rem; }
/* on a wide screen the card keeps beside the conversation and scrolls on its own */
@media (min-width: 900px) {
  #card:not(:empty) { position: sticky; top: 6rem; max-height: calc(100vh - 7rem); overflow-y: auto; }
}
/* a move refused: one line under the answer box */
.notice p { color: var(--color-accent); margin: 0.2rem 0; }
/* code in the conversation and the card: the theme's monospace, its indentation kept */
.message pre, .message code, #card pre, #card code { font-family: var(--font-mono); }
.message pre { white-space: pre; overflow-x: auto; }
footer { display: none !important; }
"""
