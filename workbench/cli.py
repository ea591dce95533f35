"""`python -m workbench ...`: subcommands live in workbench/commands/, one module per area,
and in the ``commands.py`` of a method package that has one (``frag``).

Each module defines ``register(subparsers)``, adding its subcommands with a
``func(args) -> int`` default. Errors the user can fix print one clear line
and exit 2, never a traceback.
"""
from __future__ import annotations

import argparse
import errno
import importlib
import importlib.util
import pkgutil
import sys

from . import commands
from .config import ConfigError
from .llm.base import LLMError
from .store import StoreError


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="python -m workbench",
                                 description="Graph- and plan-based RAG research workbench")
    sub = ap.add_subparsers(dest="command", metavar="COMMAND")
    for mod in sorted(pkgutil.iter_modules(commands.__path__), key=lambda m: m.name):
        if not mod.name.startswith("_"):
            importlib.import_module(f"{commands.__name__}.{mod.name}").register(sub)
    # a method package may bring its own commands (workbench/methods/<name>/commands.py)
    from . import methods
    for mod in sorted(pkgutil.iter_modules(methods.__path__), key=lambda m: m.name):
        if mod.ispkg and importlib.util.find_spec(f"{methods.__name__}.{mod.name}.commands"):
            importlib.import_module(f"{methods.__name__}.{mod.name}.commands").register(sub)
    return ap


# What to do about the OS errors a user can meet, by errno; the rest get "check the path".
_OS_FIXES = {
    errno.EISDIR: "give a file path, not a folder",
    errno.ENOTDIR: "a file is where a folder is needed; move it aside or choose another path",
    errno.EEXIST: "a file is where a folder is needed; move it aside or choose another path",
    errno.EACCES: "make it readable/writable for you or choose another path",
    errno.EPERM: "make it readable/writable for you or choose another path",
    errno.EROFS: "the filesystem is read-only; choose a path on a writable one",
    errno.ENOENT: "check the path",
    errno.ENOSPC: "free some disk space or choose another path",
}


def os_error_line(e: OSError) -> str:
    """One line for an OS error: the path, what went wrong and what to do."""
    if e.strerror is None or e.filename is None:    # our own message, or no path (a socket)
        return str(e)
    path = e.filename
    fix = getattr(e, "fix", None) or _OS_FIXES.get(e.errno or 0, "check the path")
    return f"cannot use {path}: {e.strerror}; {fix}"


def main(argv: list[str] | None = None) -> int:
    ap = build_parser()
    args = ap.parse_args(argv)
    if not getattr(args, "func", None):
        ap.print_help()
        return 1
    try:
        return int(args.func(args) or 0)
    except (LLMError, StoreError, ConfigError, LookupError, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except OSError as e:
        print(f"error: {os_error_line(e)}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
