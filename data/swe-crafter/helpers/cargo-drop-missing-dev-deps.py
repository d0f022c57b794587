"""cargo-drop-missing-dev-deps.py [REGISTRY]: edits ./Cargo.toml so that cargo
can resolve it offline against a local registry (default Debian's
/usr/share/cargo/registry): every dev-dependency that no crate folder of the
registry provides is removed (its line, or its [dev-dependencies.NAME]
table), and so are the [[bench]] targets (benchmarks need criterion and the
like, which Debian rarely packages). Normal dependencies are left alone: a
crate that needs a missing one cannot build, and should not seem to.
Prints what it removed. A skill's fix (rust-cargo.skill) runs it."""

import os
import re
import sys

registry = sys.argv[1] if len(sys.argv) > 1 else "/usr/share/cargo/registry"
have = set()
for entry in os.listdir(registry) if os.path.isdir(registry) else []:
    m = re.match(r"(.+)-[0-9][^-]*$", entry)
    if m:
        have.add(m.group(1).replace("_", "-"))

lines = open("Cargo.toml").read().splitlines(keepends=True)
out, removed = [], []
section, dropping = "", False
for line in lines:
    header = re.match(r"\s*\[\[?([^\]]+)\]\]?\s*$", line)
    if header:
        section = header.group(1).strip()
        dropping = False
        parts = [p.strip().strip("'\"") for p in re.split(r"\.(?=(?:[^'\"]*['\"][^'\"]*['\"])*[^'\"]*$)", section)]
        if line.strip().startswith("[[bench"):
            dropping = True
            removed.append("[[bench]]")
        elif "dev-dependencies" in parts and parts[-1] != "dev-dependencies":
            name = parts[-1]
            if name.replace("_", "-") not in have:
                dropping = True
                removed.append(name)
        if dropping:
            continue
    elif dropping:
        continue
    elif section.split(".")[-1].strip() == "dev-dependencies" or section.endswith("dev-dependencies"):
        m = re.match(r"\s*([A-Za-z0-9_-]+)\s*=", line)
        if m and m.group(1).replace("_", "-") not in have:
            removed.append(m.group(1))
            continue
    out.append(line)
open("Cargo.toml", "w").write("".join(out))
print("removed from Cargo.toml: " + (", ".join(removed) if removed else "nothing"))
