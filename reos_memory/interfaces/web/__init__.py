"""The web UI (issue 22): server-rendered pages over the same services as every other interface,
behind a guard against other sites and other users of the machine."""
