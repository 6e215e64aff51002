"""Domain errors. Each says what went wrong and what to do; the CLI and UI turn them into one line."""

from __future__ import annotations

import errno
import os
import threading
from pathlib import Path


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


class StorageError(InterviewerError):
    """The disk refused: a read-only file system, a folder or file without write permission, a full
    disk, a file where a folder should be. Every face words an OSError through this class, so each
    condition reads the same everywhere and says what to do, whichever command met it."""

    def __init__(self, exc: OSError):
        super().__init__(_describe(exc))


def _describe(exc: OSError) -> str:
    """What is wrong and what to do. The data folder's fix names INTERVIEWER_HOME; another path (an
    --out file, an input) is the user's own choice, and its fix says to choose another."""
    from interviewer.settings import default_home

    home = default_home()
    path = Path(os.fsdecode(exc.filename)) if exc.filename is not None else None
    if path is None and exc.errno not in {errno.EROFS, errno.ENOSPC, errno.EDQUOT}:
        return exc.strerror or str(exc)
    in_home = path is not None and path.absolute().is_relative_to(home.absolute())
    name = str(path) if path is not None else "the file"
    move = "set INTERVIEWER_HOME to a folder you can write to"
    code = exc.errno
    if code == errno.EROFS:
        return f"{name} is on a read-only file system, so nothing can be saved there: " + (move if in_home else "choose another place")
    if code in {errno.EACCES, errno.EPERM}:
        fix = f"make it writable, or {move}" if in_home else "check its permissions, or choose another place"
        return f"permission denied on {name}: {fix}"
    if code in {errno.ENOSPC, errno.EDQUOT}:
        full = "the disk is full" if code == errno.ENOSPC else "the disk quota is used up"
        return f"{full} (writing {name}): free some space and run the command again; what was saved before is kept"
    if code in {errno.EEXIST, errno.ENOTDIR} and path is not None:
        blocker = next((p for p in (path, *path.parents) if p.exists() and not p.is_dir()), path)
        return f"{blocker} is a file where a folder is expected: move it away" + (f", or {move}" if in_home else "")
    if code == errno.ENOENT:
        return f"no such file or folder: {name}"
    if code == errno.EISDIR:
        return f"{name} is a folder, not a file"
    return f"{name}: {exc.strerror or exc}"


def disk_fault(database: Path, detail: str) -> OSError | None:
    """The disk's refusal behind a database's error, if it is one. A database says "disk I/O error",
    "unable to open database file" or "attempt to write a readonly database" for a read-only folder
    and a full disk alike, and its "damaged" advice would then send the candidate after a sound
    file. So the disk is asked directly: the database file is opened for appending (nothing is
    written) and a small file is written, synced and removed beside it, each failing with the
    system's own errno. None: the disk takes writes, and the fault is in the database."""
    if "disk is full" in detail.lower():
        return OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(database))
    folder = database.parent
    probe = folder / f".write-check-{os.getpid()}-{threading.get_ident()}"
    try:
        if database.exists():
            with database.open("ab"):
                pass
        descriptor = os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            os.write(descriptor, bytes(4096))
            os.fsync(descriptor)
        finally:
            os.close(descriptor)
            probe.unlink()
    except OSError as exc:
        return OSError(exc.errno, exc.strerror, str(database if exc.filename == str(database) else folder))
    return None
