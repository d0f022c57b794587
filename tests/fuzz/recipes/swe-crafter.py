"""swe-crafter: every verb that reads a file (tests/fuzz/fuzz.py): validate's
candidates, distill's instances, mine's env.json, env's skill files, run's
corpus, stats's run log, fetch's Debian source package (.dsc) and PyPI
index (NAME/json) and doctor's debian/control, on the fixture repositories."""

import os

FIXTURE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "data", "swe-crafter", "fixture-repo.sh")
SETUP = ["bash " + FIXTURE + " {w}/repo > /dev/null",
         "swe-crafter -q fetch git:{w}/repo --store {w}/st > /dev/null",
         "swe-crafter -q env -i repo --store {w}/st --sandbox none -o {w}/env.json",
         "swe-crafter -q mine -i repo --store {w}/st --env {w}/env.json --max 2 -o {w}/cand.jsonl"]

RECIPES = [
    {"tool": "swe-crafter", "verb": "validate",
     "setup": SETUP,
     "inputs": {"candidates": "{w}/cand.jsonl"},
     "text": {"candidates": True},
     "run": "swe-crafter -q validate -i {candidates} --store {w}/st --sandbox none --runs 1 --timeout 60 -o {out}"},
    {"tool": "swe-crafter", "verb": "distill",
     "setup": SETUP + ["swe-crafter -q mine -i repo --store {w}/st --env {w}/env.json -o {w}/all.jsonl",
                       "PATH=/usr/bin:$PATH swe-crafter -q validate -i {w}/all.jsonl --store {w}/st --sandbox none "
                       "--runs 1 -o {w}/inst.jsonl > /dev/null",
                       "test -s {w}/inst.jsonl"],
     "inputs": {"instances": "{w}/inst.jsonl"},
     "text": {"instances": True},
     "run": "PATH=/usr/bin:$PATH swe-crafter -q distill -i {instances} --store {w}/st --sandbox none --max-steps 4 "
            "--timeout 60 -o {out}"},
    {"tool": "swe-crafter", "verb": "env",
     "setup": SETUP,
     "inputs": {"skill": "{src}/data/swe-crafter/skills/python-pytest.skill"},
     "text": {"skill": True},
     "run": "PATH=/usr/bin:$PATH swe-crafter -q env -i repo --store {w}/st --sandbox none --timeout 60 "
            "--skills $(dirname {skill}) -o {out}"},
    {"tool": "swe-crafter", "verb": "mine",
     "setup": SETUP,
     "inputs": {"env": "{w}/env.json"},
     "text": {"env": True},
     "run": "swe-crafter -q mine -i repo --store {w}/st --env {env} -o {out}"},
    {"tool": "swe-crafter", "verb": "run",
     "setup": SETUP + ["echo git:{w}/repo > {w}/corpus.txt"],
     "inputs": {"corpus": "{w}/corpus.txt"},
     "text": {"corpus": True},
     "run": "PATH=/usr/bin:$PATH swe-crafter -q run --corpus {corpus} --store {w}/st --sandbox none --no-history "
            "--agent none --runs 1 --timeout 60 -o {out} > /dev/null"},
    {"tool": "swe-crafter", "verb": "stats",
     "setup": SETUP + ["echo git:{w}/repo > {w}/corpus.txt",
                       "PATH=/usr/bin:$PATH swe-crafter -q run --corpus {w}/corpus.txt --store {w}/st --sandbox none "
                       "--max 2 --agent none --runs 1 -o {w}/runout > /dev/null"],
     "inputs": {"log": "{w}/runout/run.h5"},
     "run": "swe-crafter -q stats -i {log} -o {out}"},
    {"tool": "swe-crafter", "verb": "fetch",
     "setup": ["bash {src}/data/swe-crafter/fixture-debian-src.sh {w}/debsrc"],
     "inputs": {"dsc": "{w}/debsrc/calc_1.0-1.dsc"},
     "text": {"dsc": True},
     # the fuzzed .dsc beside the package's tarballs, so that only its text differs
     "run": "cp -r {dsc} {w}/debsrc/case-$$.dsc && trap 'rm -rf {w}/debsrc/case-$$.dsc' EXIT && "
            "swe-crafter -q fetch debian-src:{w}/debsrc/case-$$.dsc --store $(mktemp -d) > /dev/null"},
    {"tool": "swe-crafter", "verb": "fetch",
     "setup": ["/usr/bin/python3 {src}/data/swe-crafter/fixture-pypi.py {w}/pypi"],
     "inputs": {"index": "{w}/pypi/calc/json"},
     "text": {"index": True},
     "run": "d=$(mktemp -d) && trap 'rm -rf $d' EXIT && mkdir -p $d/idx/calc && cp -r {index} $d/idx/calc/json && "
            "swe-crafter -q fetch pypi:calc --pypi-index file://$d/idx --store $d/st > /dev/null"},
    {"tool": "swe-crafter", "verb": "doctor",
     "setup": ["bash {src}/data/swe-crafter/fixture-debian-src.sh {w}/debsrc"],
     "inputs": {"control": "{w}/debsrc/calc-1.0/debian/control"},
     "text": {"control": True},
     # the fuzzed control file committed in a repository of its own
     "run": "d=$(mktemp -d) && trap 'rm -rf $d' EXIT && mkdir -p $d/r/debian && cp -r {control} $d/r/debian/control && "
            "git -C $d/r init -q && git -C $d/r add -A && git -C $d/r -c user.name=f -c user.email=f@l commit -q --allow-empty -m c && "
            "swe-crafter -q doctor -i $d/r --store $d/st > /dev/null"},
]
