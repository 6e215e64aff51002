"""What the candidate wrote is shown as written: in the app's Markdown (rendered here by a CommonMark
renderer, as the page's renderer reads it), in the report's HTML and in one-line quotes."""

from __future__ import annotations

import html
import re

from markdown_it import MarkdownIt

from interviewer.interview import verbatim
from tests.conftest import shown_text

RENDER = MarkdownIt("commonmark")
KERNEL = """__global__ void scale(float* __restrict__ a, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) a[i] *= 2.0f;
}"""
HOSTILE = "<script>alert(1)</script><img src=x onerror=alert(1)> *not emphasis* [not](a link) $$x^2$$ 1. not a list"


def test_prose_is_shown_character_for_character_with_its_lines_and_indentation() -> None:
    said = f"第一行：{HOSTILE}\n  缩进两格的第二行 __shared__ # 不是标题\n- 不是列表 \\ 反斜杠 & 符号 `不是代码`"
    rendered = RENDER.render(verbatim.markdown(said))
    assert "<img" not in rendered and "<script" not in rendered and "<em>" not in rendered and "<a " not in rendered
    assert "<strong>" not in rendered and "<h1>" not in rendered and "<ul>" not in rendered and "<ol>" not in rendered
    assert shown_text(verbatim.markdown(said)).strip() == said


def test_code_is_fenced_wherever_it_comes_from() -> None:
    typed_fence = f"Tiled GEMM:\n\n```cuda\n{KERNEL}\n```\nthen more prose"
    pasted_bare = f"思路如下：\n\n{KERNEL}\n\n每个线程处理一个元素。"
    for answer in (typed_fence, pasted_bare, verbatim.fence(KERNEL, "cpp")):
        kinds = [b.kind for b in verbatim.blocks(answer)]
        assert "code" in kinds
        rendered = RENDER.render(verbatim.markdown(answer))
        code = re.search(r"<pre><code[^>]*>(.*?)</code></pre>", rendered, re.S)
        assert code is not None and html.unescape(code.group(1)).rstrip("\n") == KERNEL  # indentation and __ kept
        assert "<strong>" not in rendered


def test_a_fence_inside_the_code_cannot_close_it() -> None:
    code = "s = '```'\nprint(s)"
    rendered = RENDER.render(verbatim.markdown(verbatim.fence(code)))
    assert html.unescape(re.search(r"<code>(.*?)</code>", rendered, re.S).group(1)).rstrip("\n") == code  # type: ignore[union-attr]


def test_prose_that_mentions_code_stays_prose() -> None:
    said = "数据并行每张卡一份完整模型；反向后梯度 all-reduce；\n张量并行层内切权重。"
    assert [b.kind for b in verbatim.blocks(said)] == ["prose"]


def test_html_keeps_prose_lines_and_puts_code_in_pre() -> None:
    out = verbatim.to_html(f"{HOSTILE}\n第二行\n\n{KERNEL}")
    assert "<img" not in out and "<script" not in out and "&lt;img src=x" in out
    assert out.startswith('<p class="said">') and "\n第二行" in out
    assert f"<pre><code>{html.escape(KERNEL)}</code></pre>" in out


def test_quotes_are_one_line_cut_between_words_and_escaped() -> None:
    quote = verbatim.quote_markdown("the __shared__ tile " + "padding " * 40, limit=60)
    assert "\n" not in quote and quote.endswith("…")
    assert shown_text(quote).strip().removesuffix("…").split(" ")[-1] in {"tile", "padding"}
    assert "<strong>" not in RENDER.renderInline(quote)
    assert verbatim.clip("数据并行" * 100, 10) == "数据并行数据并行数据…"


def test_the_interviewers_cuda_identifiers_are_code_not_bold() -> None:
    asked = "A warp reads a column of __shared__ float s[32][32]; keep `__syncthreads()` as is; a__b__c"
    marked = verbatim.mark_identifiers(asked)
    rendered = RENDER.renderInline(marked)
    assert "<code>__shared__</code>" in rendered and "<strong>" not in rendered and "a__b__c" in rendered
