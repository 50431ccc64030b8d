"""Session logs that coding agents already write, turned into Squirrel events.

One adapter module per agent (`claude_code`, `codex`) behind one interface (`base.Adapter`);
`reader` follows a file from a cursor, `ingest` stores what the adapters make of it, `episodes`
cuts the events into episodes, `watch` follows the agents' log directories.
"""
