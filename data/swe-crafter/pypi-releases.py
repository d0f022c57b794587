"""pypi-releases.py BASE NAME VERSION K OUTDIR: the source distributions of K
consecutive final releases of a PyPI project, ending at VERSION (or the latest),
from PyPI's JSON API (BASE/NAME/json; BASE may be a mirror or a file:// folder
laid out the same way). Each sdist is checked against its sha256 and unpacked
into OUTDIR/VERSION with its top folder stripped. Prints a line per release,
oldest first: VERSION, the sdist's upload time (ISO 8601), its file name.
Exit 3 on an unknown project or version, a malformed index or a bad sdist
(sha256, unsafe or corrupt archive), 4 on a local index that cannot be
read, 1 on a network failure.
Used by swe-crafter fetch pypi: (swe-crafter(1))."""

import hashlib
import json
import os
import re
import shutil
import sys
import tarfile
import tempfile
import urllib.error
import urllib.parse
import urllib.request
import zipfile


def fail(code, message):
    sys.stderr.write(message + "\n")
    sys.exit(code)


def get(url):
    with urllib.request.urlopen(url, timeout=120) as r:
        return r.read()


def safe(path):
    """A member name that stays inside the folder it is unpacked into."""
    parts = path.replace("\\", "/").split("/")
    return not path.startswith("/") and ".." not in parts


def check_members(archive):
    """Refuses archives whose members would land outside their folder (no
    extraction filter in Debian 12's Python)."""
    if tarfile.is_tarfile(archive):
        with tarfile.open(archive) as t:
            for m in t.getmembers():
                if not safe(m.name) or ((m.issym() or m.islnk()) and not safe(m.linkname)) or m.isdev():
                    return m.name
    elif zipfile.is_zipfile(archive):
        with zipfile.ZipFile(archive) as z:
            for n in z.namelist():
                if not safe(n):
                    return n
    return None


def key(version):
    return tuple(int(p) for p in version.split("."))


def main():
    base, name, want, k, outdir = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5]
    try:
        index_url = base.rstrip("/") + "/" + name + "/json"
        meta = json.loads(get(index_url))
    except urllib.error.HTTPError as e:
        fail(3 if e.code == 404 else 1, "PyPI has no project '%s' (%s)" % (name, e))
    except (urllib.error.URLError, OSError) as e:
        fail(local_error_code(e), "cannot read PyPI's index for '%s': %s" % (name, e))
    except ValueError as e:
        fail(3, "PyPI's answer for '%s' is not JSON: %s" % (name, e))
    try:
        releases = pick(meta, name, want, k)
    except (KeyError, TypeError, AttributeError, ValueError) as e:
        fail(3, "PyPI's index for '%s' is malformed: %s: %s" % (name, type(e).__name__, e))
    for version, f in releases:
        try:
            # a mirror may answer with URLs relative to the index's
            data = get(urllib.parse.urljoin(index_url, f["url"]))
        except urllib.error.HTTPError as e:
            fail(3 if e.code == 404 else 1, "%s: cannot download: %s" % (f["filename"], e))
        except (urllib.error.URLError, OSError, ValueError) as e:
            fail(local_error_code(e) if not isinstance(e, ValueError) else 3,
                 "%s: cannot download: %s" % (f["filename"], e))
        unpack(f, data, version, outdir)
        print("%s\t%s\t%s" % (version, f.get("upload_time_iso_8601") or f.get("upload_time", ""), f["filename"]))


def local_error_code(e):
    """A file:// index's missing file is bad input (3), an unreadable one I/O (4), the network a failure (1)."""
    reason = getattr(e, "reason", e)
    if isinstance(reason, FileNotFoundError):
        return 3
    if isinstance(reason, (IsADirectoryError, NotADirectoryError, PermissionError)):
        return 4
    return 1


def pick(meta, name, want, k):
    """The last k final releases with an sdist, ending at 'want' (or the latest), oldest first."""
    releases = []
    for version, files in meta.get("releases", {}).items():
        if not re.fullmatch(r"[0-9]+(\.[0-9]+)*", version):
            continue  # final releases only: no pre-, post- or dev releases
        sdists = [f for f in files if f.get("packagetype") == "sdist" and not f.get("yanked")]
        if sdists:
            releases.append((version, sdists[0]))
    releases.sort(key=lambda r: key(r[0]))
    if not releases:
        fail(3, "'%s' has no final release with a source distribution" % name)
    if want:
        versions = [v for v, _ in releases]
        if want not in versions:
            fail(3, "'%s' has no final release %s with a source distribution" % (name, want))
        releases = releases[:versions.index(want) + 1]
    for _, f in releases:
        if not isinstance(f["url"], str) or not isinstance(f["filename"], str) or "/" in f["filename"] or \
                not f["filename"] or not isinstance(f.get("digests", {}), dict):
            raise ValueError("an sdist without a url, a plain filename or digests")
    return releases[-k:]


def unpack(f, data, version, outdir):
    """Checks the sdist's sha256 and unpacks it into OUTDIR/VERSION, its top folder stripped."""
    digest = f.get("digests", {}).get("sha256")
    if digest and hashlib.sha256(data).hexdigest() != digest:
        fail(3, "%s: sha256 mismatch (the index and the file disagree)" % f["filename"])
    with tempfile.TemporaryDirectory() as tmp:
        archive = os.path.join(tmp, f["filename"])
        with open(archive, "wb") as out:
            out.write(data)
        unpacked = os.path.join(tmp, "x")
        try:
            bad = check_members(archive)
            if bad:
                fail(3, "%s: a member outside its folder: %s" % (f["filename"], bad))
            shutil.unpack_archive(archive, unpacked)
        except SystemExit:
            raise
        except Exception as e:  # a corrupt archive: tarfile, zipfile, gzip and zlib each raise their own
            fail(3, "%s: cannot unpack: %s: %s" % (f["filename"], type(e).__name__, e))
        top = os.listdir(unpacked)
        one = len(top) == 1 and os.path.isdir(os.path.join(unpacked, top[0]))
        shutil.copytree(os.path.join(unpacked, top[0]) if one else unpacked, os.path.join(outdir, version),
                        symlinks=True)


if __name__ == "__main__":
    main()
