from __future__ import annotations

import pytest

from interviewer.content.glossary import Glossary, Term
from interviewer.errors import KnowledgeError
from interviewer.retrieval.segment import Segmenter
from tests.conftest import KNOWLEDGE


@pytest.fixture(scope="module")
def segmenter() -> Segmenter:
    return Segmenter(Glossary.load(KNOWLEDGE / "glossary"))


@pytest.mark.parametrize(
    ("text", "term"),
    [
        ("ZeRO-3的通信开销怎么优化", "@zero-3"),
        ("梯度用 all-reduce 同步", "@all-reduce"),
        ("用 NCCL 做集合通信", "@nccl"),
        ("什么是 warp divergence", "@warp-divergence"),
        ("bank conflict 怎么避免", "@bank-conflict"),
    ],
    ids=["zero-3", "all-reduce", "nccl", "warp-divergence", "bank-conflict"],
)
def test_domain_terms_stay_whole(segmenter: Segmenter, text: str, term: str) -> None:
    assert term in segmenter.tokens(text)


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("张量并行", "tensor parallelism"),
        ("ZeRO-3", "zero stage 3"),
        ("全规约", "AllReduce"),
        ("流水线并行", "Pipeline Parallel"),
        ("激活重计算", "activation checkpointing"),
    ],
)
def test_both_languages_give_the_same_term(segmenter: Segmenter, a: str, b: str) -> None:
    assert segmenter.tokens(a) == segmenter.tokens(b)
    assert segmenter.tokens(a)[0].startswith("@")


def test_english_words_are_not_cut_by_short_aliases(segmenter: Segmenter) -> None:
    # "sp" and "tp" are aliases; they must not split ordinary words apart.
    assert segmenter.tokens("split the outputs") == ["split", "output"]


def test_full_width_and_case_are_normalised(segmenter: Segmenter) -> None:
    assert segmenter.tokens("ＺｅＲＯ－３") == segmenter.tokens("zero-3")


def test_filler_words_carry_no_tokens(segmenter: Segmenter) -> None:
    assert segmenter.tokens("请问一下这个是什么？ what is this") == []


def test_an_alias_claimed_by_two_terms_is_rejected() -> None:
    with pytest.raises(KnowledgeError, match="belongs to both"):
        Glossary([Term(id="a", aliases=["TP"]), Term(id="b", aliases=["tp"])])


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("算术强度比拐点大", "算术强度高于拐点"),
        ("arithmetic intensity above the ridge point", "arithmetic intensity higher than the ridge point"),
        ("延迟比 NVLink 高很多", "延迟高于 NVLink 很多"),
        ("FP16 的范围比 BF16 小", "FP16 的范围低于 BF16"),
        ("通信比计算长", "通信高于计算"),
        ("HBM 比 SRAM 慢", "HBM 低于 SRAM"),
    ],
)
def test_a_comparison_reads_the_same_however_it_is_worded(segmenter: Segmenter, a: str, b: str) -> None:
    assert segmenter.tokens(a) == segmenter.tokens(b)


@pytest.mark.parametrize("text", ["比如 ZeRO-3", "相比 DDP 多一次 all-gather", "比较大的 batch", "对比一下两种方案"])
def test_words_built_on_bi_are_no_comparison(segmenter: Segmenter, text: str) -> None:
    assert "@w-higher-than" not in segmenter.tokens(text) and "@w-lower-than" not in segmenter.tokens(text)


@pytest.mark.parametrize(
    ("text", "optimizer"),
    [
        ("We shard with ZeRO.", True),
        ("用 zero 省显存", True),
        ("用zero省显存", True),
        ("The three ZeRO stages", True),
        ("GPU-Util drops to zero", False),
        ("zero_grad 之后", False),
    ],
)
def test_zero_is_the_optimizer_only_when_it_is_named_so(segmenter: Segmenter, text: str, optimizer: bool) -> None:
    """Written ZeRO, or zero in a Chinese sentence, is DeepSpeed's optimizer; "drops to zero" is a number."""
    assert ("@zero-optimizer" in segmenter.tokens(text)) is optimizer


def test_zero_stages_and_zero_plus_plus_keep_their_own_terms(segmenter: Segmenter) -> None:
    assert segmenter.tokens("ZeRO Stage-3") == segmenter.tokens("zero stage 3") == ["@zero-3"]
    assert segmenter.tokens("ZeRO++") == segmenter.tokens("zero++") == ["@zero-plus-plus"]
