"""Answer metrics: SQuAD EM/F1, containment EM, CRP-RAG's ROUGE-L "F1" and Acc-LM,
FRAG's Hits@1, the CRAG three-way label, FEVER label accuracy, and node-level scores
against gold structure (sub-question decompositions, gold KG paths).

Every function here is pure and cheap except :class:`LLMJudge`, which calls a backend.
A refusal (``trace.answer["refused"]``) scores 0 on every answer metric and is
"missing" for CRAG; :func:`score_answer` applies that rule in one place.

This module is the one place where answers are normalised and matched: the methods
(``workbench.methods.answers``), the benchmarks, triage and the pages call
:func:`normalize_answer` / :func:`contains_match` from here.

Metric profiles (:data:`METRIC_PROFILES`; stored with every eval as
``spec.metric_profile``; an eval stored without one computed ``lenient``):

``official`` (the default)
    Exactly the normalisation of HotpotQA's ``hotpot_evaluate_v1.py`` and MuSiQue's
    ``metrics/answer.py`` (SQuAD's): lower-case, delete the ASCII characters of
    ``string.punctuation``, remove the articles a/an/the, collapse whitespace. No Unicode
    folding: "O’Brien" (typographic apostrophe) does not match "O'Brien". EM and token F1
    are the max over the gold answers; F1 follows HotpotQA's rule that a prediction or
    gold that normalises to ``yes``, ``no`` or ``noanswer`` scores F1 0 unless both are
    equal; two answers with no tokens score F1 1 (MuSiQue/SQuAD 2.0).
``lenient``
    What the workbench computed before profiles existed: NFKC-fold the text first
    (full-width letters, ligatures, non-breaking spaces) and also delete typographic
    punctuation (‘ ’ “ ” – — …), then as ``official``, without the yes/no rule. More
    generous than every official script; kept for old evals and for diagnostics that look
    for a gold answer inside passages (triage, structure scores).
``crp-paper``
    CRP-RAG's Eqs. 14-15: "EM" is containment (:func:`contains_match`: a normalised gold
    answer occurs, as whole tokens, in the normalised prediction) and "F1" is the
    thresholded ROUGE-L (:func:`rouge_l_f1`, 1 iff 2·LCS/(|pred|+|gold|) >= tau_f1).
    The paper does not say how it normalises; this profile uses ``official``'s.

Containment is whole-token in every profile ("1" is not in "1999"); FlashRAG's ``acc``
is a plain substring test, so it can be a little higher. Gold answers that are empty or
blank are ignored (``""`` and ``[""]`` both mean "no gold").
"""
from __future__ import annotations

import json
import math
import re
import string
import time
import unicodedata
from collections import Counter
from dataclasses import asdict, dataclass, field
from typing import Any, Iterable, Sequence

# ---------------------------------------------------------------------------
# metric profiles and normalisation
# ---------------------------------------------------------------------------

METRIC_PROFILES = ("official", "lenient", "crp-paper")
DEFAULT_PROFILE = "official"
LEGACY_PROFILE = "lenient"      # what an eval stored without a profile computed

_ARTICLES = re.compile(r"\b(a|an|the)\b", re.UNICODE)
_OFFICIAL_PUNCT = frozenset(string.punctuation)
_TYPOGRAPHIC = frozenset({"‘", "’", "“", "”", "–", "—", "…"})
_LENIENT_PUNCT = _OFFICIAL_PUNCT | _TYPOGRAPHIC
_YES_NO = ("yes", "no", "noanswer")


def check_profile(profile: str | None) -> str:
    """The profile name, or ValueError naming the valid ones."""
    if profile not in METRIC_PROFILES:
        raise ValueError(f"unknown metric profile {profile!r}; valid: {', '.join(METRIC_PROFILES)}")
    return profile


def profile_of(spec: dict[str, Any] | None) -> str:
    """The metric profile an eval's stored spec was scored with (``lenient`` when the spec
    predates profiles)."""
    p = (spec or {}).get("metric_profile")
    return p if p in METRIC_PROFILES else LEGACY_PROFILE


def profile_caption(spec: dict[str, Any] | None) -> str:
    """``metrics: official profile`` (plus the CRAG profile and tau_f1 when they matter):
    what an eval's EM/F1/contains columns mean, for ``eval show`` and the Evaluate page."""
    spec = spec or {}
    prof = profile_of(spec)
    out = f"metrics: {prof} profile"
    if "metric_profile" not in spec:
        out += " (stored before profiles existed)"
    if spec.get("crag_profile") not in (None, "ragx"):
        out += f" · CRAG {spec['crag_profile']}"
    tau = spec.get("tau_f1")
    if prof == "crp-paper" or tau not in (None, DEFAULT_TAU_F1):
        out += f" · tau_f1 {DEFAULT_TAU_F1 if tau is None else tau}"
    return out


def normalize_answer(s: str | None, profile: str = DEFAULT_PROFILE) -> str:
    """SQuAD normalisation: lower-case, drop punctuation and articles, collapse spaces.
    ``lenient`` first folds NFKC and also drops typographic punctuation (module docstring)."""
    if not s:
        return ""
    s = str(s)
    if profile == "lenient":
        s = unicodedata.normalize("NFKC", s)
        punct = _LENIENT_PUNCT
    else:
        check_profile(profile)
        punct = _OFFICIAL_PUNCT
    s = s.lower()
    s = "".join(ch for ch in s if ch not in punct)
    s = _ARTICLES.sub(" ", s)
    return " ".join(s.split())


def tokens(s: str | None, profile: str = DEFAULT_PROFILE) -> list[str]:
    return normalize_answer(s, profile).split()


def _golds(golds: str | Iterable[str] | None) -> list[str]:
    """Gold answers as a list, blank ones dropped: ``""`` and ``[""]`` are both no gold."""
    if golds is None:
        return []
    if isinstance(golds, str):
        golds = [golds]
    return [str(g) for g in golds if g is not None and str(g).strip() != ""]


# ---------------------------------------------------------------------------
# SQuAD exact match / token F1 / containment
# ---------------------------------------------------------------------------

def _contains(hay: str, needle: str) -> bool:
    """Whole-token containment of normalised strings ("1" is not in "1999")."""
    if not needle:
        return False
    return f" {needle} " in f" {hay} "


def contains_match(pred: str | None, golds: str | Iterable[str],
                   profile: str = DEFAULT_PROFILE) -> float:
    """1.0 if a normalised gold answer appears, as whole tokens, in the normalised
    prediction (CRP-RAG's "EM"; the benchmarks' "accuracy (contains)")."""
    prof = "official" if profile == "crp-paper" else profile
    p = normalize_answer(pred, prof)
    return float(any(_contains(p, normalize_answer(g, prof)) for g in _golds(golds)))


def _squad_em(pred: str | None, golds: str | Iterable[str], profile: str) -> float:
    p = normalize_answer(pred, profile)
    return float(any(p == normalize_answer(g, profile) for g in _golds(golds)))


def exact_match(pred: str | None, golds: str | Iterable[str],
                profile: str = DEFAULT_PROFILE) -> float:
    """1.0 if the normalised prediction equals any normalised gold answer; under
    ``crp-paper`` the paper's EM, which is containment (Eq. 14)."""
    if check_profile(profile) == "crp-paper":
        return contains_match(pred, golds, profile)
    return _squad_em(pred, golds, profile)


def _f1(pred_toks: Sequence[str], gold_toks: Sequence[str]) -> float:
    if not pred_toks or not gold_toks:
        return float(pred_toks == gold_toks)
    common = Counter(pred_toks) & Counter(gold_toks)
    same = sum(common.values())
    if same == 0:
        return 0.0
    prec, rec = same / len(pred_toks), same / len(gold_toks)
    return 2 * prec * rec / (prec + rec)


def _official_f1(pred: str, gold: str) -> float:
    """HotpotQA's ``f1_score``: a yes/no/noanswer side that differs scores 0."""
    np_, ng = normalize_answer(pred, "official"), normalize_answer(gold, "official")
    if (np_ in _YES_NO or ng in _YES_NO) and np_ != ng:
        return 0.0
    return _f1(np_.split(), ng.split())


def token_f1(pred: str | None, golds: str | Iterable[str], profile: str = DEFAULT_PROFILE,
             tau: float | None = None) -> float:
    """SQuAD token-overlap F1, the max over gold answers (``official``: with HotpotQA's
    yes/no/noanswer rule); under ``crp-paper`` the paper's thresholded ROUGE-L (Eq. 15)."""
    if check_profile(profile) == "crp-paper":
        return rouge_l_f1(pred, golds, DEFAULT_TAU_F1 if tau is None else tau, profile)
    gs = _golds(golds)
    if not gs:
        return 0.0
    if profile == "official":
        return max(_official_f1(pred or "", g) for g in gs)
    pt = tokens(pred, profile)
    return max(_f1(pt, tokens(g, profile)) for g in gs)


# ---------------------------------------------------------------------------
# CRP-RAG: ROUGE-L and the thresholded "F1"
# ---------------------------------------------------------------------------

DEFAULT_TAU_F1 = 0.5   # the paper does not report its cut-off (crp-rag.md §4); labelled [SPEC CHOICE]


def lcs_len(a: Sequence[str], b: Sequence[str]) -> int:
    if not a or not b:
        return 0
    if len(a) < len(b):
        a, b = b, a
    prev = [0] * (len(b) + 1)
    for x in a:
        cur = [0] * (len(b) + 1)
        for j, y in enumerate(b, 1):
            cur[j] = prev[j - 1] + 1 if x == y else max(prev[j], cur[j - 1])
        prev = cur
    return prev[-1]


def rouge_l(pred: str | None, golds: str | Iterable[str], profile: str = DEFAULT_PROFILE) -> float:
    """ROUGE-L = 2·LCS/(|pred| + |gold|) over normalised tokens, max over golds
    (``crp-paper`` normalises as ``official``)."""
    prof = "official" if check_profile(profile) == "crp-paper" else profile
    pt = tokens(pred, prof)
    best = 0.0
    for g in _golds(golds):
        gt = tokens(g, prof)
        if pt or gt:
            best = max(best, 2.0 * lcs_len(pt, gt) / (len(pt) + len(gt)))
    return best


def rouge_l_f1(pred: str | None, golds: str | Iterable[str], tau: float = DEFAULT_TAU_F1,
               profile: str = DEFAULT_PROFILE) -> float:
    """CRP-RAG's per-example "F1" (Eq. 15): 1.0 iff ROUGE-L >= tau."""
    return float(rouge_l(pred, golds, profile) >= tau)


# ---------------------------------------------------------------------------
# FRAG: Hits@1 (KG answers)
# ---------------------------------------------------------------------------

def substring_match(pred: str | None, golds: str | Iterable[str],
                    profile: str = DEFAULT_PROFILE) -> float:
    """1.0 if a normalised gold answer is a substring of the normalised prediction (no
    word boundaries, unlike :func:`contains_match`): FRAG's lenient Hits@1."""
    prof = "official" if check_profile(profile) == "crp-paper" else profile
    p = normalize_answer(pred, prof)
    return float(any(g and g in p for g in (normalize_answer(x, prof) for x in _golds(golds))))


def hits_at_1(pred: str | None, golds: str | Iterable[str], profile: str = DEFAULT_PROFILE) -> float:
    """Any gold entity name or alias, normalised, occurs in the normalised first line
    of the output (FRAG's evaluation code; substring, so lenient)."""
    first = (pred or "").strip().splitlines()[0] if (pred or "").strip() else ""
    return substring_match(first, golds, profile)


def answer_metrics(pred: str | None, golds: str | Iterable[str], profile: str = DEFAULT_PROFILE,
                   tau_f1: float = DEFAULT_TAU_F1) -> dict[str, Any]:
    """Every gold-string metric of one prediction under one profile: ``em`` and ``f1`` as
    the profile defines them, ``contains``, ``rouge_l``, ``rouge_f1`` and ``hits1``."""
    check_profile(profile)
    return {"profile": profile,
            "em": exact_match(pred, golds, profile),
            "f1": token_f1(pred, golds, profile, tau=tau_f1),
            "contains": contains_match(pred, golds, profile),
            "rouge_l": rouge_l(pred, golds, profile),
            "rouge_f1": rouge_l_f1(pred, golds, tau_f1, profile),
            "hits1": hits_at_1(pred, golds, profile)}


# ---------------------------------------------------------------------------
# FEVER label accuracy
# ---------------------------------------------------------------------------

FEVER_LABELS = ("SUPPORTS", "REFUTES", "NOT ENOUGH INFO")
_FEVER_PATTERNS = [
    ("NOT ENOUGH INFO", re.compile(r"not enough info|insufficient|cannot be (?:determined|verified)"
                                   r"|unverifiable|\bnei\b|not enough evidence|unknown", re.I)),
    ("REFUTES", re.compile(r"\brefute[sd]?\b|\bfalse\b|\bcontradict|\bincorrect\b|\bno\b", re.I)),
    ("SUPPORTS", re.compile(r"\bsupport(?:s|ed)?\b|\btrue\b|\bcorrect\b|\byes\b", re.I)),
]


def fever_label(text: str | None) -> str | None:
    """Map free text to a FEVER label: the earliest label cue in the text wins."""
    if not text:
        return None
    best: tuple[int, str] | None = None
    for label, pat in _FEVER_PATTERNS:
        m = pat.search(text)
        if m and (best is None or m.start() < best[0]):
            best = (m.start(), label)
    return best[1] if best else None


def fever_accuracy(pred: str | None, gold_label: str) -> float:
    g = fever_label(gold_label) or (gold_label or "").upper()
    return float(fever_label(pred) == g)


def is_fever_question(answers: Sequence[str], qtype: str = "", meta: dict | None = None) -> bool:
    meta = meta or {}
    if meta.get("task") == "fever" or meta.get("dataset") == "fever" or qtype.lower() == "fever":
        return True
    return bool(answers) and all(a.upper() in FEVER_LABELS for a in answers)


# ---------------------------------------------------------------------------
# CRAG: accurate / missing / hallucinated
# ---------------------------------------------------------------------------

CRAG_POINTS = {"accurate": 1, "missing": 0, "hallucinated": -1}
_IDK = re.compile(r"i\s+(?:don'?t|do\s+not)\s+know", re.I)
_MONTHS = {m: i for i, m in enumerate(
    ["january", "february", "march", "april", "may", "june", "july", "august", "september",
     "october", "november", "december"], 1)}
_MONTHS.update({k[:3]: v for k, v in list(_MONTHS.items())})
_DATE_MDY = re.compile(r"\b([a-z]{3,9})\.?\s+(\d{1,2})(?:st|nd|rd|th)?,?\s+(\d{4})\b")
_DATE_DMY = re.compile(r"\b(\d{1,2})(?:st|nd|rd|th)?\s+([a-z]{3,9})\.?,?\s+(\d{4})\b")
_NUM = re.compile(r"(?<![\w.])(\d{1,3}(?:,\d{3})+|\d+)(?:\.(\d+))?(?![\w])")


def says_idk(pred: str | None) -> bool:
    """Paper mode: the prediction *contains* "i don't know" (curly apostrophes and
    "i do not know" accepted)."""
    p = (pred or "").replace("’", "'").replace("‘", "'").lower()
    return bool(_IDK.search(p))


def normalize_crag(s: str | None) -> str:
    """The ``normalised`` judge mode: dates to ISO, numbers without separators or
    trailing zeros, then SQuAD normalisation."""
    t = (s or "").lower()

    def mdy(m: re.Match) -> str:
        mon = _MONTHS.get(m.group(1))
        return f"{m.group(3)}-{mon:02d}-{int(m.group(2)):02d}" if mon else m.group(0)

    def dmy(m: re.Match) -> str:
        mon = _MONTHS.get(m.group(2))
        return f"{m.group(3)}-{mon:02d}-{int(m.group(1)):02d}" if mon else m.group(0)

    t = _DATE_MDY.sub(mdy, t)
    t = _DATE_DMY.sub(dmy, t)

    def num(m: re.Match) -> str:
        whole = m.group(1).replace(",", "")
        frac = (m.group(2) or "").rstrip("0")
        return whole + ("." + frac if frac else "")

    t = _NUM.sub(num, t)
    # keep ISO dates and decimal points intact through punctuation removal
    t = re.sub(r"(?<=\d)\.(?=\d)", "zzdotzz", t.replace("-", " zzdashzz "))
    return normalize_answer(t, LEGACY_PROFILE).replace(" zzdashzz ", "-").replace("zzdashzz", "-") \
        .replace("zzdotzz", ".")


@dataclass
class CragVerdict:
    label: str              # accurate | missing | hallucinated
    points: int
    decided_by: str         # refused | idk_substring | exact | normalised | invalid_rule | llm_judge | llm_parse_fail | no_judge
    exact: bool = False
    judge_raw: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _crag(label: str, by: str, **kw: Any) -> CragVerdict:
    return CragVerdict(label, CRAG_POINTS[label], by, **kw)


# The official CRAG evaluator cuts predictions to 75 Llama-2 tokens before judging. That
# tokenizer is not available offline, so words and punctuation marks stand in for its
# tokens; sub-word splitting makes the real cut a little shorter than this one.
CRAG_OFFICIAL_TRIM_TOKENS = 75
_TRIM_TOKEN = re.compile(r"\w+|[^\w\s]", re.UNICODE)


def trim_prediction(pred: str, max_tokens: int = CRAG_OFFICIAL_TRIM_TOKENS) -> str:
    """The prediction up to its ``max_tokens``-th word or punctuation mark."""
    for i, m in enumerate(_TRIM_TOKEN.finditer(pred or "")):
        if i == max_tokens:
            return pred[:m.start()].rstrip()
    return pred or ""


def crag_label(pred: str | None, golds: str | Iterable[str], *, refused: bool = False,
               judge_verdict: bool | None = None, judge_raw: str | None = None,
               judge_called: bool = False, mode: str = "exact_then_llm",
               profile: str = "ragx") -> CragVerdict:
    """Label one answer as in crag-benchmark.md §3.3.

    Order: refusal or "I don't know" -> missing; exact (lower-cased) match with a
    ground truth -> accurate; then (mode ``normalised``) normalised match, or (mode
    ``exact_then_llm``) the judge's verdict: True -> accurate, anything else
    (False, unparseable) -> hallucinated. ``crag_official`` adds the "invalid" rule.
    ``golds`` holds the main answer first, then alternatives (``use_alt_ans``).
    """
    gs = _golds(golds)
    p = (pred or "").strip()
    if refused:
        return _crag("missing", "refused")
    if says_idk(p):
        return _crag("missing", "idk_substring")
    if any(p.lower() == g.strip().lower() for g in gs):
        return _crag("accurate", "exact", exact=True)
    if profile == "crag_official" and gs:
        g_inv = "invalid" in gs[0].lower()
        p_inv = "invalid" in p.lower()
        if g_inv and p_inv:
            return _crag("accurate", "invalid_rule")
        if g_inv != p_inv:          # one side only, either side (crag-benchmark.md §3.3)
            return _crag("hallucinated", "invalid_rule")
    if mode == "exact_only":
        return _crag("hallucinated", "exact_only")
    if mode == "normalised" or (mode == "exact_then_llm" and not judge_called):
        np_ = normalize_crag(p)
        ok = any(np_ and np_ == normalize_crag(g) for g in gs)
        by = "normalised" if mode == "normalised" else "no_judge"
        return _crag("accurate" if ok else "hallucinated", by)
    if judge_verdict is None:
        return _crag("hallucinated", "llm_parse_fail", judge_raw=judge_raw)
    return _crag("accurate" if judge_verdict else "hallucinated", "llm_judge", judge_raw=judge_raw)


@dataclass
class CragSummary:
    n: int
    n_accurate: int
    n_missing: int
    n_hallucinated: int

    @property
    def accuracy(self) -> float:
        return self.n_accurate / self.n if self.n else 0.0

    @property
    def missing(self) -> float:
        return self.n_missing / self.n if self.n else 0.0

    @property
    def hallucination(self) -> float:
        return self.n_hallucinated / self.n if self.n else 0.0

    @property
    def score(self) -> float:
        """Accuracy − hallucination = mean points, in [−1, 1]."""
        return self.accuracy - self.hallucination

    def to_dict(self) -> dict[str, float]:
        return {"n": self.n, "accuracy": self.accuracy, "hallucination": self.hallucination,
                "missing": self.missing, "score": self.score}


def crag_summary(labels: Iterable[str]) -> CragSummary:
    c = Counter(labels)
    n = sum(c.values())
    return CragSummary(n, c.get("accurate", 0), c.get("missing", 0), c.get("hallucinated", 0))


def crag_breakdown(rows: Iterable[dict[str, Any]], by: str) -> dict[str, dict[str, float]]:
    """Per-value summaries of ``rows`` (dicts with ``label`` and the ``by`` key).
    The store computes the same in SQL (:mod:`workbench.eval.queries`)."""
    groups: dict[str, list[str]] = {}
    for r in rows:
        groups.setdefault(str(r.get(by) or "-"), []).append(r["label"])
    return {k: crag_summary(v).to_dict() for k, v in sorted(groups.items())}


def is_crag_question(meta: dict | None) -> bool:
    meta = meta or {}
    return "static_or_dynamic" in meta or ("domain" in meta and "question_type" in meta)


# ---------------------------------------------------------------------------
# Confidence intervals and calibration (pure helpers; the page feeds them SQL counts)
# ---------------------------------------------------------------------------

def wilson_interval(k: float, n: float, z: float = 1.959963984540054) -> tuple[float, float]:
    if n <= 0:
        return (0.0, 0.0)
    p = k / n
    den = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / den
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / den
    return (max(0.0, centre - half), min(1.0, centre + half))


def paired_bootstrap(a: Sequence[float], b: Sequence[float], *, n_boot: int = 2000,
                     seed: int = 0, level: float = 0.95) -> tuple[float, float, float]:
    """Mean of ``a - b`` over paired items and its percentile bootstrap interval.

    Resampling the pairs (not each side alone) keeps the per-question correlation, so the
    interval is much tighter than two unpaired CIs whenever both methods find the same
    questions hard (spec: CRAG benchmark, statistical resolution)."""
    import numpy as np
    d = np.asarray(a, dtype=float) - np.asarray(b, dtype=float)
    if d.size == 0:
        return (0.0, 0.0, 0.0)
    rng = np.random.default_rng(seed)
    means = d[rng.integers(0, d.size, size=(n_boot, d.size))].mean(axis=1)
    tail = (1 - level) / 2 * 100
    lo, hi = np.percentile(means, [tail, 100 - tail])
    return (float(d.mean()), float(lo), float(hi))


def mcnemar(a: Sequence[float], b: Sequence[float]) -> dict[str, Any]:
    """Exact McNemar test on paired 0/1 outcomes: only the discordant pairs count
    (``a_only``: a right and b wrong; ``b_only``: the reverse); two-sided binomial p."""
    from scipy.stats import binomtest
    a_only = sum(1 for x, y in zip(a, b) if x >= 0.5 > y)
    b_only = sum(1 for x, y in zip(a, b) if y >= 0.5 > x)
    n = a_only + b_only
    p = binomtest(min(a_only, b_only), n, 0.5).pvalue if n else 1.0
    return {"a_only": a_only, "b_only": b_only, "p": float(min(1.0, p))}


def expected_calibration_error(bins: Iterable[tuple[int, float, float]]) -> float:
    """ECE from per-bin (count, mean confidence, accuracy)."""
    bins = list(bins)
    n = sum(b[0] for b in bins)
    if not n:
        return 0.0
    return sum(c * abs(conf - acc) for c, conf, acc in bins) / n


# ---------------------------------------------------------------------------
# Node-level scores against gold structure
# ---------------------------------------------------------------------------

_PLACEHOLDER = re.compile(r"#\d+")
# Node kinds that stand for a sub-question / reasoning step: CogGRAG "subquestion",
# PAR-RAG "step", CRP-RAG "step" / "final", IRCoT "thought".
SUBQ_NODE_KINDS = {"subquestion", "sub_question", "step", "final", "plan_step", "thought"}


def _gold_subquestions(decomposition: Sequence[Any]) -> list[dict[str, str]]:
    out = []
    for d in decomposition or []:
        if isinstance(d, str):
            out.append({"question": d, "answer": ""})
        elif isinstance(d, dict):
            q = d.get("question") or d.get("sub_question") or d.get("Sub-question") or d.get("text") or ""
            out.append({"question": str(q), "answer": str(d.get("answer") or "")})
    return [o for o in out if o["question"].strip()]


def subquestion_match(pred_subqs: Sequence[str], decomposition: Sequence[Any], *,
                      threshold: float = 0.5) -> dict[str, float] | None:
    """Match predicted sub-questions (node texts) to gold ones (MuSiQue
    ``question_decomposition`` or the demo's) by token F1 (``#1`` placeholders dropped),
    greedily one-to-one, best pairs first. Returns recall, precision, F1 of matched
    sub-questions and the mean best F1 per gold sub-question; None without gold."""
    gold = _gold_subquestions(decomposition)
    if not gold:
        return None
    gtok = [tokens(_PLACEHOLDER.sub(" ", g["question"]), LEGACY_PROFILE) for g in gold]
    ptok = [tokens(_PLACEHOLDER.sub(" ", p), LEGACY_PROFILE) for p in pred_subqs if p and p.strip()]
    pairs = sorted(((_f1(pt, gt), i, j) for j, gt in enumerate(gtok) for i, pt in enumerate(ptok)),
                   reverse=True)
    used_p, used_g, matched = set(), set(), 0
    for s, i, j in pairs:
        if s < threshold:
            break
        if i in used_p or j in used_g:
            continue
        used_p.add(i)
        used_g.add(j)
        matched += 1
    best = [max((_f1(pt, gt) for pt in ptok), default=0.0) for gt in gtok]
    rec = matched / len(gtok)
    prec = matched / len(ptok) if ptok else 0.0
    return {"subq_recall": rec, "subq_precision": prec,
            "subq_f1": (2 * rec * prec / (rec + prec)) if rec + prec else 0.0,
            "subq_mean_best_f1": sum(best) / len(best), "subq_gold": float(len(gtok)),
            "subq_pred": float(len(ptok))}


def _path_parts(path: Sequence[Any]) -> tuple[list[str], list[tuple[str, str, str]]]:
    """A gold path is [e0, r1, e1, r2, e2, ...] (odd length) or a list of triples."""
    ents: list[str] = []
    triples: list[tuple[str, str, str]] = []
    if path and all(isinstance(x, (list, tuple)) and len(x) == 3 for x in path):
        for h, r, t in path:
            triples.append((str(h), str(r), str(t)))
            ents += [str(h), str(t)]
    elif len(path) >= 3 and len(path) % 2 == 1:
        items = [str(x) for x in path]
        ents = items[0::2]
        triples = [(items[i], items[i + 1], items[i + 2]) for i in range(0, len(items) - 2, 2)]
    else:
        ents = [str(x) for x in path]
    return ents, triples


def kg_path_coverage(gold_paths: Sequence[Sequence[Any]], explored_text: str,
                     explored_triples: Iterable[Sequence[str]] = ()) -> dict[str, float] | None:
    """Share of gold-path entities that the run touched (normalised whole-token
    containment in node texts / evidence), and share of gold triples that appear among
    the run's explored triples (or, failing that, whose head and tail both appear)."""
    if not gold_paths:
        return None
    ents: list[str] = []
    trip: list[tuple[str, str, str]] = []
    for p in gold_paths:
        e, t = _path_parts(p)
        ents += e
        trip += t
    def nz(x: str) -> str:          # a diagnostic: typographic text still counts as seen
        return normalize_answer(x, LEGACY_PROFILE)
    hay = nz(explored_text)
    seen_t = {tuple(nz(x) for x in t) for t in explored_triples if len(t) == 3}
    uniq = list(dict.fromkeys(nz(e) for e in ents if nz(e)))
    if not uniq:
        return None
    ent_cov = sum(_contains(hay, e) for e in uniq) / len(uniq)
    out = {"path_entity_coverage": ent_cov}
    if trip:
        hit = 0
        for h, r, t in trip:
            key = (nz(h), nz(r), nz(t))
            if key in seen_t or (not seen_t and _contains(hay, key[0]) and _contains(hay, key[2])):
                hit += 1
        out["path_triple_coverage"] = hit / len(trip)
    return out


# ---------------------------------------------------------------------------
# The LLM judge (Acc-LM and the CRAG judge)
# ---------------------------------------------------------------------------

JUDGE_PROMPT_VERSION = "judge-1"

ACC_LM_SCHEMA = {"type": "object", "properties": {"verdict": {"type": "string",
                 "enum": ["correct", "incorrect"]}}, "required": ["verdict"]}
CRAG_SCHEMA = {"type": "object", "properties": {"Accuracy": {"type": "string",
               "enum": ["True", "False"]}}, "required": ["Accuracy"]}

_ACC_LM_SYSTEM = (
    "You grade answers to questions. Decide whether the model answer conveys the same meaning "
    "as the gold answer (different wording, units or extra correct detail are fine; a refusal, "
    "a different entity or a wrong number is not). Reply with JSON only: "
    '{"verdict": "correct"} or {"verdict": "incorrect"}.')
_CRAG_SYSTEM = (
    "You judge whether a prediction answers a question correctly. The prediction is correct if "
    "it matches any of the ground-truth answers in meaning. If the prediction says it cannot "
    "answer or lacks information, it is incorrect. If the ground truth is \"invalid question\", "
    "the prediction is correct only if it is exactly that phrase. Reply with one JSON object: "
    '{"Accuracy": "True"} or {"Accuracy": "False"}.\n'
    "Examples:\n"
    "Question: How tall is the Eiffel Tower? Ground truth: 330 metres. Prediction: about 1,083 "
    'feet -> {"Accuracy": "True"}\n'
    "Question: Who wrote Dune? Ground truth: Frank Herbert. Prediction: Isaac Asimov -> "
    '{"Accuracy": "False"}\n'
    "Question: When did the band form? Ground truth: 1994. Prediction: The references do not "
    'say -> {"Accuracy": "False"}')


@dataclass
class JudgeVerdict:
    verdict: bool | None          # None: no parseable verdict (counts as incorrect)
    raw: str = ""
    latency_ms: float = 0.0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    error: str | None = None
    cached: bool = False


@dataclass
class LLMJudge:
    """A judge over any configured backend. ``label`` names it on every chart
    (e.g. ``"local:smollm2-135m"``); runs judged by different labels must not be compared."""
    backend: Any
    label: str = ""
    max_tokens: int = 24
    cache: dict[tuple, JudgeVerdict] = field(default_factory=dict)
    n_calls: int = 0

    def __post_init__(self) -> None:
        if not self.label:
            info = getattr(self.backend, "info", None)
            kind = getattr(info, "backend", "") or "llm"
            where = "local" if kind in ("llama_cpp", "scripted") else kind
            self.label = f"{where}:{getattr(info, 'name', '?')}"

    @property
    def sha256(self) -> str:
        return getattr(getattr(self.backend, "info", None), "sha256", "") or ""

    def _ask(self, kind: str, system: str, user: str, schema: dict, key_field: str,
             true_value: str) -> JudgeVerdict:
        key = (kind, user)
        if key in self.cache:
            v = self.cache[key]
            return JudgeVerdict(v.verdict, v.raw, 0.0, 0, 0, v.error, True)
        from ..llm.base import GenParams
        t0 = time.perf_counter()
        try:
            comp = self.backend.generate(
                [{"role": "system", "content": system}, {"role": "user", "content": user}],
                GenParams(max_tokens=self.max_tokens, temperature=0.0, json_schema=schema, seed=0))
        except Exception as e:  # a failing judge is a visible parse failure, never a crash
            v = JudgeVerdict(None, "", (time.perf_counter() - t0) * 1000, error=f"{type(e).__name__}: {e}")
            self.cache[key] = v
            return v
        self.n_calls += 1
        verdict: bool | None = None
        err = None
        try:
            obj = json.loads(comp.text)
            val = str(obj.get(key_field, "")).strip().lower()
            if val in (true_value.lower(), "false", "incorrect", "true", "correct"):
                verdict = val == true_value.lower()
            else:
                err = f"unexpected {key_field}: {val!r}"
        except (ValueError, AttributeError) as e:
            err = f"unparseable judge output ({e})"
        v = JudgeVerdict(verdict, comp.text, comp.latency_ms, comp.prompt_tokens,
                         comp.completion_tokens, err)
        self.cache[key] = v
        return v

    def acc_lm(self, question: str, pred: str, golds: Sequence[str]) -> JudgeVerdict:
        user = (f"Question: {question}\nGold answer: {' | '.join(golds)}\n"
                f"Model answer: {pred}\nDoes the model answer mean the same as the gold answer?")
        return self._ask("acc_lm", _ACC_LM_SYSTEM, user, ACC_LM_SCHEMA, "verdict", "correct")

    def crag(self, question: str, pred: str, golds: Sequence[str]) -> JudgeVerdict:
        user = (f"Question: {question}\nGround truth: {' | '.join(golds)}\nPrediction: {pred}")
        return self._ask("crag", _CRAG_SYSTEM, user, CRAG_SCHEMA, "Accuracy", "True")


# ---------------------------------------------------------------------------
# Scoring one answer
# ---------------------------------------------------------------------------

PRIMARY_METRICS = ("contains", "em", "f1", "rouge_f1", "acc_lm", "hits1", "crag", "fever")


@dataclass
class AnswerScore:
    em: float
    f1: float
    contains: float
    rouge_l: float
    rouge_f1: float
    hits1: float
    acc_lm: float | None
    crag_label: str
    crag_points: int
    crag_decided_by: str
    fever: float | None
    refused: bool
    correct: bool
    primary: str
    judge: str | None = None
    judge_raw: str | None = None
    judge_error: str | None = None
    judge_ms: float = 0.0
    judge_calls: int = 0
    extra: dict[str, float] = field(default_factory=dict)
    metric_profile: str = DEFAULT_PROFILE

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def default_primary(answers: Sequence[str], qtype: str = "", meta: dict | None = None) -> str:
    if is_crag_question(meta):
        return "crag"
    if is_fever_question(answers, qtype, meta):
        return "fever"
    return "contains"


def score_answer(question: str, pred: str | None, answers: Sequence[str],
                 aliases: Sequence[str] = (), *, refused: bool = False,
                 qtype: str = "", meta: dict | None = None,
                 judge: LLMJudge | None = None, primary: str | None = None,
                 tau_f1: float = DEFAULT_TAU_F1, crag_mode: str | None = None,
                 crag_profile: str = "ragx", use_alt_ans: bool = True,
                 answer_entities: Sequence[str] = (),
                 metric_profile: str = DEFAULT_PROFILE) -> AnswerScore:
    """All answer metrics for one prediction. One judge call at most: the CRAG prompt
    on CRAG questions (its verdict is also Acc-LM), the Acc-LM prompt elsewhere
    (its verdict also decides CRAG's second step). ``metric_profile`` decides how
    em/f1/contains/rouge/hits1 normalise and what em and f1 mean (module docstring)."""
    check_profile(metric_profile)
    meta = meta or {}
    golds = list(answers) + ([a for a in aliases if a not in answers] if use_alt_ans else [])
    pred = pred or ""
    crag_q = is_crag_question(meta)
    fever_q = is_fever_question(answers, qtype, meta)
    primary = primary or default_primary(answers, qtype, meta)
    if primary not in PRIMARY_METRICS:
        raise ValueError(f"unknown primary metric {primary!r}; one of {', '.join(PRIMARY_METRICS)}")
    if refused:
        em = f1 = cont = rl = rf1 = h1 = 0.0
    else:
        prof = metric_profile
        em, f1 = exact_match(pred, golds, prof), token_f1(pred, golds, prof, tau=tau_f1)
        cont = contains_match(pred, golds, prof)
        rl = rouge_l(pred, golds, prof)
        rf1 = float(rl >= tau_f1)
        h1 = hits_at_1(pred, golds + [e for e in answer_entities if e not in golds], prof)
    fever = None
    if fever_q and answers:
        fever = 0.0 if refused else fever_accuracy(pred, answers[0])
    mode = crag_mode or ("exact_then_llm" if judge is not None else "normalised")
    crag_pred = trim_prediction(pred) if crag_profile == "crag_official" else pred
    # Does CRAG need the judge? Only when neither the IDK rule nor exact match decided.
    pre = crag_label(crag_pred, golds, refused=refused, mode="exact_only", profile=crag_profile)
    need_crag_judge = pre.decided_by not in ("refused", "idk_substring", "exact", "invalid_rule") \
        and mode == "exact_then_llm"
    jv: JudgeVerdict | None = None
    acc_lm: float | None = None
    if judge is not None and golds:
        if refused or says_idk(pred):
            acc_lm = 0.0
        elif crag_q and need_crag_judge:
            jv = judge.crag(question, crag_pred, golds)
        elif not crag_q:
            jv = judge.acc_lm(question, pred, golds)
        elif pre.exact:
            acc_lm = 1.0
    if jv is not None:
        acc_lm = 1.0 if jv.verdict else 0.0
    cv = crag_label(crag_pred, golds, refused=refused, judge_verdict=jv.verdict if jv else None,
                    judge_raw=jv.raw if jv else None, judge_called=jv is not None or mode != "exact_then_llm",
                    mode=mode, profile=crag_profile)
    values = {"contains": cont, "em": em, "f1": f1, "rouge_f1": rf1, "acc_lm": acc_lm,
              "hits1": h1, "crag": 1.0 if cv.label == "accurate" else 0.0, "fever": fever}
    pv = values[primary]
    correct = bool(pv is not None and pv >= 0.5 and not refused)
    return AnswerScore(
        em=em, f1=f1, contains=cont, rouge_l=rl, rouge_f1=rf1, hits1=h1, acc_lm=acc_lm,
        crag_label=cv.label, crag_points=cv.points, crag_decided_by=cv.decided_by, fever=fever,
        refused=refused, correct=correct, primary=primary,
        judge=judge.label if judge is not None else None,
        judge_raw=jv.raw if jv else None, judge_error=jv.error if jv else None,
        judge_ms=jv.latency_ms if jv else 0.0, judge_calls=int(jv is not None and not jv.cached),
        metric_profile=metric_profile)


# ---------------------------------------------------------------------------
# From a trace
# ---------------------------------------------------------------------------

def answer_confidence(tr: Any) -> float | None:
    """The answer's confidence: the method's own value, else the geometric-mean token
    probability of the LLM call that produced the answer node (or the last call)."""
    ans = getattr(tr, "answer", None) or {}
    if ans.get("confidence") is not None:
        try:
            c = float(ans["confidence"])
            return c if math.isfinite(c) else None
        except (TypeError, ValueError):
            return None
    calls = list(getattr(tr, "llm_calls", {}).values())
    if not calls:
        return None
    nid = ans.get("node_id")
    mine = [c for c in calls if nid and c.get("node_id") == nid]
    c = (mine or calls)[-1]
    conf = (c.get("scores") or {}).get("confidence")
    return float(conf) if conf is not None else None


def trace_subquestions(tr: Any) -> list[str]:
    """Texts of the run's sub-question / step nodes (see :data:`SUBQ_NODE_KINDS`)."""
    out = []
    for n in tr.nodes.values():
        if n.kind not in SUBQ_NODE_KINDS or n.state == "parse_failed":
            continue
        text = n.attrs.get("question") or n.attrs.get("sub_question") or n.text
        if text:
            out.append(str(text))
    return out


def trace_explored(tr: Any) -> tuple[str, list[tuple[str, str, str]]]:
    parts: list[str] = []
    triples: list[tuple[str, str, str]] = []
    for n in tr.nodes.values():
        parts.append(n.text or "")
        for k in ("entity", "name", "head", "tail", "relation"):
            if isinstance(n.attrs.get(k), str):
                parts.append(n.attrs[k])
        if n.kind in ("triple", "edge") and all(k in n.attrs for k in ("head", "relation", "tail")):
            triples.append((n.attrs["head"], n.attrs["relation"], n.attrs["tail"]))
        for ev in n.evidence:
            for h in ev.get("hits", []):
                parts.append(str(h.get("title", "")) + " " + str(h.get("text", "")))
                m = h.get("meta") or {}
                if all(k in m for k in ("head", "relation", "tail")):
                    triples.append((m["head"], m["relation"], m["tail"]))
    for p in getattr(tr, "paths", {}).values():
        info = p.get("info") or {}
        for t in info.get("triples", []) or []:
            if isinstance(t, (list, tuple)) and len(t) == 3:
                triples.append(tuple(map(str, t)))
                parts.append(" ".join(map(str, t)))
    for e in getattr(tr, "edges", []):
        rel = (e.get("attrs") or {}).get("relation")
        if rel:
            parts.append(str(rel))
    return "\n".join(parts), triples


def structure_scores(tr: Any, decomposition: Sequence[Any] = (),
                     gold_path: Sequence[Sequence[Any]] = ()) -> dict[str, float]:
    out: dict[str, float] = {}
    if decomposition:
        subqs = trace_subquestions(tr)
        sm = subquestion_match(subqs, decomposition) if subqs else None   # a method that
        if sm:                                                             # does not decompose
            out.update(sm)                                                 # gets no score
    if gold_path:
        text, triples = trace_explored(tr)
        cov = kg_path_coverage(gold_path, text, triples)
        if cov:
            out.update(cov)
    return out
