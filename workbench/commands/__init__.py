"""CLI subcommand modules (see workbench/cli.py)."""
