"""What speaks a protocol: JSON-RPC on stdio (`jsonrpc/`), MCP (`mcp.py`) and the agents'
hooks (`agent_hooks/`). Each is given the services (`services.Services`) and calls them; none
imports another (they share only `services`, `registry` and `stdio_process`)."""
