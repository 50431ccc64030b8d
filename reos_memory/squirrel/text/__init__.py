"""Rules that read people's and agents' prose, one module per topic: what a user tells an agent
(`instructions`), what an agent found (`diagnosis`), the summaries agents write of their own
sessions (`summaries`), the project's own commands (`commands`), and what is not worth keeping
(`junk`). `prose` holds what they share: cleaning a message down to its prose and splitting it
into sentences."""
