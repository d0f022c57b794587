#!/bin/bash
# fixture-debian-src.sh DIR: a Debian source package (format 3.0 (quilt)) of
# a small Python module, built with dpkg-source -b, whose two patches carry
# DEP-3 headers: 01 fixes a bug and adds the test that shows it (it must
# become an instance whose statement is the patch's description), 02 changes
# only documentation. Writes DIR/calc_1.0-1.dsc and its tarballs. Used by
# tests/cli/swe-crafter.sh (fetch debian-src:FILE.dsc).
set -eu
dir=$1
mkdir -p "$dir/calc-1.0" && cd "$dir/calc-1.0"
mkdir -p tests
cat > calc.py <<'PY'
def add(a, b):
    return a + b


def clamp(x, lo, hi):
    return max(lo, min(x, lo))
PY
cat > tests/test_calc.py <<'PY'
from calc import add


def test_add():
    assert add(2, 3) == 5
PY
printf 'calc: a calculator\n' > README
(cd .. && tar -czf calc_1.0.orig.tar.gz --sort=name --mtime=2026-01-01 --owner=0 --group=0 calc-1.0)
mkdir -p debian/source debian/patches
printf '3.0 (quilt)\n' > debian/source/format
cat > debian/changelog <<'DEB'
calc (1.0-1) unstable; urgency=medium

  * Initial release.

 -- Fixture Maintainer <fixture@localhost>  Tue, 03 Mar 2026 10:00:00 +0000
DEB
cat > debian/control <<'DEB'
Source: calc
Section: python
Priority: optional
Maintainer: Fixture Maintainer <fixture@localhost>
Build-Depends: debhelper-compat (= 13), python3-pytest <!nocheck>,
 nk-fixture-alternative (>= 1.0) [amd64] | python3-pytest, nk-fixture-absent:native <!nocheck>,
 nk-fixture-stage1-only <stage1>
Standards-Version: 4.6.2

Package: python3-calc
Architecture: all
Depends: ${misc:Depends}, ${python3:Depends}
Description: calculator
 A fixture.
DEB
printf '#!/usr/bin/make -f\n%%:\n\tdh $@\n' > debian/rules
chmod +x debian/rules
cat > debian/patches/01-clamp-upper-bound.patch <<'PATCH'
Description: clamp() ignores the upper bound
 clamp(5, 0, 3) returns 0: the inner min() compares with lo instead of hi.
 This takes hi, and a test shows it.
Author: Fixture Maintainer <fixture@localhost>
Bug-Debian: https://bugs.debian.org/1000001
Forwarded: yes
Last-Update: 2026-03-03
---
--- a/calc.py
+++ b/calc.py
@@ -3,4 +3,4 @@ def add(a, b):
 
 
 def clamp(x, lo, hi):
-    return max(lo, min(x, lo))
+    return max(lo, min(x, hi))
--- a/tests/test_calc.py
+++ b/tests/test_calc.py
@@ -1,5 +1,9 @@
-from calc import add
+from calc import add, clamp
 
 
 def test_add():
     assert add(2, 3) == 5
+
+
+def test_clamp():
+    assert clamp(5, 0, 3) == 3
PATCH
cat > debian/patches/02-readme.patch <<'PATCH'
From 0123456789abcdef0123456789abcdef01234567 Mon Sep 17 00:00:00 2001
From: Fixture Maintainer <fixture@localhost>
Subject: [PATCH] README: say what it computes

---
--- a/README
+++ b/README
@@ -1 +1 @@
-calc: a calculator
+calc: a calculator (add, clamp)
PATCH
printf '01-clamp-upper-bound.patch\n02-readme.patch\n' > debian/patches/series
cd .. && dpkg-source -q -b calc-1.0 > /dev/null 2>&1
test -f calc_1.0-1.dsc
