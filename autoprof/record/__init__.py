"""Collect: runs the user's function under torch.profiler and writes a run folder.

The public front door (``@autoprof``, ``region``, ``check``) is re-exported lazily by the
top-level ``autoprof`` package; nothing here imports torch at import time.
"""
