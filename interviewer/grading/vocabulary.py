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
    r"|you\s+are\s+(now\s+)?(a|an|the)\s+([\w-]+\s+){0,2}(grader|judge|evaluator|marker|assessor)"
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
    r"|(忘掉|忘记|无视|不要管|不用管|跳过)[^，。,.]{0,12}(评分|标准|规则|指令|要求|rubric)"
    # the same, said politely or sideways: asking for marks, praising the answer to its grader
    r"|\b(give|award|assign|grant)\s+(it|this|me|us|the\s+candidate|him|her)\s+(a\s+)?"
    r"(10|ten|100|full|perfect|maximum|max|top|highest)"
    r"(\s*/\s*10|\s+(marks?|scores?|points|grades?|credit|ratings?|levels?|out\s+of)\b|\s*[.!]|\s*$)"
    r"|\b(please|kindly|would\s+you|could\s+you|i\s+would\s+appreciate)\b[^.\n]{0,50}"
    r"\b(full|maximum|max|highest|top|perfect|high|good)\s+(marks?|scores?|points|grades?|credit|ratings?|levels?)\b"
    r"|\b(full|maximum|max|highest|top|perfect)\s+(marks?|scores?|points|levels?|credit)\s+(on|for|in|across)\s+(every|each|all)\b"
    r"|\b(this|my|the\s+above)\s+(answer|response|reply|submission)\s+is\s+(perfect|flawless|excellent|outstanding|"
    r"complete\s+and\s+correct|fully\s+correct)\b"
    r"|\b(scored?|rated?|graded?|marked?)\s+(as\s+|at\s+)?10\s*/\s*10\b|\b(3|three)\s*/\s*3\s+(on|for|in)\s+(every|each|all)\b"
    r"|\b(ignore|disregard|forget|override|bypass)\s+(all\s+|any\s+|the\s+)*(previous|prior|above|earlier|preceding|system)\b"
    r"|\b(new|updated|revised|real)\s+(system\s+)?(instructions?|prompt|rules)\s*[:：]"
    r"|^\s*#{1,6}\s*(system|instructions?|assistant|grader)\b|```\s*(system|instructions?|prompt|grader)\b"
    r"|<\s*/?\s*(system|instructions?|rubric|grader|prompt|user|answer)\s*>|<<\s*/?\s*sys\s*>>|[＜<]\s*[/／]\s*answer"
    r"|\b(the\s+)?(grader|model|evaluator|judge|marker|assessor)\s+(must|should|shall|will|has\s+to)\s+(now\s+)?"
    r"(give|award|assign|output|score|rate|grade|mark)\b"
    r"|\"(overall|level|criteria|scores|points|final_score)\"\s*:\s*[\[{\"]?\s*\d"
    r"|(请|麻烦|希望|恳请|务必|拜托|还请)[^。！？!?\n]{0,20}(高分|满分|最高分|最高档|最高等级|高一点的分|分数高一点|手下留情|高抬贵手)"
    r"|高抬贵手|手下留情|给个高分|打个高分|(给|打)(我|它|这个回答)?(一个)?高分"
    r"|(这个|本|我的|以上)(回答|答案)[^。！？!?\n]{0,8}(完美|无懈可击|值得满分|应得满分|完全正确，?(应|请))"
    r"|每(一)?(个|项|条)(评分)?(标准|维度|criterion|指标)[^。！？!?\n]{0,10}(满分|最高|3\s*分)"
    r"|(系统|评分|新的?)\s*(提示|指令|指示)\s*[:：]|(之前|以上|上面)(的)?(所有)?(指令|提示|要求)(都)?(作废|无效|不算)",
    re.IGNORECASE | re.MULTILINE,
)
# A block that plays a role in a chat prompt (a system header and the lines under it, a system code
# block, a role tag and what it encloses): the whole block is addressed to the grader, not only its
# first sentence. An unclosed block runs to the end of the answer.
ROLE_BLOCK = re.compile(
    r"^[ \t]*#{1,6}[ \t]*(system|instructions?|assistant|grader)\b.*?(?=\n[ \t]*\n|\Z)"
    r"|```[ \t]*(system|instructions?|prompt|grader)\b.*?(```|\Z)"
    r"|<[ \t]*(system|instructions?|rubric|grader|prompt)[ \t]*>.*?(<[ \t]*/[ \t]*(system|instructions?|rubric|grader|prompt)[ \t]*>|\Z)"
    r"|<\|im_start\|>[ \t]*(system|assistant).*?(<\|im_end\|>|\Z)"
    r"|\[INST\].*?(\[/INST\]|\Z)|<<[ \t]*SYS[ \t]*>>.*?(<<[ \t]*/[ \t]*SYS[ \t]*>>|\Z)",
    re.IGNORECASE | re.MULTILINE | re.DOTALL,
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
