"""nk_check.py - the checks of the CLI tests' Python parts, imported from
$NK_SOURCE/tests/cli: report(ok, what) prints one "ok"/"FAIL" line as
lib.sh does and counts the failures; finish() exits 1 if any failed."""
import sys

failed = 0


def report(ok, what):
    global failed
    print(("ok   " if ok else "FAIL ") + what)
    failed += not ok


def finish():
    sys.exit(1 if failed else 0)
