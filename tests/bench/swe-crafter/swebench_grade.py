"""swebench_grade.py RUN_DIR...: SWE-bench's own grading (the swebench package
from PyPI, run in the benchmark venv) on swe-crafter's status maps, beside
swe-crafter's verdicts. For every validated candidate of the runs' folders
(RUN_DIR/repos/NAME/{candidates.jsonl, verdicts.tsv, instances.jsonl,
status-maps.jsonl}):

- swebench's notion of a passed and a failed test (test_passed, test_failed)
  decides FAIL_TO_PASS (failed in every run before the fix, passed in every
  run after), PASS_TO_PASS (passed in every run of both) and pass-to-fail;
  a candidate is admitted with at least one FAIL_TO_PASS, no pass-to-fail
  test and the runner's summary after the fix: compared with swe-crafter's
  admission and lists;
- for each admitted instance, get_eval_tests_report + get_resolution_status
  on every after-fix run's status map with the instance's own lists as gold:
  RESOLVED_FULL expected; on every before-fix run: not RESOLVED_FULL.

Prints the counts, then one line of JSON for the benchmark's tables."""

import glob
import json
import os
import sys

from swebench.harness.constants import FAIL_TO_PASS, PASS_TO_PASS
from swebench.harness.grading import get_eval_tests_report, get_resolution_status, test_failed, test_passed


def lines(path):
    return [json.loads(l) for l in open(path)] if os.path.exists(path) else []


def main():
    n = agree = lists_agree = full_after = after_runs = not_full_before = before_runs = 0
    disagreements = []
    for run in sys.argv[1:]:
        for repo in sorted(glob.glob(os.path.join(run, "repos", "*"))):
            verdicts = {}
            if os.path.exists(os.path.join(repo, "verdicts.tsv")):
                for l in open(os.path.join(repo, "verdicts.tsv")):
                    parts = l.rstrip("\n").split("\t")
                    if len(parts) >= 2:
                        verdicts[parts[0]] = parts[1]
            inst = {i["instance_id"]: i for i in lines(os.path.join(repo, "instances.jsonl"))}
            maps = {}
            for m in lines(os.path.join(repo, "status-maps.jsonl")):
                maps.setdefault(m["instance_id"], {"before": [], "after": []})[m["state"]].append(m)
            for iid, verdict in verdicts.items():
                if iid not in maps:
                    continue  # the state could not be tested (a build that fails after the fix): no maps
                n += 1
                before, after = maps[iid]["before"], maps[iid]["after"]
                tests = set()
                for m in before + after:
                    tests.update(m["status"])
                f2p = sorted(t for t in tests if all(test_failed(t, m["status"]) for m in before)
                             and all(test_passed(t, m["status"]) for m in after))
                p2p = sorted(t for t in tests if all(test_passed(t, m["status"]) for m in before + after))
                p2f = [t for t in tests if all(test_passed(t, m["status"]) for m in before)
                       and all(test_failed(t, m["status"]) for m in after)]
                summary = bool(after) and all(m["summary"] for m in after)
                admitted = bool(f2p) and not p2f and summary
                ours = verdict == "admitted"
                if admitted == ours:
                    agree += 1
                else:
                    disagreements.append((iid, verdict, len(f2p), len(p2f)))
                if ours and iid in inst:
                    gold = {FAIL_TO_PASS: json.loads(inst[iid]["FAIL_TO_PASS"]),
                            PASS_TO_PASS: json.loads(inst[iid]["PASS_TO_PASS"])}
                    lists_agree += gold[FAIL_TO_PASS] == f2p and sorted(gold[PASS_TO_PASS]) == p2p
                    for m in after:
                        after_runs += 1
                        full_after += get_resolution_status(get_eval_tests_report(m["status"], gold)) == "RESOLVED_FULL"
                    for m in before:
                        before_runs += 1
                        not_full_before += get_resolution_status(
                            get_eval_tests_report(m["status"], gold)) != "RESOLVED_FULL"
    print("candidates graded by swebench: %d" % n)
    print("admission decisions that agree: %d / %d" % (agree, n))
    print("admitted instances whose FAIL_TO_PASS and PASS_TO_PASS lists agree: %d" % lists_agree)
    print("after-fix runs RESOLVED_FULL by swebench: %d / %d" % (full_after, after_runs))
    print("before-fix runs not RESOLVED_FULL: %d / %d" % (not_full_before, before_runs))
    for d in disagreements[:10]:
        print("disagreement: %s (ours %s; swebench's rules: %d fail-to-pass, %d pass-to-fail)" % d)
    print(json.dumps({"graded": n, "agree": agree, "lists_agree": lists_agree, "full_after": full_after,
                      "after_runs": after_runs, "not_full_before": not_full_before, "before_runs": before_runs}))


if __name__ == "__main__":
    main()
