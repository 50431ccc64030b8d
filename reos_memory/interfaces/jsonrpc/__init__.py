"""JSON-RPC 2.0 over stdio: framing, dispatch, param/result types and error mapping."""
