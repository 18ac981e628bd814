"""What agents reach over the wire: a REST server (``rest.py``, mem0's
endpoint shapes) and an MCP server (``mcp_tools.py``), both over one
``MemorySystem``; ``limits.py`` holds the per-client rate limit.

Both need the ``server`` extra (``pip install 'naia-memory[server]'``)."""
