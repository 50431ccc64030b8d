from reos_memory.cli import main

raise SystemExit(main())
