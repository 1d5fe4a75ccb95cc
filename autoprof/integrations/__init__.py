"""autoprof where users already work: trainer callbacks and the MCP server.

Each module needs its own optional extra and imports nothing until it is imported itself:

- ``autoprof.integrations.transformers.AutoprofCallback`` (``autoprof[transformers]``);
- ``autoprof.integrations.lightning.AutoprofCallback`` (``autoprof[lightning]``);
- ``autoprof.integrations.mcp`` (``autoprof[mcp]``): ``autoprof mcp DIR``.

docs/integrations.md says how each one is used.
"""

__all__: list[str] = []
