"""`python -m workbench ...`: subcommands live in workbench/commands/, one module per area.

Each module defines ``register(subparsers)``, adding its subcommands with a
``func(args) -> int`` default. Errors the user can fix print one clear line
and exit 2, never a traceback.
"""
from __future__ import annotations

import argparse
import importlib
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
    return ap


def main(argv: list[str] | None = None) -> int:
    ap = build_parser()
    args = ap.parse_args(argv)
    if not getattr(args, "func", None):
        ap.print_help()
        return 1
    try:
        return int(args.func(args) or 0)
    except (LLMError, StoreError, ConfigError, FileNotFoundError, LookupError, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
