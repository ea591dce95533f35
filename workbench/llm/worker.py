"""The model worker: one llama.cpp model in a process of its own, serving its parent.

Started by :class:`workbench.llm.isolated.IsolatedBackend` as
``python -m workbench.llm.worker FD``, where FD is its end of a socket pair. A native
crash here (a segfault in llama.cpp) ends only this process; the parent sees the socket
close, reports the signal and starts a new worker on the next call.

Protocol (pickled tuples over a ``multiprocessing.connection.Connection``):

* parent: ``("init", kwargs)`` -> worker: ``("ok", ModelInfo)`` or ``("err", exception)``
* parent: ``("call", name, args, kwargs, stream)`` -> worker: zero or more
  ``("token", Token)`` when ``stream`` is true, then ``("ok", result)`` or ``("err", exc)``
* parent: ``("close",)`` or closing its end -> the worker exits.
"""
from __future__ import annotations

import os
import pickle
import signal
import sys
from multiprocessing.connection import Connection
from typing import Any


def portable(e: BaseException) -> BaseException:
    """The exception itself when it survives pickling, else an LLMError with its text."""
    from .base import LLMError
    try:
        pickle.loads(pickle.dumps(e))
        return e
    except Exception:  # noqa: BLE001 - any unpicklable exception becomes a plain message
        return LLMError(f"{type(e).__name__}: {e}")


def serve(conn: Connection) -> None:
    # llama_cpp before numpy, which this fresh process has not loaded yet: with a CUDA build
    # on an H200 machine, loading a model crashed whenever numpy came first (README, "GPU")
    import llama_cpp  # noqa: F401
    from .llama_cpp_backend import LlamaCppBackend
    try:
        msg = conn.recv()
    except EOFError:
        return
    try:
        be = LlamaCppBackend(**msg[1])
    except Exception as e:  # noqa: BLE001 - reported to the parent, which raises it
        conn.send(("err", portable(e)))
        return
    conn.send(("ok", be.info))
    while True:
        try:
            msg = conn.recv()
        except (EOFError, OSError):
            return                      # the parent closed its end or died
        if msg[0] != "call":
            return
        _, name, args, kwargs, stream = msg
        try:
            if name.startswith("_"):
                raise AttributeError(f"the model worker does not serve {name!r}")
            if stream:
                kwargs = {**kwargs, "on_token": lambda t: conn.send(("token", t))}
            reply: Any = ("ok", getattr(be, name)(*args, **kwargs))
        except Exception as e:  # noqa: BLE001 - LLM errors travel back as themselves
            reply = ("err", portable(e))
        conn.send(reply)


def _exit_with_parent(parent: int, every_s: float = 1.0) -> None:
    """A worker whose parent was killed would otherwise finish its generation (minutes, on a
    large model) before it notices the closed socket; it exits within a second instead."""
    import threading
    import time

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(every_s)
        os._exit(0)
    threading.Thread(target=watch, daemon=True, name="parent-watch").start()


def main() -> None:
    # Ctrl-C in a terminal reaches the whole process group; the parent decides what stops.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _exit_with_parent(os.getppid())
    fd = int(sys.argv[1])
    conn = Connection(fd)
    try:
        serve(conn)
    finally:
        conn.close()
        os._exit(0)    # skip interpreter teardown of the native model: nothing is left to save


if __name__ == "__main__":
    main()
