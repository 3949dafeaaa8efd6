"""Instrumentation injected into the processes that `tpu-migrate verify` runs (see ../sitecustomize.py)."""
