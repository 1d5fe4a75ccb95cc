"""The `autoprof` command (`autoprof summary`, `view`, `diff`, `lines`, `schema`, `mcp`).

One module per job: :mod:`.commands` (the parser, `summary`, `view`, `schema`, `mcp`),
:mod:`.diff`, :mod:`.lines`, :mod:`.runs` (a folder of runs, one line each) and :mod:`.common`
(the error line and exit status every subcommand shares). Nothing here imports the analysis
(pandas, numpy) at module level: `autoprof view` and `--help` start without it.
"""

from autoprof.cli.commands import build_parser, main

__all__ = ["build_parser", "main"]
