"""``cltui explain``: where two devices' outputs of one enqueue differ, and why.

``rewrite`` (source rewrites, the built-ins' ULP table), ``causes`` (the controlled
rebuilds), ``divergence`` (the divergence map of one output, pure numpy), ``run`` (the runs,
through the experiment machinery), ``analyse`` (the report), ``text`` (terminal and
Markdown).
"""

from __future__ import annotations

from cltui.analysis.explain.analyse import explain_report
from cltui.analysis.explain.run import ExplainError, Runs, run_explain

__all__ = ["ExplainError", "Runs", "explain_report", "run_explain"]
