"""The real agents in and out: the Claude Code hook and the `sqrl ingest|watch|hooks` commands.

Above Squirrel and the App (it opens the App like any command), below the command line.
"""
