"""`python -m reos_memory`: the `reos-memory` command."""

from reos_memory.cli import main

if __name__ == "__main__":
    raise SystemExit(main())
