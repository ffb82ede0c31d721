from .record import main

raise SystemExit(main())
