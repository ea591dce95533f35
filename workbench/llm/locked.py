"""A backend whose calls run one at a time across threads (llama.cpp contexts are not
thread-safe); otherwise transparent.

The one-at-a-time lock is a :class:`ModelQueue`: first come, first served, re-entrant per
thread like an ``RLock``, and every waiter can see its place in line and leave it. The UI
shares one model between browser sessions; a run waiting behind another shows where it
stands and can be cancelled instead of hanging with nothing on screen.
"""
from __future__ import annotations

import threading
import time
from collections import deque
from contextlib import contextmanager
from typing import Any, Iterator, Sequence

from . import batching
from .base import GenParams, ModelInfo


class WaitCancelled(Exception):
    """A wait for the model was cancelled before the model was free."""


class Ticket:
    """One caller's place at the model: waiting, then holding it, then done."""

    def __init__(self, queue: "ModelQueue", kind: str, label: str):
        self.queue, self.kind, self.label = queue, kind, label
        self.thread = threading.get_ident()
        self.joined = time.monotonic()
        self.granted: float | None = None
        self.cancelled = False

    @property
    def waiting(self) -> bool:
        return self.queue._is_waiting(self)

    def ahead(self) -> list["Ticket"]:
        """Who is before this ticket: the holder first, then earlier waiters ([] unless waiting)."""
        return self.queue._ahead(self)

    @property
    def position(self) -> int:
        """How many are before this ticket in line (0 when it is not waiting)."""
        return len(self.ahead())

    def cancel(self) -> None:
        """Leave the line; the waiter raises :class:`WaitCancelled`. No effect once granted."""
        self.queue._cancel(self)

    def __repr__(self) -> str:
        return f"Ticket({self.kind}, {self.label!r}, cancelled={self.cancelled})"


class ModelQueue:
    """A fair lock for one model: callers get it in the order they asked, and each waiter
    has a :class:`Ticket` that tells its place and can cancel the wait.

    Usable wherever the ``threading.RLock`` it replaces was (``with queue:``, ``acquire``,
    ``release``): a thread that holds it re-enters without waiting, so a run that holds
    the model for its whole length still makes its own calls through the same lock.
    A plain lock let whichever thread the OS woke first go next, so a waiter could be
    passed over any number of times, and no one could say how long the line was.
    """

    def __init__(self) -> None:
        self._cv = threading.Condition(threading.Lock())
        self._holder: Ticket | None = None
        self._depth = 0
        self._line: deque[Ticket] = deque()

    # -- the ticket API (the UI's runs) --
    def join(self, kind: str = "call", label: str = "") -> Ticket:
        """Take a place in line without waiting; :meth:`wait` then blocks until it is
        this ticket's turn. A thread that holds the model gets it again at once."""
        t = Ticket(self, kind, label)
        with self._cv:
            if self._holder is not None and self._holder.thread == t.thread:
                self._depth += 1
                t.granted = time.monotonic()
            elif self._holder is None and not self._line:
                self._grant(t)
            else:
                self._line.append(t)
        return t

    def wait(self, t: Ticket, timeout: float | None = None) -> bool:
        """Block until ``t`` holds the model (True), ``timeout`` passes (False, ``t`` has
        left the line) or ``t`` is cancelled (:class:`WaitCancelled`)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._cv:
            while t.granted is None:
                if t.cancelled:
                    self._leave(t)
                    raise WaitCancelled("cancelled while waiting for the model")
                if self._holder is None and self._line[0] is t:
                    self._line.popleft()
                    self._grant(t)
                    break
                left = None if deadline is None else deadline - time.monotonic()
                if left is not None and left <= 0:
                    self._leave(t)
                    return False
                self._cv.wait(left)
        return True

    @contextmanager
    def hold(self, kind: str = "call", label: str = "") -> Iterator[Ticket]:
        t = self.join(kind, label)
        self.wait(t)
        try:
            yield t
        finally:
            self.release()

    # -- the lock API --
    def acquire(self, blocking: bool = True, timeout: float = -1) -> bool:
        t = self.join()
        if t.granted is not None:
            return True
        if not blocking:
            with self._cv:
                self._leave(t)
            return False
        return self.wait(t, None if timeout is None or timeout < 0 else timeout)

    def release(self) -> None:
        with self._cv:
            if self._holder is None or self._holder.thread != threading.get_ident():
                raise RuntimeError("cannot release a model queue this thread does not hold")
            self._depth -= 1
            if self._depth == 0:
                self._holder = None
                self._cv.notify_all()

    def __enter__(self) -> bool:
        return self.acquire()

    def __exit__(self, *exc: Any) -> None:
        self.release()

    # -- what the page shows --
    @property
    def holder(self) -> Ticket | None:
        return self._holder

    def line(self) -> list[Ticket]:
        """The waiters, first first."""
        with self._cv:
            return list(self._line)

    # -- internals (under self._cv) --
    def _grant(self, t: Ticket) -> None:
        self._holder, self._depth, t.granted = t, 1, time.monotonic()

    def _leave(self, t: Ticket) -> None:
        try:
            self._line.remove(t)
        except ValueError:
            pass
        self._cv.notify_all()      # the next one may now be at the head

    def _is_waiting(self, t: Ticket) -> bool:
        with self._cv:
            return t in self._line

    def _ahead(self, t: Ticket) -> list[Ticket]:
        with self._cv:
            if t not in self._line:
                return []
            before = list(self._line)[:self._line.index(t)]
            return ([self._holder] if self._holder is not None else []) + before

    def _cancel(self, t: Ticket) -> None:
        with self._cv:
            if t.granted is None:
                t.cancelled = True
                self._cv.notify_all()


class LockedBackend:
    """Serialises calls to ``inner`` with ``lock`` (a :class:`ModelQueue` of its own by
    default)."""

    def __init__(self, inner: Any, lock: Any = None):
        self.inner = inner
        self._lock = lock if lock is not None else ModelQueue()

    @property
    def queue(self) -> ModelQueue | None:
        """The fair queue in front of the model (None when given a plain lock)."""
        return self._lock if isinstance(self._lock, ModelQueue) else None

    @property
    def info(self) -> ModelInfo:
        return self.inner.info

    def generate(self, messages: Any, params: GenParams | None = None, on_token: Any = None) -> Any:
        with self._lock:
            if on_token is None:
                return self.inner.generate(messages, params)
            return self.inner.generate(messages, params, on_token=on_token)

    def score(self, context: Any, continuation: str) -> Any:
        with self._lock:
            return self.inner.score(context, continuation)

    def generate_many(self, requests: Sequence[Any], **kw: Any) -> list[Any]:
        with self._lock:
            return batching.generate_many(self.inner, requests, **kw)

    def score_many(self, requests: Sequence[Any], **kw: Any) -> list[Any]:
        with self._lock:
            return batching.score_many(self.inner, requests, **kw)

    def count_tokens(self, text: str) -> int:
        with self._lock:
            return self.inner.count_tokens(text)

    def __getattr__(self, name: str) -> Any:       # backend-specific extras
        return getattr(self.inner, name)
