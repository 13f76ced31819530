"""``cltui explain``: where two devices' outputs of one enqueue differ, and why.

``rewrite`` (source rewrites, the built-ins' ULP table), ``causes`` (the controlled
rebuilds), ``divergence`` (the divergence map of one output, pure numpy), ``run`` (the runs,
through the experiment machinery), ``analyse`` (the report), ``text`` (terminal and
Markdown), ``engine`` (the one entry point: runs and report, for every caller).
"""

from __future__ import annotations

from cltui.analysis.explain.analyse import explain_report
from cltui.analysis.explain.engine import explain_enqueue, explain_first_divergence
from cltui.analysis.explain.run import ExplainError, Runs, run_explain

__all__ = ["ExplainError", "Runs", "explain_enqueue", "explain_first_divergence",
           "explain_report", "run_explain"]
