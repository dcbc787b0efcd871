"""
Diagnostics: one-off measurements behind the protocol's gates and the history's readings (screen
gates, the no-harm noise floor, identical-curve checks, score spreads), each run as
``python -m benchmarks.diagnostics.<name>`` from a checkout. Their outputs and the page that reads
them stay in ``docs/benchmarks/diagnostics/`` and the results pages.
"""
