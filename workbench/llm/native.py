"""Facts about the installed llama.cpp build, and a smoke test that survives its crashes.

llama.cpp's AMX matrix-multiply path (built in when ``-march=native`` meets a CPU with
Intel AMX) crashes on every decode of two or more tokens in one batch; single-token
decodes work, so only a multi-token prompt shows it. ``scripts/setup.sh`` builds with
AMX off and then runs :func:`smoke` here, which generates from a multi-token prompt in a
child process and reports how that process ended instead of dying with it.

``python -m workbench.llm.native [--smoke MODEL]`` prints the build's system info (and
runs the smoke test); it exits 1 when the build has AMX on or the smoke test fails.
"""
from __future__ import annotations

import re
import signal
import subprocess
import sys
from dataclasses import dataclass

SMOKE_PROMPT = "Question: Who directed the film Inception? Answer in one short sentence."


def system_info() -> str:
    """llama.cpp's own description of the build: backends and CPU features (``X = 1``)."""
    import llama_cpp
    raw = llama_cpp.llama_print_system_info()
    return raw.decode("utf-8", "replace") if isinstance(raw, bytes) else str(raw)


def features(info: str) -> dict[str, bool]:
    """``{"AVX2": True, "AMX_INT8": False, ...}`` from a system-info string."""
    return {k: v == "1" for k, v in re.findall(r"([A-Z0-9_]+) = ([01])\b", info)}


def amx_enabled(info: str | None = None) -> bool:
    return features(info if info is not None else system_info()).get("AMX_INT8", False)


def cpu_summary(info: str) -> str:
    on = [k for k, v in features(info).items() if v]
    return ", ".join(on) or "(none reported)"


def signal_name(returncode: int) -> str:
    """``-11`` -> ``SIGSEGV``; a positive code -> ``exit code N``."""
    if returncode < 0:
        try:
            return signal.Signals(-returncode).name
        except ValueError:
            return f"signal {-returncode}"
    return f"exit code {returncode}"


@dataclass
class SmokeResult:
    ok: bool
    returncode: int
    output: str          # the child's last lines (its text, or what it printed before dying)
    info: str            # system info, read in this process (reading it never decodes)

    def message(self) -> str:
        if self.ok:
            return f"llama.cpp smoke generation OK: {self.output.strip()[-200:]!r}"
        how = signal_name(self.returncode)
        lines = [
            f"The llama.cpp smoke generation died with {how}: this llama-cpp-python build "
            f"crashes on a multi-token decode on this CPU.",
            f"CPU features of the build: {cpu_summary(self.info)}",
        ]
        if amx_enabled(self.info):
            lines.append("The build has AMX_INT8 = 1; llama.cpp's AMX path is known to crash "
                         "here. Rebuild with AMX off: rm -rf .venv && ./scripts/setup.sh "
                         "(set-up passes -mno-amx-int8 and skips pip's wheel cache).")
        else:
            lines.append("Rebuild llama-cpp-python from source without pip's cache: rm -rf "
                         ".venv && ./scripts/setup.sh; if it still dies, report the CPU "
                         "features above with the child's output below.")
        if self.output.strip():
            lines.append("Child output (last lines):\n" + self.output.strip()[-1500:])
        return "\n".join(lines)


def smoke(model: str, *, max_tokens: int = 8, timeout: float = 300.0) -> SmokeResult:
    """Generate ``max_tokens`` tokens from a multi-token prompt in a child process."""
    info = system_info()
    code = ("import sys; from workbench.llm.native import _child_generate; "
            "_child_generate(sys.argv[1], int(sys.argv[2]))")
    try:
        p = subprocess.run([sys.executable, "-c", code, model, str(max_tokens)],
                           capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired as e:
        out = (e.stdout or "") + (e.stderr or "") if isinstance(e.stdout, str) else ""
        return SmokeResult(False, -int(signal.SIGKILL), out + "\n(timed out)", info)
    return SmokeResult(p.returncode == 0, p.returncode, p.stdout + p.stderr, info)


def _child_generate(model: str, max_tokens: int) -> None:
    """Runs in the smoke child: load in-process (no isolation: this is what is tested)."""
    from .base import GenParams
    from .llama_cpp_backend import LlamaCppBackend
    from .registry import resolve
    be = LlamaCppBackend(resolve(model), n_ctx=512)
    c = be.generate(SMOKE_PROMPT, GenParams(max_tokens=max_tokens, chat=False))
    if c.prompt_tokens < 2 or c.completion_tokens < 1:
        print(f"unexpected: {c.prompt_tokens} prompt and {c.completion_tokens} generated tokens")
        sys.exit(3)
    print(f"{c.prompt_tokens} prompt tokens, {c.completion_tokens} generated: {c.text!r}")


def main(argv: list[str] | None = None) -> int:
    import argparse
    ap = argparse.ArgumentParser(prog="python -m workbench.llm.native",
                                 description="Check the installed llama.cpp build.")
    ap.add_argument("--smoke", metavar="MODEL", help="also generate from a multi-token prompt "
                    "with this bundled model or .gguf path, in a child process")
    args = ap.parse_args(argv)
    info = system_info()
    print(f"llama.cpp build: {cpu_summary(info)}")
    ok = True
    if args.smoke:
        r = smoke(args.smoke)
        print(r.message(), file=sys.stdout if r.ok else sys.stderr)
        ok = r.ok
    if amx_enabled(info):
        print("error: this llama-cpp-python build has AMX_INT8 = 1, whose matrix-multiply path "
              "crashes on multi-token decodes on some CPUs. Rebuild it with scripts/setup.sh "
              "(AMX off).", file=sys.stderr)
        ok = False
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
