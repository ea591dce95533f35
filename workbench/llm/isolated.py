"""A llama.cpp model in a worker process, so a native crash cannot take the caller with it.

llama.cpp runs native code that can die with a signal (its AMX path segfaults on some
CPUs; a bad GGUF or an out-of-memory kill does the same). In-process, that ends the
Streamlit server, a CLI command half-way through its store writes, or the test runner.
:class:`IsolatedBackend` keeps the model in a child process
(:mod:`workbench.llm.worker`) and forwards each call over a socket pair. When the child
dies, the call in flight raises :class:`~workbench.llm.base.ModelCrashedError` naming the
signal ("model process crashed: SIGSEGV") and the next call starts a fresh worker, so
a run fails cleanly and is stored as failed, and the next one works.

What it costs is measured by ``benchmarks/llm_throughput.py``: one pickled request and
reply per call, and one small message per token when the caller streams tokens.
Per-token logprobs, grammars and the worker's prefix cache are unchanged: they live in
the worker with the model, and consecutive calls go to the same worker.
"""
from __future__ import annotations

import collections
import os
import socket
import subprocess
import sys
import threading
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any, Callable, Sequence

from .. import paths
from .base import (Completion, GenParams, LLMError, Message, ModelCrashedError, ModelInfo,
                   ScoredText, Token)
from .gguf import read_header
from .native import signal_name

_TAIL_LINES = 30


class IsolatedBackend:
    """The :class:`~workbench.llm.llama_cpp_backend.LlamaCppBackend` interface, served by a
    worker process that is restarted on demand after it dies."""

    def __init__(self, model_path: str | Path, *, name: str | None = None, **backend_kw: Any):
        path = Path(model_path)
        read_header(path)          # missing, truncated or non-GGUF: a clear error, no process
        self._kw = {"model_path": str(path), **backend_kw}
        self._name = name
        self._lock = threading.Lock()
        self._proc: subprocess.Popen | None = None
        self._conn: Connection | None = None
        self._tail: collections.deque[str] = collections.deque(maxlen=_TAIL_LINES)
        self.restarts = 0          # workers started after the first (crashes, restarts)
        self.crashes: list[str] = []
        self.info = ModelInfo(name=name or path.stem)
        with self._lock:
            self._start()

    # -- process management --
    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc is not None else None

    @property
    def alive(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def _start(self) -> None:
        ours, theirs = socket.socketpair()
        env = dict(os.environ)
        root = str(paths.PROJECT_ROOT)
        env["PYTHONPATH"] = root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
        try:
            proc = subprocess.Popen(
                [sys.executable, "-m", "workbench.llm.worker", str(theirs.fileno())],
                pass_fds=[theirs.fileno()], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT, env=env, cwd=root)
        finally:
            theirs.close()
        self._tail.clear()
        threading.Thread(target=self._read_output, args=(proc,), daemon=True,
                         name=f"model-worker-{proc.pid}-output").start()
        self._proc, self._conn = proc, Connection(ours.detach())
        try:
            kind, payload = self._exchange(("init", self._kw), None)
        except ModelCrashedError as e:
            raise ModelCrashedError(f"{e} (while loading {Path(self._kw['model_path']).name})",
                                    e.cause) from None
        if kind == "err":
            self._stop(kill=True)
            raise payload
        info: ModelInfo = payload
        info.extra = {**info.extra, "isolated": True, "worker_pid": proc.pid}
        if self._name:
            info.name = self._name
        self.info = info

    def _read_output(self, proc: subprocess.Popen) -> None:
        """Keep the worker's last lines (llama.cpp prints why it aborts) for crash messages."""
        assert proc.stdout is not None
        for raw in proc.stdout:
            line = raw.decode("utf-8", "replace").rstrip()
            if line:
                self._tail.append(line)

    def _crashed(self) -> ModelCrashedError:
        proc = self._proc
        code = None
        if proc is not None:
            try:
                code = proc.wait(timeout=5)
            except subprocess.TimeoutExpired:   # the socket broke but the process lives on
                proc.kill()
                code = proc.wait()
        self._drop_conn()
        self._proc = None
        cause = signal_name(code) if code is not None else "unknown cause"
        last = next((ln for ln in reversed(self._tail) if ln.strip()), "")
        msg = f"model process crashed: {cause}"
        if last:
            msg += f" (its last output: {last[:300]})"
        msg += ". The model is restarted for the next call."
        self.crashes.append(cause)
        return ModelCrashedError(msg, cause)

    def _drop_conn(self) -> None:
        if self._conn is not None:
            try:
                self._conn.close()
            except OSError:
                pass
            self._conn = None

    def _stop(self, kill: bool = False) -> None:
        proc = self._proc
        if proc is not None and proc.poll() is None:
            if not kill and self._conn is not None:
                try:
                    self._conn.send(("close",))
                except OSError:
                    pass
            self._drop_conn()
            try:
                proc.wait(timeout=0.2 if kill else 5)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        self._drop_conn()
        self._proc = None

    def restart(self) -> None:
        """Stop the worker (if any) and load the model in a fresh one."""
        with self._lock:
            self._stop()
            self.restarts += 1
            self._start()

    def close(self) -> None:
        with self._lock:
            self._stop()

    def __del__(self) -> None:         # a dropped backend must not leave its worker behind
        try:
            self._stop(kill=True)
        except Exception:  # noqa: BLE001 - interpreter shutdown
            pass

    # -- calls --
    def _exchange(self, msg: tuple, on_token: Callable[[Token], None] | None) -> tuple[str, Any]:
        assert self._conn is not None
        try:
            self._conn.send(msg)
            while True:
                kind, payload = self._conn.recv()
                if kind != "token":
                    return kind, payload
                if on_token is not None:
                    on_token(payload)
        except (EOFError, OSError):
            raise self._crashed() from None
        except BaseException:
            # Interrupted half-way (Ctrl-C, a failing token callback): the worker's reply
            # would answer the next request, so this worker is replaced.
            self._stop(kill=True)
            raise

    def call(self, name: str, *args: Any, on_token: Callable[[Token], None] | None = None,
             **kwargs: Any) -> Any:
        """Run ``backend.name(*args, **kwargs)`` in the worker (starting one if none runs)."""
        with self._lock:
            if self._proc is not None and self._proc.poll() is not None:
                raise self._crashed()       # died between calls: this call reports it
            if self._proc is None:
                self.restarts += 1
                self._start()
            kind, payload = self._exchange(("call", name, args, kwargs, on_token is not None),
                                           on_token)
        if kind == "err":
            raise payload
        return payload

    def generate(self, messages: Sequence[Message] | str, params: GenParams | None = None,
                 on_token: Callable[[Token], None] | None = None) -> Completion:
        return self.call("generate", messages, params, on_token=on_token)

    def score(self, context: Sequence[Message] | str, continuation: str) -> ScoredText:
        return self.call("score", context, continuation)

    def count_tokens(self, text: str) -> int:
        return self.call("count_tokens", text)

    def render(self, messages: Sequence[Message] | str, chat: bool = True) -> tuple[str, list[str]]:
        return self.call("render", messages, chat)

    def tokenize(self, text: str) -> list[int]:
        return self.call("tokenize", text)

    @property
    def n_ctx(self) -> int | None:
        return self.info.n_ctx

    def __getattr__(self, name: str) -> Any:
        """Other public backend calls (batched generation, ...) go to the worker by name."""
        from .llama_cpp_backend import LlamaCppBackend
        if name.startswith("_") or not callable(getattr(LlamaCppBackend, name, None)):
            raise AttributeError(name)
        return lambda *a, **kw: self.call(name, *a, **kw)


def is_crash(error: str | None) -> bool:
    """Whether a stored run error says its model process died."""
    return bool(error) and "model process crashed" in str(error)


__all__ = ["IsolatedBackend", "LLMError", "ModelCrashedError", "is_crash"]
