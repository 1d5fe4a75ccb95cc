"""The report's types share the run-folder records' base (runfolder/typed.py)."""

from autoprof.runfolder.typed import UNSET, Json, Model, Num, given

__all__ = ["UNSET", "Json", "Model", "Num", "given"]
