"""What Squirrel does with memories once written: commit (the one write path, dedup included),
context (get_task_context and search), feedback, CR-Memory and the memory policy."""
