from __future__ import annotations

import pytest

from interviewer.content.knowledge import discover, load_passages, parse_document, slugify
from interviewer.errors import KnowledgeError
from tests.conftest import KNOWLEDGE

DOC = """# 流水线并行 Pipeline parallelism

开头的介绍。

## 气泡 The bubble {#bubble}
气泡比例是 (p-1)/(m+p-1)。

```python
# 代码里的标题不算
## not a heading
```

### 细节
仍属于 bubble 这一节。

## 1F1B 调度 {#one-f-one-b}
每个 stage 交替做一次前向、一次反向。
"""


def test_sections_become_passages_cited_by_file_and_anchor() -> None:
    passages = parse_document(DOC, "pipeline.md", require_anchors=True)
    assert [p.source for p in passages] == ["pipeline.md#intro", "pipeline.md#bubble", "pipeline.md#one-f-one-b"]
    bubble = passages[1]
    assert bubble.heading == "气泡 The bubble"
    assert bubble.title == "流水线并行 Pipeline parallelism › 气泡 The bubble"
    assert "## not a heading" in bubble.text, "a heading inside a code fence belongs to the section"
    assert "仍属于 bubble" in bubble.text, "### subsections stay in their ## section"
    assert "{#" not in bubble.text


def test_missing_anchor_is_an_error_for_shipped_documents_only() -> None:
    text = "# T\n## 没有锚点的标题 No anchor\nbody\n"
    with pytest.raises(KnowledgeError, match="no \\{#anchor\\}"):
        parse_document(text, "x.md", require_anchors=True)
    (passage,) = parse_document(text, "notes/x.md", require_anchors=False)
    assert passage.source == "notes/x.md#没有锚点的标题-no-anchor"


def test_duplicate_anchor_is_an_error() -> None:
    with pytest.raises(KnowledgeError, match="used twice"):
        parse_document("# T\n## A {#same}\n1\n## B {#same}\n2\n", "x.md")


def test_slugify_keeps_chinese_and_drops_punctuation() -> None:
    assert slugify("ZeRO-3 的通信：预取") == "zero-3-的通信-预取"


def test_every_shipped_section_has_a_stable_anchor_and_substance() -> None:
    files = discover([KNOWLEDGE], shipped=KNOWLEDGE)
    assert len(files) >= 15
    for file in files:
        passages = load_passages(file, require_anchors=True)
        assert passages, f"{file.document} has no sections"
        for passage in passages:
            if passage.anchor == "intro":
                continue
            body = passage.text.split("\n", 1)[-1].strip()
            assert len(body) >= 150, f"{passage.source} is too thin to teach anything ({len(body)} chars)"
