"""What speaks a protocol: JSON-RPC on stdio (`jsonrpc/`), MCP (`mcp.py`) and the Claude Code
hook (`claude_hook/`). Each is given the services (`services.Services`) and calls them; none
imports another (they share only `services`, `registry` and `stdio_process`)."""
