"""Domain errors. Each says what went wrong and what to do; the CLI and UI turn them into one line."""

from __future__ import annotations


class InterviewerError(Exception):
    """Base of every error the product reports to the user as a message rather than a traceback."""


class BankError(InterviewerError):
    """A question-bank file is unreadable or invalid; names the file, the question and the field."""

    def __init__(self, path: str, message: str, question_id: str | None = None, field: str | None = None):
        self.path = path
        self.question_id = question_id
        self.field = field
        self.message = message
        where = path
        if question_id:
            where += f" [{question_id}]"
        if field:
            where += f" at {field}"
        super().__init__(f"{where}: {message}")


class KnowledgeError(InterviewerError):
    """A knowledge document is malformed (missing or duplicate anchors, unreadable file)."""


class KnowledgeIndexError(InterviewerError):
    """The knowledge index cannot be opened or built (damaged store, embedding endpoint failure)."""
