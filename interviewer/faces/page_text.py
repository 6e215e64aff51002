"""The page's own words, in both languages: every control's label, the choices' names, the welcome
and the grade flags as a candidate reads them. The page follows the language chosen in the sidebar
(the browser's language on a first visit) and, once an interview runs, the interview's language."""

from __future__ import annotations

import re
from typing import Literal

PageLang = Literal["zh", "en"]

PLANS = ["full", "full all", "round 1", "round 2", "round 3", "round 4", "question", "topic", "weak"]
DRILL_PLANS = {"question", "topic"}  # the plans that need the question or topic picker
LANGUAGES = [("中文", "zh"), ("English", "en")]

WORDS: dict[PageLang, dict[str, str]] = {
    "zh": {
        "title": "## AI-Infra 模拟面试",
        "plan": "面试计划",
        "full": "完整三轮",
        "full all": "全部四轮（含推理服务面与扩展题）",
        "round 1": "第 1 轮",
        "round 2": "第 2 轮",
        "round 3": "第 3 轮",
        "round 4": "第 4 轮：推理服务",
        "question": "单题练习",
        "topic": "按主题练习",
        "weak": "复习薄弱点",
        "question_pick": "题目",
        "topic_pick": "主题",
        "mode": "模式",
        "interview": "面试（分数留到本轮结束）",
        "practice": "练习（每题给反馈卡片）",
        "interview_short": "面试",
        "practice_short": "练习",
        "language": "语言 · Language",
        "start": "开始面试",
        "model": "模型",
        "model_help": (
            "任何 OpenAI 兼容的接口（OpenAI、vLLM、Ollama、DeepSeek、Qwen……）都可以负责评分和追问；"
            "不配置时离线评分。在这里填写你自己的接口（地址和它的 key）并通过检查后，你之后开始的面试都会使用它；"
            "只对你生效，key 不会显示回来。"
        ),
        "base_url": "接口地址（Base URL）",
        "model_name": "模型名",
        "api_key": "API key（不会显示回来）",
        "check": "检查连接并使用",
        "check_ok": "正常：",
        "check_fix": "**需修正**：",
        "switched": "你之后开始的面试将使用这个模型（已开始的面试保持原来的评分方式）。",
        "own_url_needed": "要换模型，请填写你自己的接口地址（和它的 key）：服务器的接口只按服务器的配置使用。",
        "history": "历史记录",
        "resume_id": "要恢复的会话 id",
        "resume": "恢复",
        "overall_chart": "总分随时间的变化",
        "topic_chart": "最弱五个主题的得分变化",
        "axis_started": "开始时间",
        "axis_overall": "总分",
        "axis_score": "得分",
        "axis_topic": "主题",
        "weakest": "最薄弱的主题",
        "chat": "面试",
        "answer": "你的回答",
        "placeholder": "中文或英文作答都可以；代码用 ``` 包起来会按代码显示",
        "mic": "口述回答（录完转成文字放进回答框，检查后再提交）",
        "speech_off": "口述回答未开启：",
        "voice_on": "朗读面试官的问题",
        "voice": "面试官的声音",
        "code": "Kernel 代码（C++/CUDA）",
        "submit": "提交",
        "dont_know": "我不会",
        "skip": "跳过",
        "retry": "重答上一个回答",
        "proceed": "进入下一轮",
        "to_report": "结束面试，查看报告",
        "download": "下载报告（HTML）",
        "download_pdf": "下载报告（PDF）",
        "welcome": (
            "你好，我是这场 AI-Infra 面试的面试官。三轮：分布式训练、CUDA 与 GPU 优化、GPU 集群管理，"
            "按真实面试的节奏提问和追问；想练推理服务，可以加一轮（第 4 轮）。\n\n在左侧选好计划、模式和语言，点“开始面试”。"
            "“面试”模式把分数留到每轮结束；“练习”模式每题给一张反馈卡片，可以重答。"
        ),
    },
    "en": {
        "title": "## AI-Infra mock interview",
        "plan": "Plan",
        "full": "all three rounds",
        "full all": "all four rounds, every question (inference serving and beyond the seed)",
        "round 1": "round 1",
        "round 2": "round 2",
        "round 3": "round 3",
        "round 4": "round 4: inference serving",
        "question": "one question",
        "topic": "one topic",
        "weak": "my weak points",
        "question_pick": "Question",
        "topic_pick": "Topic",
        "mode": "Mode",
        "interview": "interview (scores at the round's end)",
        "practice": "practice (a feedback card per answer)",
        "interview_short": "interview",
        "practice_short": "practice",
        "language": "Language · 语言",
        "start": "Start",
        "model": "Model",
        "model_help": (
            "An OpenAI-compatible endpoint (OpenAI, vLLM, Ollama, DeepSeek, Qwen …) grades and asks the "
            "follow-ups; without one, grading is offline. Type your own endpoint (its URL and its key): once the "
            "check passes, the interviews you start from then on use it. It is yours alone; the key is never shown back."
        ),
        "base_url": "Base URL",
        "model_name": "Model",
        "api_key": "API key (never shown back)",
        "check": "Check connection and use",
        "check_ok": "ok: ",
        "check_fix": "**fix**: ",
        "switched": "The interviews you start from now on use this model (those already started keep theirs).",
        "own_url_needed": (
            "To use another model, type your own endpoint's URL (and its key): the server's endpoint is used only as the server set it."
        ),
        "history": "History",
        "resume_id": "Session id to resume",
        "resume": "Resume",
        "overall_chart": "Overall score over time",
        "topic_chart": "The five weakest topics over time",
        "axis_started": "started",
        "axis_overall": "overall",
        "axis_score": "score",
        "axis_topic": "topic",
        "weakest": "Weakest topics",
        "chat": "Interview",
        "answer": "Your answer",
        "placeholder": "Answer in English or Chinese; put code between ``` lines to have it shown as code",
        "mic": "Answer aloud (the words land in the answer box; check them, then Submit)",
        "speech_off": "Answering aloud is off:",
        "voice_on": "Speak the interviewer's questions",
        "voice": "The interviewer's voice",
        "code": "Kernel (C++/CUDA)",
        "submit": "Submit",
        "dont_know": "I don't know",
        "skip": "Skip",
        "retry": "Retry the last answer",
        "proceed": "Next round",
        "to_report": "Finish and see the report",
        "download": "Download the report (HTML)",
        "download_pdf": "Download the report (PDF)",
        "welcome": (
            "Hello, I am your interviewer for this AI-Infra interview. Three rounds (distributed training, "
            "CUDA and GPU optimisation, GPU cluster management), asked and followed up at the pace of a "
            "real one; a fourth, on inference serving, can be added (round 4).\n\nPick a plan, a mode and a "
            "language on the left, then press Start. Interview "
            "mode keeps the scores for each round's end; practice mode gives a feedback card for each "
            "answer and lets you retry it."
        ),
    },
}

FLAGS: dict[PageLang, dict[str, str]] = {
    "zh": {
        "empty": "空回答",
        "no-knowledge": "表示不会",
        "gibberish": "无法识别的内容",
        "truncated": "过长，只读了前面部分",
        "steering-attempt": "对评分者的指令（已忽略）",
        "keyword-list": "只列术语、没有解释",
        "off-topic": "离题",
        "question-echo": "大部分是题目原话",
        "padding": "重复或注水",
        "skipped": "跳过",
        "llm-fallback": "模型失败，离线评分",
    },
    "en": {
        "empty": "empty",
        "no-knowledge": "did not know",
        "gibberish": "no recognisable words",
        "truncated": "too long: only the start was read",
        "steering-attempt": "text addressed to the grader (ignored)",
        "keyword-list": "terms without explanation",
        "off-topic": "off-topic",
        "question-echo": "mostly the question's own words",
        "padding": "repeated or padded",
        "skipped": "skipped",
        "llm-fallback": "the model failed: graded offline",
    },
}


STATUS: dict[PageLang, dict[str, str]] = {
    "zh": {"active": "进行中", "finished": "已完成"},
    "en": {"active": "in progress", "finished": "finished"},
}
_PLAN_NAMES_ZH = [  # the plan labels sessions store (interview/plan.py, application/plans.py), in Chinese
    (re.compile(r"all three rounds"), "完整三轮"),
    (re.compile(r"all four rounds"), "完整四轮"),
    (re.compile(r"round (\d+)"), r"第 \1 轮"),
    (re.compile(r"rounds (.+)"), r"第 \1 轮"),  # a scripted candidate's rounds (simulate)
    (re.compile(r"drill (\S+)"), r"单题 \1"),
    (re.compile(r"topic (.+)"), r"主题 \1"),
    (re.compile(r"my weak points: (.+)"), r"复习薄弱点：\1"),
    (re.compile(r"my weak points"), "复习薄弱点"),
]


def plan_name(label: str, lang: PageLang) -> str:
    """A stored plan label as the page says it (a label of another shape is shown as it is)."""
    if lang == "en":
        return label
    for pattern, name in _PLAN_NAMES_ZH:
        if pattern.fullmatch(label):
            return pattern.sub(name, label)
    return label


def page_lang(value: str | None) -> PageLang:
    return "en" if value == "en" else "zh"


def browser_lang(accept_language: str | None) -> PageLang:
    """The first page's language: Chinese when the browser prefers it, otherwise English."""
    first = (accept_language or "").split(",")[0].strip().lower()
    return "zh" if first.startswith("zh") else "en"


def choices(lang: PageLang, values: list[str]) -> list[tuple[str, str]]:
    """A radio's choices: each value under its name in ``lang`` (the value itself stays the same)."""
    return [(WORDS[lang].get(v, v), v) for v in values]


def flag_names(lang: PageLang, flags: list[str]) -> list[str]:
    return [FLAGS[lang].get(f, f) for f in flags]
