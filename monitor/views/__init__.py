"""Read-only answers from the state directory or a file: ``status``, the log book
and its exports, the journal check, ``replay`` and ``backtest``, and the compliance
report (``report/``). A view never writes the journal and never sends anything.
"""
