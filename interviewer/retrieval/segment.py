"""Bilingual segmentation: Chinese words, English words and glossary terms as one token stream.

Text is NFKC-normalised and case-folded, cut by jieba (with every glossary alias in its
dictionary, so ``zero-3`` or ``张量并行`` stay whole), and then glossary aliases, including
multi-word English ones such as ``warp divergence``, are replaced by one term token
``@term-id``. Both languages' names of a term become the same token, which is what lets a query
in one language match a passage in the other.
"""

from __future__ import annotations

import logging
import re
import threading
import unicodedata
from functools import cached_property, lru_cache
from typing import Any

import jieba
import snowballstemmer

from interviewer.content.glossary import Glossary

TERM_PREFIX = "@"
SEGMENTER_VERSION = 4  # part of the embedding's identity: a change re-embeds the index
MAX_ALIAS_TOKENS = 6

_WORD = re.compile(r"[0-9a-z\u4e00-\u9fff]")
_HAN = re.compile(r"[\u4e00-\u9fff]")

# Function words and the words every interview question is wrapped in ("讲讲", "explain"):
# they carry no topic, and dropping them keeps retrieval on the technical content.
STOPWORDS = frozenset(
    """
    的 了 是 在 和 与 及 或 也 都 就 还 又 而 但 并 被 把 给 对 从 到 向 为 以 于 由 这 那 这个 那个 这些 那些
    这样 那样 一个 一种 一些 有 没有 会 能 可以 要 需要 我 你 他 她 它 我们 你们 他们 咱们 吗 呢 吧 啊 呀 么
    怎么 怎样 怎么样 如何 什么 哪些 哪个 为什么 为何 多少 是否 是不是 能否 请 讲讲 说说 讲 说 谈谈 聊聊 介绍
    请问 解释 一下 下 比如 例如 然后 其中 时候 的话 之 其 该 每 各 等 等等 自己 如果 因为 所以 比较 非常 一般 通常
    a an the of to in on at for by with from as is are was were be been being it its this that these those
    and or but not no if then than so such do does did how what why which who whom when where can could
    would should will shall may might must you your i me my we our they their he she them us about into
    over under between explain describe tell please walk through give example examples let lets there here
    """.split()
)


def normalise(text: str) -> str:
    return unicodedata.normalize("NFKC", text).casefold()


# "A 比 B 大" says "A 高于 B": rewritten so that it reads like "A is above B" in either language.
# 比 inside 比较/比如/比例/对比/相比 … is no comparison.
_COMPARISON = re.compile(
    r"(?<![对相类好无])比(?![较如例率值方特赛起上])"  # 比, not 比较 / 对比 …
    r"([^，。,；;！？!?、\n]{1,24}?)(?:还|更|要)?(大|高|多|长|快|小|低|少|短|慢)(?![小少低短慢大多高长快])"  # B, then the direction
)


def comparatives(text: str) -> str:
    return _COMPARISON.sub(lambda m: ("高于" if m.group(2) in "大高多长快" else "低于") + m.group(1), text)


# "ZeRO" is DeepSpeed's optimizer, "zero" in English the number ("GPU-Util drops to zero"); in a
# Chinese sentence a bare zero is the optimizer ("用 zero 省显存"). ZeRO-3, ZeRO stage 2 … keep
# their own aliases.
_ZERO_NAME = re.compile(r"(?<![A-Za-z0-9_.])ZeRO(?![A-Za-z0-9_]|\.\w|[-+]|\s*(?i:stage\s*-?\d|plus|\d))")
_ZERO_WORD = re.compile(r"(?<![A-Za-z0-9_.])zero(?![A-Za-z0-9_]|\.\w|[-+]|\s*(?:stage\s*-?\d|plus|bubble|\d))", re.IGNORECASE)
_ZERO_PLUS_PLUS = re.compile(r"(?<![A-Za-z0-9_.])zero\+\+", re.IGNORECASE)  # "++" is no word: it would leave a bare "zero"


def zero_optimizer(text: str) -> str:
    text = _ZERO_NAME.sub("ZeRO-DP", _ZERO_PLUS_PLUS.sub("ZeRO plus plus", text))
    return _ZERO_WORD.sub("ZeRO-DP", text) if _HAN.search(text) else text


_PER_THREAD = threading.local()


def _english() -> Any:
    """Snowball's stemmer keeps the word it is working on in the instance, so two threads sharing
    one get each other's stems (or an IndexError): each thread has its own."""
    stemmer = getattr(_PER_THREAD, "english", None)
    if stemmer is None:
        stemmer = _PER_THREAD.english = snowballstemmer.stemmer("english")
    return stemmer


@lru_cache(maxsize=65536)
def _stem(word: str) -> str:
    """Snowball for English words (divided/divide, collecting/collect), plus plain plural
    stripping for acronyms Snowball leaves alone (gpus -> gpu, sms -> sm)."""
    if not word.isascii() or not word.isalpha() or len(word) <= 3:
        return word
    stemmed: str = _english().stemWord(word)
    if stemmed == word and word.endswith("s") and not word.endswith("ss"):
        return word[:-1]
    return stemmed


_STOPWORDS_STEMMED = STOPWORDS | {_stem(word) for word in STOPWORDS}

# Stopwords that a claim turns on: "不需要 gang" is not "不支持 gang", "矩阵乘都是计算受限" is not
# "这个 GEMM 是计算受限", "每个 SM 有自己的 L2" is not "每个 SM 有 L2". Kept when matching
# misconceptions (:meth:`Segmenter.tokens` with ``keep``), dropped everywhere else.
CLAIM_WORDS = frozenset(w for word in "需要 可以 都 每 各 自己 need needs must can all each every own".split() for w in (word, _stem(word)))


class Segmenter:
    """Turns text into tokens. Build once and reuse: jieba's dictionary load costs ~0.6 s."""

    def __init__(self, glossary: Glossary):
        self.glossary = glossary

    @property
    def jieba_tokenizer(self) -> jieba.Tokenizer:
        """The initialised jieba tokenizer (its ``FREQ`` table weighs words by rarity)."""
        tokenizer = self._jieba
        tokenizer.check_initialized()
        return tokenizer

    @cached_property
    def _jieba(self) -> jieba.Tokenizer:
        jieba.setLogLevel(logging.WARNING)
        tokenizer = jieba.Tokenizer()
        # Only aliases with Chinese in them: jieba already keeps ASCII words whole, and adding
        # short ASCII aliases ("sp") would make it cut English words apart ("split" -> sp/lit).
        for aliases in self.glossary.terms.values():
            for alias in aliases:
                word = normalise(alias)
                if _HAN.search(word) and " " not in word:
                    tokenizer.add_word(word, freq=100000)
        return tokenizer

    @cached_property
    def _phrases(self) -> dict[tuple[str, ...], str]:
        """Every alias as the tuple of raw tokens jieba makes of it -> its term id."""
        phrases: dict[tuple[str, ...], str] = {}
        for term_id, aliases in self.glossary.terms.items():
            for alias in [term_id, *aliases]:
                key = tuple(self._raw_tokens(normalise(alias)))
                if key and len(key) <= MAX_ALIAS_TOKENS:
                    phrases.setdefault(key, term_id)
        return phrases

    def _raw_tokens(self, normalised: str) -> list[str]:
        return [_stem(t) for t in self._jieba.cut(normalised, HMM=False) if _WORD.search(t)]

    @lru_cache(maxsize=4096)  # noqa: B019 - one segmenter lives as long as the process
    def _cut(self, text: str) -> tuple[str, ...]:
        return tuple(self._raw_tokens(comparatives(normalise(zero_optimizer(text)))))

    def tokens(self, text: str, keep: frozenset[str] = frozenset()) -> list[str]:
        """Content tokens: term tokens (``@id``), Chinese words and stemmed English words; the
        stopwords in ``keep`` stay."""
        return list(self._tokens(text, keep))

    @lru_cache(maxsize=8192)  # noqa: B019 - as _cut; an answer's sentences come back in every reading of the question
    def _tokens(self, text: str, keep: frozenset[str]) -> tuple[str, ...]:
        raw = self._cut(text)
        phrases = self._phrases
        out: list[str] = []
        i = 0
        while i < len(raw):
            for length in range(min(MAX_ALIAS_TOKENS, len(raw) - i), 0, -1):
                term = phrases.get(tuple(raw[i : i + length]))
                if term is not None:
                    out.append(TERM_PREFIX + term)
                    i += length
                    break
            else:
                word = raw[i]
                if word not in _STOPWORDS_STEMMED or word in keep:
                    out.append(word)
                i += 1
        return tuple(out)

    def search_tokens(self, text: str) -> list[str]:
        """The tokens retrieval indexes and looks up: each term followed by the broader terms it is a
        kind of, so that a plain question ("有哪些并行方式") reaches the passages that name the kinds
        (数据并行, 张量并行 …). Grading reads :meth:`tokens`, which leave them out."""
        out: list[str] = []
        for token in self.tokens(text):
            out.append(token)
            if token.startswith(TERM_PREFIX):
                out += [TERM_PREFIX + parent for parent in self.glossary.ancestors(token[len(TERM_PREFIX) :])]
        return out

    @staticmethod
    def han_bigrams(tokens: list[str]) -> list[str]:
        """Character bigrams of the Chinese words that are not glossary terms: fuzzy matching for
        words jieba cuts differently in a query and a passage (显存占用 vs 显存 / 占用)."""
        grams: list[str] = []
        for token in tokens:
            if token.startswith(TERM_PREFIX) or not _HAN.search(token) or len(token) < 2:
                continue
            grams.extend(token[j : j + 2] for j in range(len(token) - 1))
        return grams
