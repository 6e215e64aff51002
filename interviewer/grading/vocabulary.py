"""The reader's vocabularies: the words and patterns that tell what a sentence does, in Chinese
and English. Steering the grader, admitting not to know, explaining (relations and quantities),
negating (and what only looks like a negation), supposing, and contrasting within a clause.

Only patterns live here; :mod:`interviewer.grading.reading` applies them.
"""

from __future__ import annotations

import re

# A contrast inside a clause starts a new one: "ZeRO-2 shards gradients while every GPU keeps all
# parameters", "低于拐点是访存受限而高于拐点是计算受限". 而 inside a word (而是, 从而 …) or after a
# change ("随规模增大而变长") is no contrast.
CONTRAST = re.compile(
    r"\s+(?=(?:while|whereas|but)\s)|(?<!不)(?=但)|(?=然而)|(?<![从因进然反继加大少小高低升降长多快慢])(?=而(?![是且言已不非]))",
    re.IGNORECASE,
)

# A number with its unit (2 字节, 1.5 倍, 16Ψ, 3 ms): a sentence that quantifies explains.
QUANTITY = re.compile(
    r"(?<![A-Za-z0-9\-_.])\d+(\.\d+)?\s*(%|倍|x|×|字节|bytes?|gb|mb|kb|tb|ms|µs|us|s\b|秒|分钟|个|次|路|way|cycles?|周期|Ψ|ψ)",
    re.IGNORECASE,
)

# Text addressed to the grader rather than the interviewer. Such sentences are removed before
# grading, so they can neither earn nor cost points, and the grade is flagged.
STEERING = re.compile(
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
NO_KNOWLEDGE = re.compile(
    r"^\W*(我)?(真的)?(不知道|不清楚|不会|不了解|不太了解|没了解过|没接触过|不懂|不记得了?|答不上来|跳过|pass)"
    r"|^\W*(i\s+)?(really\s+)?(don'?t|do\s+not)\s+(know|remember|have\s+(any\s+)?idea)|^\W*(no\s+idea|not\s+sure|idk|skip|pass)\b",
    re.IGNORECASE,
)
# Words that turn a statement into an explanation: cause, mechanism, quantity, contrast.
RELATION = re.compile(
    r"因为|所以|因此|导致|使得|从而|通过|由于|为了|否则|如果|那么|只有|才|而是|但是|不过|相当于|取决于|意味着|每|约|倍|比|先|再|然后|之后|之前|同时|等于|需要|会|可以|把|将|用"
    r"|\b(because|so|since|therefore|thus|hence|by|via|which|means|each|per|every|only|instead|while|when|then|before|after"
    r"|unless|if|otherwise|so that|needs?|requires?|depends?|equals?|about|roughly|times|than|uses?)\b",
    re.IGNORECASE,
)
NEGATION = re.compile(
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
NOT_NEGATIONS = re.compile(
    r"要不要|是不是|能不能|会不会|行不行|对不对|差不多|大不了|不只是|不仅仅|不仅|不止|不光|不单|不但|(?:不代表|不意味着|不等于)不会"
    r"|\bnot only\b",
    re.IGNORECASE,
)

# A clause that only supposes something ("如果 TP 跨节点", "if TP spanned nodes") asserts nothing.
SUPPOSITION = re.compile(r"^\W*(如果|假如|假设|假若|要是|倘若|万一|if\b|suppose\b|supposing\b|assuming\b|imagine\b)", re.IGNORECASE)
