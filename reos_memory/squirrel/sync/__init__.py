"""The local side of a team server (issue 21): the HTTP client, the pull cache and the outbox."""
