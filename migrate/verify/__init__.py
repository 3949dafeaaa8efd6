"""`tpu-migrate verify`: equivalence of the original and the migrated training loop, on the CPU.

Both scripts run in their own process with the instrumentation in ``bootstrap/`` (seeds, optimizer
step hooks, dropout/autocast switches, the original's CUDA-to-CPU mapping, XLA metrics on the
migrated side); ``runner`` collects their traces, ``compare`` judges them, ``render`` reports.
"""

from .session import Options, Report, UsageError, verify

__all__ = ["Options", "Report", "UsageError", "verify"]
