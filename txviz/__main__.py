"""`python -m txviz ...`: see txviz.cli."""

from txviz.cli import main

raise SystemExit(main())
