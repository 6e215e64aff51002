"""Accounts: who may sign in, and whose data a face acts on.

Passwords are hashed with argon2id (argon2-cffi's defaults: 64 MiB, 3 passes, a random salt each),
and only the hash is stored. With no account the machine has one local user (the store's
``LOCAL``), who owns everything; the first account created takes that data over. A face acts for
exactly one user: the signed-in one on the web, ``--user`` (or the only account) in the terminal.
"""

from __future__ import annotations

import re
import time

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError, VerifyMismatchError

from interviewer.errors import InterviewerError
from interviewer.interview.store import LOCAL, Store

NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._@-]{0,63}$")
MIN_PASSWORD = 8
MAX_PASSWORD = 1024  # longer is not a password but a paste gone wrong; argon2 would hash it all the same

_hasher = PasswordHasher()
# verifying an unknown name still costs one hash, so the time taken does not tell who has an account
_DUMMY = _hasher.hash("not a password of anyone's")


class AccountError(InterviewerError):
    pass


def _check_name(name: str) -> str:
    if not NAME.match(name):
        raise AccountError(f"'{name}' cannot be a user name: use 1-64 letters, digits, '.', '_', '@' or '-', a letter or digit first")
    return name


def _check_password(password: str) -> str:
    if len(password) < MIN_PASSWORD:
        raise AccountError(f"the password is too short: use at least {MIN_PASSWORD} characters")
    if len(password) > MAX_PASSWORD:
        raise AccountError(f"the password is longer than {MAX_PASSWORD} characters")
    return password


class Accounts:
    def __init__(self, store: Store):
        self.store = store

    def names(self) -> list[str]:
        return self.store.users()

    def add(self, name: str, password: str) -> bool:
        """Create an account; True when it is the first (it now owns what the local user had)."""
        first = not self.store.users()
        if not self.store.add_user(_check_name(name), _hasher.hash(_check_password(password)), time.time()):
            raise AccountError(f"there is already a user '{name}'")
        return first

    def passwd(self, name: str, password: str) -> None:
        if not self.store.set_password(name, _hasher.hash(_check_password(password))):
            raise AccountError(f"no user '{name}' (see `interviewer users list`)")

    def remove(self, name: str) -> list[str]:
        """Delete the account and everything it owns; the ids of the sessions that went with it."""
        removed = self.store.remove_user(name)
        if removed is None:
            raise AccountError(f"no user '{name}' (see `interviewer users list`)")
        return removed

    def verify(self, name: str, password: str) -> bool:
        """The sign-in check: never raises, and takes as long for an unknown name as for a known one."""
        stored = self.store.password_hash(name)
        try:
            return _hasher.verify(stored or _DUMMY, password) and stored is not None
        except (VerifyMismatchError, VerificationError, InvalidHashError):
            return False

    def acting_user(self, wanted: str | None) -> str:
        """Whom the terminal and the command line act for: ``--user``, else the only account, else
        the local user of a machine without accounts."""
        names = self.names()
        if wanted:
            if wanted not in names:
                known = f": the accounts are {', '.join(names)}" if names else ": there are no accounts"
                raise AccountError(f"no user '{wanted}'{known}")
            return wanted
        if not names:
            return LOCAL
        if len(names) == 1:
            return names[0]
        raise AccountError(f"there are {len(names)} accounts: say whose data to use with --user ({', '.join(names)})")
