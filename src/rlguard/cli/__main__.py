"""`python -m rlguard.cli`: the `rlguard` command without its console script (the platform's
jobs run it with the server's own interpreter)."""

from rlguard.cli import main

main()
