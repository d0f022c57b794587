#!/bin/bash
# fixture-c.sh DIR: a C library built by CMake and tested by ctest, whose
# commits are labelled (good, doc-only, passes-before): exactly the good one
# must become an instance. Used by tests/cli/swe-crafter.sh.
set -eu
. "$(dirname "$0")/fixture-lib.sh"
fixture_repo "$1" 02
mkdir tests
cat > CMakeLists.txt <<'CM'
cmake_minimum_required(VERSION 3.13)
project(calc C)
enable_testing()
add_library(calc calc.c)
add_executable(test_calc tests/test_calc.c)
target_link_libraries(test_calc calc)
target_include_directories(test_calc PRIVATE .)
file(STRINGS tests/cases.txt cases)
foreach(name ${cases})
  add_test(NAME ${name} COMMAND test_calc ${name})
endforeach()
CM
cat > calc.h <<'C'
int add(int a, int b);
int mul(int a, int b);
C
cat > calc.c <<'C'
#include "calc.h"

int add(int a, int b) {
  return a - b;
}

int mul(int a, int b) {
  return a * b;
}
C
cat > tests/test_calc.c <<'C'
#include <string.h>

#include "calc.h"

int main(int argc, char** argv) {
  if (argc < 2) return 2;
  if (strcmp(argv[1], "mul") == 0) return mul(2, 3) == 6 ? 0 : 1;
  return 2;
}
C
echo mul > tests/cases.txt
c 1 "initial"
sed -i 's/return a - b;/return a + b;/' calc.c
python3 - <<'PY'
p = "tests/test_calc.c"
s = open(p).read().replace('  return 2;\n}', '  if (strcmp(argv[1], "add") == 0) return add(2, 3) == 5 ? 0 : 1;\n  return 2;\n}')
open(p, "w").write(s)
PY
echo add >> tests/cases.txt
c 2 "add() subtracts (label: good)"
echo "# calc" > README.md
c 3 "Document it (label: doc-only)"
sed -i '1i /* arithmetic */' calc.c
python3 - <<'PY'
p = "tests/test_calc.c"
s = open(p).read().replace('  return 2;\n}', '  if (strcmp(argv[1], "mul0") == 0) return mul(0, 3) == 0 ? 0 : 1;\n  return 2;\n}')
open(p, "w").write(s)
PY
echo mul0 >> tests/cases.txt
c 4 "Test mul() by zero (label: passes-before)"
