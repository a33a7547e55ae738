"""``python -m mokka``: the same dispatch as the zipapp."""

from mokka.cmd.main import main

raise SystemExit(main())
