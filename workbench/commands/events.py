"""events: the declared event types (workbench/events.py) as a list, JSON or docs/events.md."""
from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("events", help="list the declared event types, their payload keys and "
                       "meaning (--markdown writes docs/events.md)")
    g = p.add_mutually_exclusive_group()
    g.add_argument("--markdown", action="store_true",
                   help="the docs page: python -m workbench events --markdown > docs/events.md")
    g.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_events)


def cmd_events(args: argparse.Namespace) -> int:
    from .. import events as E
    specs = E.all_specs()
    if args.markdown:
        sys.stdout.write(E.markdown())
    elif args.json:
        print(json.dumps([asdict(s) for s in specs.values()], indent=1))
    else:
        for s in specs.values():
            req = ", ".join(s.required) or "-"
            print(f"{s.type:<28} {s.source:<26} {s.meaning}")
            print(f"{'':<28} required: {req}")
    return 0
