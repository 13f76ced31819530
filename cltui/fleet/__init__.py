"""Fleet replay: one bundle on many hosts and devices over the user's own SSH (or another
transport), one matrix.  ``inventory`` (hosts), ``transport`` (commands on a host),
``cache`` (the content-addressed cache there), ``bundle`` (the bundle sent), ``host`` (one
host's run), ``job`` (all hosts in parallel, outputs across columns), ``matrix`` (the result
and its verdict), ``junit`` (JUnit XML).  No TUI here: progress and cancellation go through
:mod:`cltui.progress`."""
