"""The team server's domain (issue 21): its database, tenancy, API keys and audit."""
