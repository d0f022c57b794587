#!/bin/bash
# fixture-repo.sh DIR: a Python repository whose commits are labelled
# (good, doc-only, code-only, passes-before, breaks-a-test, flaky): exactly
# the good one must become an instance. Used by tests/cli/swe-crafter.sh,
# by the demo and the fuzz recipes.
set -eu
. "$(dirname "$0")/fixture-lib.sh"
fixture_repo "$1" 01
mkdir tests
cat > calc.py <<'PY'
def add(a, b):
    return a - b


def mul(a, b):
    return a * b
PY
cat > tests/test_calc.py <<'PY'
from calc import mul


def test_mul():
    assert mul(2, 3) == 6
PY
c 1 "initial"
sed -i 's/return a - b/return a + b/' calc.py
cat >> tests/test_calc.py <<'PY'


def test_add():
    from calc import add
    assert add(2, 3) == 5
PY
c 2 "add() subtracts instead of adding

add(2, 3) returns -1; it should return 5. (label: good)"
echo "# calc" > README.md
c 3 "Document the module (label: doc-only)"
cat >> calc.py <<'PY'


def sub(a, b):
    return a - b
PY
c 4 "Add sub() (label: code-only)"
sed -i '1i # arithmetic helpers' calc.py
cat >> tests/test_calc.py <<'PY'


def test_sub():
    from calc import sub
    assert sub(5, 3) == 2
PY
c 5 "Test sub() (label: passes-before)"
sed -i 's/return a \* b/return a * b + 1/' calc.py
cat >> calc.py <<'PY'


def div(a, b):
    return a / b
PY
cat >> tests/test_calc.py <<'PY'


def test_div():
    from calc import div
    assert div(6, 3) == 2
PY
c 6 "Add div() (label: breaks-a-test: mul is off by one now)"
cat >> calc.py <<'PY'


def neg(a):
    return -a
PY
cat > tests/test_neg.py <<'PY'
import os


def test_neg():
    from calc import neg
    path = ".flaky-counter"
    n = int(open(path).read()) if os.path.exists(path) else 0
    open(path, "w").write(str(n + 1))
    assert neg(2) == -2 and n % 2 == 0
PY
c 7 "Add neg() (label: flaky: its test passes every other run)"
