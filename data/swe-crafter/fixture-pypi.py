"""fixture-pypi.py DIR: a folder laid out as PyPI's JSON API (DIR/NAME/json,
sdists under DIR/files, file:// URLs) for swe-crafter fetch pypi: with
--pypi-index file://DIR. Project calc: 1.0 (clamp ignores its upper bound),
1.1 (fixed, with the test that shows it and a changelog entry), 1.2 (a README
change only), 2.0rc1 (a pre-release) and 1.3 (yanked), both to be skipped.
Project evil: an sdist with a member outside its folder. Project badsum: an
sdist whose sha256 does not match. Used by tests/cli/swe-crafter.sh."""

import hashlib
import io
import json
import os
import sys
import tarfile

root = os.path.abspath(sys.argv[1])
os.makedirs(os.path.join(root, "files"), exist_ok=True)

BUG = "def add(a, b):\n    return a + b\n\n\ndef clamp(x, lo, hi):\n    return max(lo, min(x, lo))\n"
FIXED = BUG.replace("min(x, lo)", "min(x, hi)")
TEST = "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n"
TEST2 = TEST.replace("from calc import add", "from calc import add, clamp") + \
    "\n\ndef test_clamp():\n    assert clamp(5, 0, 3) == 3\n"
CHANGES = ["1.0\n---\n- First release.\n"]


def sdist(name, version, files, extra=None):
    """A .tar.gz with the files under NAME-VERSION/; returns the release's JSON entry."""
    fname = "%s-%s.tar.gz" % (name, version)
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as t:
        for path, text in sorted(files.items()):
            data = text.encode()
            info = tarfile.TarInfo(path if path.startswith("..") else "%s-%s/%s" % (name, version, path))
            info.size, info.mtime = len(data), 1767225600
            t.addfile(info, io.BytesIO(data))
    data = buf.getvalue()
    with open(os.path.join(root, "files", fname), "wb") as f:
        f.write(data)
    entry = {"filename": fname, "packagetype": "sdist", "url": "file://" + os.path.join(root, "files", fname),
             "digests": {"sha256": hashlib.sha256(data).hexdigest()}, "yanked": False,
             "upload_time_iso_8601": "2026-0%d-01T12:00:00Z" % (1 + len(CHANGES))}
    entry.update(extra or {})
    return entry


def project(name, releases):
    os.makedirs(os.path.join(root, name), exist_ok=True)
    with open(os.path.join(root, name, "json"), "w") as f:
        json.dump({"info": {"name": name}, "releases": releases}, f, indent=1)


releases = {}
releases["1.0"] = [sdist("calc", "1.0", {"calc.py": BUG, "tests/test_calc.py": TEST, "CHANGES.rst": "".join(CHANGES)})]
CHANGES.insert(0, "1.1\n---\n- clamp() respects its upper bound (it returned lo for x > hi).\n\n")
releases["1.1"] = [sdist("calc", "1.1", {"calc.py": FIXED, "tests/test_calc.py": TEST2, "CHANGES.rst": "".join(CHANGES)})]
CHANGES.insert(0, "1.2\n---\n- README.\n\n")
releases["1.2"] = [sdist("calc", "1.2", {"calc.py": FIXED, "tests/test_calc.py": TEST2, "CHANGES.rst": "".join(CHANGES),
                                         "README": "calc\n"})]
releases["2.0rc1"] = [sdist("calc", "2.0rc1", {"calc.py": FIXED, "README": "rc\n"})]
releases["1.3"] = [sdist("calc", "1.3", {"calc.py": FIXED, "README": "yanked\n"}, {"yanked": True})]
project("calc", releases)
project("evil", {"1.0": [sdist("evil", "1.0", {"../../outside.txt": "x\n", "a.py": "x = 1\n"})]})
project("badsum", {"1.0": [sdist("badsum", "1.0", {"a.py": "x = 1\n"}, {"digests": {"sha256": "0" * 64}})]})
