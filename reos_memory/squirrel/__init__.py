"""Squirrel (seed 001): the memory of a coding assistant - episodes, Memory Writer, commit, context."""
