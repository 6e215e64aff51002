"""Reading an answer: sentences and clauses with exact spans, phrase matching, and the signals
the offline grader needs (steering attempts, "I don't know", keyword lists, padding, language).

Everything here is deterministic and works on the original text, so every quoted span is an
exact substring of what the candidate wrote.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import cached_property

from interviewer.retrieval.segment import CLAIM_WORDS, STOPWORDS, TERM_PREFIX, Segmenter, normalise

GRADING_LIMIT = 20_000  # characters read; a longer paste is graded on its beginning and flagged

# A sentence ends at Chinese or English end punctuation, a semicolon or a line break; an English
# full stop only when followed by a space or the end (so 1.5, e.g. and file.md stay whole).
_SENTENCE = re.compile(r"(?:[^。！？!?；;\n.]|\.(?!\s|$)|(?<=e\.g)\.|(?<=i\.e)\.)+(?:[。！？!?；;]|(?<!e\.g)(?<!i\.e)\.(?=\s|$))?")
_CLAUSE = re.compile(r"(?:[^，,、：:。！？!?；;\n]|(?<=\d)[:,](?=\d))+")  # "3:1" and "2,000" stay whole
# A contrast inside a clause starts a new one: "ZeRO-2 shards gradients while every GPU keeps all
# parameters", "低于拐点是访存受限而高于拐点是计算受限". 而 inside a word (而是, 从而 …) or after a
# change ("随规模增大而变长") is no contrast.
_CONTRAST = re.compile(
    r"\s+(?=(?:while|whereas|but)\s)|(?<!不)(?=但)|(?=然而)|(?<![从因进然反继加大少小高低升降长多快慢])(?=而(?![是且言已不非]))",
    re.IGNORECASE,
)
_LIST_SPLIT = re.compile(r"[，,、/／;；]|→|->|\+")
# Words set apart by spaces are a list too: Chinese words with spaces between them ("优化器状态 梯度
# 参数"; prose puts spaces only around English words), or six or more English words without a single
# function word ("ZeRO-1 ZeRO-2 optimizer states gradients parameters").
_HAN_GAP = re.compile(r"[\u4e00-\u9fff]\s+[\u4e00-\u9fff]")
_ENGLISH_WORD = re.compile(r"[A-Za-z][\w.+-]*")
_HAN = re.compile(r"[\u4e00-\u9fff]")
_LATIN = re.compile(r"[A-Za-z]")
_QUANTITY = re.compile(
    r"(?<![A-Za-z0-9\-_.])\d+(\.\d+)?\s*(%|倍|x|×|字节|bytes?|gb|mb|kb|tb|ms|µs|us|s\b|秒|分钟|个|次|路|way|cycles?|周期|Ψ|ψ)",
    re.IGNORECASE,
)

# Text addressed to the grader rather than the interviewer. Such sentences are removed before
# grading, so they can neither earn nor cost points, and the grade is flagged.
_STEERING = re.compile(
    r"(ignore|disregard|forget)\s+(all\s+|the\s+|your\s+|any\s+|previous\s+|above\s+)*(rubric|instruction|rule|prompt|criteria)"
    r"|full\s+marks|perfect\s+score|give\s+(me|this\s+answer|this)\s+(a\s+)?(10|ten|100)"
    r"|\b(system|assistant|grader)\s*[:：]"
    r"|\bscore\s*[=:：]\s*\d"
    r"|you\s+are\s+(now\s+)?(a|the)\s+(grader|judge|evaluator)"
    r"|忽略.{0,12}(评分|规则|标准|指令|以上|之前|rubric)|给(我|这个回答|本回答)?(打)?满分|满分\s*10|打\s*10\s*分|评分\s*[=:：]\s*\d"
    r"|你(现在)?是(评分|打分)"
    # asking for a score for this answer, or telling someone it deserves one
    r"|\b(rate|score|grade|mark|award|assign|give)\b[^.\n]{0,30}\b(this|my|the)\s+(answer|response|reply|submission)\b[^.\n]{0,40}"
    r"\b(10|ten|full|maximum|max|highest|top|perfect)\b"
    r"|\b(this|my)\s+(answer|response|reply|submission)\b[^.\n]{0,40}\b(deserves|merits|earns|should\s+(get|receive|be\s+given))\b"
    r"[^.\n]{0,30}\b(10|ten|full|maximum|highest|top|perfect)\b"
    r"|\b(rate|score|grade|mark)\w*\s+(it|this|me)\s+(a\s+)?(10|ten)\b|\b10\s+out\s+of\s+10\b"
    r"|\b(note|message|instruction)s?\s+(to|for)\s+the\s+(grader|evaluator|judge|assessor|marker|model)"
    r"|\bas\s+an?\s+(ai|llm|language\s+model)\b[^.\n]{0,20}\b(grader|evaluator|judge)"
    r"|\[/?inst\]|<\|?/?(system|im_start|im_end|assistant)\|?>|\"(score|grade)\"\s*:\s*\d"
    r"|评分(系统|者|员|模型|程序|老师)|(应|应该|请|直接|必须)(给|打|得|给出|评|判)[^，。,.]{0,6}(10|十|满|最高)\s*分"
    r"|(忘掉|忘记|无视|不要管|不用管|跳过)[^，。,.]{0,12}(评分|标准|规则|指令|要求|rubric)",
    re.IGNORECASE,
)
_NO_KNOWLEDGE = re.compile(
    r"^\W*(我)?(真的)?(不知道|不清楚|不会|不了解|不太了解|没了解过|没接触过|不懂|不记得了?|答不上来|跳过|pass)"
    r"|^\W*(i\s+)?(really\s+)?(don'?t|do\s+not)\s+(know|remember|have\s+(any\s+)?idea)|^\W*(no\s+idea|not\s+sure|idk|skip|pass)\b",
    re.IGNORECASE,
)
# Words that turn a statement into an explanation: cause, mechanism, quantity, contrast.
_RELATION = re.compile(
    r"因为|所以|因此|导致|使得|从而|通过|由于|为了|否则|如果|那么|只有|才|而是|但是|不过|相当于|取决于|意味着|每|约|倍|比|先|再|然后|之后|之前|同时|等于|需要|会|可以|把|将|用"
    r"|\b(because|so|since|therefore|thus|hence|by|via|which|means|each|per|every|only|instead|while|when|then|before|after"
    r"|unless|if|otherwise|so that|needs?|requires?|depends?|equals?|about|roughly|times|than|uses?)\b",
    re.IGNORECASE,
)
_NEGATION = re.compile(
    # 不 before anything but the words where it is no negation (不同 different, 不少 many, 不断 …);
    # 不同步 is "not in sync". Questions and idioms (要不要, 差不多) are removed first.
    r"(?:完全|截然|根本|本质上?)不同|不(?:同步|(?![同少断过仅但久足管论]))|并非|没|无法|(?<![区分级差识特类告个])别"
    r"|而不是|误区|误解|错的|以为|有人说|无(?![缝论])(?=[\u4e00-\u9fff])"
    # 错误 as a verdict ("这是错误的", "说法错误"), not the noun ("ECC 错误", "Xid 错误会导致…")
    r"|(?:是|说法|观点|理解)错误|错误(?=的|[，。,.;；！!]|$)"
    r"|\b(not|no|never|without|no longer|isn'?t|aren'?t|doesn'?t|don'?t|won'?t|cannot|can'?t"
    r"|myth|misconception|wrong|mistaken?|rather than|instead of)\b",
    re.IGNORECASE,
)

# Not negations: questions (要不要), idioms (差不多), "not only" (不只是 …, it adds), and "does not
# mean it won't" (不代表不会), which denies nothing.
_NOT_NEGATIONS = re.compile(
    r"要不要|是不是|能不能|会不会|行不行|对不对|差不多|大不了|不只是|不仅仅|不仅|不止|不光|不单|不但|(?:不代表|不意味着|不等于)不会"
    r"|\bnot only\b",
    re.IGNORECASE,
)


def count_negations(text: str) -> int:
    return len(_NEGATION.findall(_NOT_NEGATIONS.sub("", text)))


# A clause that only supposes something ("如果 TP 跨节点", "if TP spanned nodes") asserts nothing.
_SUPPOSITION = re.compile(r"^\W*(如果|假如|假设|假若|要是|倘若|万一|if\b|suppose\b|supposing\b|assuming\b|imagine\b)", re.IGNORECASE)


@dataclass(frozen=True)
class Unit:
    """A sentence or clause of the answer."""

    start: int
    end: int
    text: str  # exact substring of the answer
    tokens: tuple[str, ...]
    norm: str  # NFKC + case-folded text, for substring tests on Chinese words
    parts: tuple[tuple[str, ...], ...] = ()  # tokens of each comma/slash/arrow-separated part

    @cached_property
    def token_set(self) -> frozenset[str]:
        return frozenset(self.tokens)

    @cached_property
    def explanatory(self) -> bool:
        """Says something about the terms, rather than only naming them."""
        words = [t for t in self.tokens if not t.startswith(TERM_PREFIX)]
        has_relation = bool(_RELATION.search(self.text)) or bool(_QUANTITY.search(self.text))
        if not (len(self.tokens) >= 5 and len(words) >= 2 and has_relation):
            return False
        return not self.is_list

    @cached_property
    def is_list(self) -> bool:
        """A run of bare terms separated by commas, slashes or arrows, however long."""
        if len(self.parts) < 4:
            return False
        bare = sum(len(tokens) <= 2 or all(t.startswith(TERM_PREFIX) for t in tokens) for tokens in self.parts)
        return bare / len(self.parts) >= 0.7

    @cached_property
    def negated(self) -> int:
        return count_negations(self.text)

    @cached_property
    def supposed(self) -> bool:
        """The unit opens with "if" or "suppose": what it says is a hypothesis, not a claim."""
        return bool(_SUPPOSITION.search(self.text))


@dataclass(frozen=True)
class Phrase:
    """A term, paraphrase or misconception pattern, segmented once."""

    text: str
    tokens: tuple[str, ...]
    negations: int

    def coverage(self, unit: Unit) -> float:
        if not self.tokens:
            return 0.0
        present = sum(1 for t in self.tokens if _present(t, unit))
        return present / len(self.tokens)

    def ordered_coverage(self, unit: Unit) -> float:
        """Coverage counting only tokens found in the pattern's order (longest common
        subsequence): "ZeRO-1 shards parameters, ZeRO-3 optimizer states" must not match
        "ZeRO-1 shards optimizer states, ZeRO-3 parameters", which has the same words."""
        if not self.tokens:
            return 0.0
        previous = [0] * (len(unit.tokens) + 1)
        for token in self.tokens:
            current = [0] * (len(unit.tokens) + 1)
            for j, other in enumerate(unit.tokens, start=1):
                if other == token or (_HAN.search(token) and len(token) >= 2 and (token in other or (len(other) >= 2 and other in token))):
                    current[j] = previous[j - 1] + 1
                else:
                    current[j] = max(previous[j], current[j - 1])
            previous = current
        found = previous[-1]
        # a Chinese word jieba cut differently still counts, wherever it is (once: not when the
        # subsequence above already matched it inside a longer word)
        loose = sum(1 for t in self.tokens if t not in unit.token_set and _present(t, unit) and not _inside_a_token(t, unit))
        return min(len(self.tokens), found + loose) / len(self.tokens)

    def all_terms_present(self, unit: Unit) -> bool:
        return all(t in unit.token_set for t in self.tokens if t.startswith(TERM_PREFIX))


def _inside_a_token(token: str, unit: Unit) -> bool:
    return any(token in other or (len(other) >= 2 and other in token) for other in unit.tokens)


def _present(token: str, unit: Unit) -> bool:
    if token in unit.token_set:
        return True
    # jieba may cut a Chinese phrase differently in the answer than in the rubric
    return bool(_HAN.search(token)) and len(token) >= 2 and token in unit.norm


def make_phrase(segmenter: Segmenter, text: str, keep: frozenset[str] = frozenset()) -> Phrase:
    return Phrase(text=text, tokens=tuple(dict.fromkeys(segmenter.tokens(text, keep))), negations=count_negations(text))


def make_claim(segmenter: Segmenter, text: str) -> Phrase:
    """A misconception's phrasing, with the words a claim turns on (需要, 都, each …) kept."""
    return make_phrase(segmenter, text, CLAIM_WORDS)


_VOWELS = re.compile(r"[aeiouy]")
_CONSONANT_RUN = re.compile(r"[b-df-hj-np-tv-xz]{5,}")


def _implausible(word: str, dictionary: dict[str, int]) -> bool:
    if _HAN.search(word):
        # a run of Chinese characters that jieba could not cut into dictionary words
        return len(word) == 1 and dictionary.get(word, 0) < 50
    if word.isdigit():
        return False
    return len(word) >= 4 and (not _VOWELS.search(word) or bool(_CONSONANT_RUN.search(word)))


def _list_parts(text: str) -> list[str]:
    parts = [part for part in _LIST_SPLIT.split(text) if part.strip()]
    english = _ENGLISH_WORD.findall(text)
    spaced = len(_HAN_GAP.findall(text)) >= 3 or (
        not _HAN.search(text) and len(english) >= 6 and not any(w.casefold() in STOPWORDS for w in english)
    )
    return [word for part in parts for word in part.split()] if spaced else parts


def _contrasted(clause: str) -> Iterator[tuple[int, str]]:
    """The parts of a clause split at its contrasts, each with its offset, stripped."""
    cuts = [0, *(m.start() for m in _CONTRAST.finditer(clause) if m.start() > 0), len(clause)]
    for begin, end in itertools.pairwise(cuts):
        piece = clause[begin:end]
        if piece.strip():
            yield begin + piece.index(piece.strip()), piece.strip()


def detect_language(text: str) -> str:
    han = len(_HAN.findall(text))
    latin = len(_LATIN.findall(text))
    # A Chinese character carries about as much as a short English word, hence the factor.
    return "zh" if han * 3 >= latin and han > 0 else "en"


@dataclass
class Answer:
    """An answer prepared for grading."""

    original: str
    segmenter: Segmenter
    flags: list[str] = field(default_factory=list)
    steering: list[str] = field(default_factory=list)
    sentences: list[Unit] = field(default_factory=list)
    clauses: list[Unit] = field(default_factory=list)

    @classmethod
    def read(cls, text: str, segmenter: Segmenter, limit: int = GRADING_LIMIT) -> Answer:
        answer = cls(original=text, segmenter=segmenter)
        body = text
        if len(body) > limit:
            body = body[:limit]
            answer.flags.append("truncated")
        if not body.strip():
            answer.flags.append("empty")
            return answer
        for match in _SENTENCE.finditer(body):
            raw = match.group(0)
            stripped = raw.strip()
            if not stripped:
                continue
            start = match.start() + raw.index(stripped)
            if _STEERING.search(stripped):
                answer.steering.append(stripped)
                continue
            sentence = answer._unit(start, stripped)
            if not sentence.tokens:
                continue
            answer.sentences.append(sentence)
            for clause in _CLAUSE.finditer(stripped):
                for offset, part in _contrasted(clause.group(0)):
                    unit = answer._unit(start + clause.start() + offset, part)
                    if unit.tokens:
                        answer.clauses.append(unit)
        if answer.steering:
            answer.flags.append("steering-attempt")
        if not answer.sentences:  # only punctuation, symbols or instructions to the grader
            answer.flags.append("empty")
        if _NO_KNOWLEDGE.search(body.strip()) and len(body.strip()) < 60:
            answer.flags.append("no-knowledge")
        return answer

    def _unit(self, start: int, text: str) -> Unit:
        parts = tuple(tuple(self.segmenter.tokens(part)) for part in _list_parts(text))
        return Unit(start, start + len(text), text, tuple(self.segmenter.tokens(text)), normalise(text), parts)

    @cached_property
    def tokens(self) -> list[str]:
        return [t for s in self.sentences for t in s.tokens]

    @cached_property
    def claim_clauses(self) -> list[Unit]:
        """The clauses as misconceptions are matched against them (see :func:`make_claim`)."""
        return [self._claim_unit(u) for u in self.clauses]

    @cached_property
    def claim_sentences(self) -> list[Unit]:
        return [self._claim_unit(u) for u in self.sentences]

    def _claim_unit(self, unit: Unit) -> Unit:
        return Unit(unit.start, unit.end, unit.text, tuple(self.segmenter.tokens(unit.text, CLAIM_WORDS)), unit.norm, unit.parts)

    @cached_property
    def lang(self) -> str:
        return detect_language(" ".join(s.text for s in self.sentences) or self.original)

    @cached_property
    def unique_sentences(self) -> list[Unit]:
        """Sentences with repeats (the same tokens) removed: padding earns nothing twice."""
        seen: set[tuple[str, ...]] = set()
        unique: list[Unit] = []
        for sentence in self.sentences:
            key = tuple(sorted(set(sentence.tokens)))
            if key in seen:
                continue
            seen.add(key)
            unique.append(sentence)
        return unique

    @cached_property
    def gibberish(self) -> bool:
        """Mostly strings that are no words: keyboard mashing, random characters."""
        words = [t for t in self.tokens if not t.startswith("@")]
        if not words or len(words) != len(self.tokens):
            return False
        dictionary = self.segmenter.jieba_tokenizer.FREQ
        implausible = sum(1 for w in words if _implausible(w, dictionary))
        return implausible / len(words) >= 0.6

    @cached_property
    def padding_ratio(self) -> float:
        if not self.sentences:
            return 0.0
        return 1.0 - len(self.unique_sentences) / len(self.sentences)
