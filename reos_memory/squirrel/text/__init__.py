"""Rules that read people's and agents' text, one module per kind of text they recognise.

What a user tells an agent: `instructions` (corrections and norms in the user's own words) and
`statements` (explicit rules and tool choices, built from `clauses`, `clause_rules`,
`rule_openings`, `rule_scope`, `passing_remarks`, `interaction_prefs`, `tool_names`,
`tool_switches`). How a user's message reads: `replies` (a correction, a new task, a
continuation), `success`, `frustration`, over the cue `phrases`. What an agent found:
`diagnosis`; the summaries agents write of their own sessions: `summaries`. What tools printed
and ran: `shell_commands`, `runner_output` (test runs), `error_output`; the project's own check
commands: `commands`. What is not worth keeping: `junk`. `prose` holds what they share: a message
cleaned down to its prose, split into sentences, word lists.

Every module here is pure (the standard library only, no I/O) and cheap: ingest runs them on
every event."""
