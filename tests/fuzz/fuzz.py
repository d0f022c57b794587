#!/usr/bin/python3
"""fuzz.py - neurkit's own mutation fuzzer (neurkit(7) BAD INPUT).

Every recipe (tests/fuzz/recipes/TOOL.py, one file per tool) names a verb
that reads files, how to make valid inputs for it, and its command line. Each case copies one input,
mutates it (truncation, byte flips, h5py-crafted structural changes, text
edits, an empty file, a directory) and runs the verb; or, one case in four
where the command has numeric options, keeps the inputs valid and gives one
numeric option an absurd value (nan, inf, -1, 0, 1e18, 2^64, 1e-300, text).
A case FAILS on:

  crash      killed by a signal (SIGSEGV, SIGABRT, ...)
  hang       no exit within --timeout seconds
  exit       an exit status outside {0, 2, 3, 4}
  partial    a failed run (exit != 0) that left an output file
  temp       a temporary file (*.tmp.*) left in the case's folder
  message    a failed run whose stderr is not exactly one 'error:' line
  accepted   exit 0 with an option value of nan (an option is never NaN)

Usage: fuzz.py --bin BUILD/bin --source SRC [--cases N] [--seed S]
               [--timeout T] [--only TOOL[,TOOL] | --verbs TOOL:VERB,...]
               [--mutators NAME,...] [--keep DIR] [--time-limit S] [--verbose]

A recipe is a dict: tool, verb (a label), setup (shell commands making
valid inputs in {w}, the recipe's folder; {src} is the source tree),
inputs (name -> path), run (the command: {name} for each input, {out} and
{out2} for output files in the case's folder), optional text (name ->
True for text inputs: CSV, TOML, QASM), binary (name -> True for raw
binary inputs, mutated by bytes only) and also (further output names).
Exit 0 when no case failed; 1 otherwise (failures, with the mutant and the
command that reproduces each, are kept under --keep).
"""
import argparse
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

import h5py
import numpy as np

import importlib.util


def load_recipes():
    """Every tests/fuzz/recipes/*.py's RECIPES, tools in name order."""
    folder = os.path.join(os.path.dirname(os.path.abspath(__file__)), "recipes")
    out = []
    for name in sorted(os.listdir(folder)):
        if not name.endswith(".py"):
            continue
        spec = importlib.util.spec_from_file_location("recipes_" + name[:-3], os.path.join(folder, name))
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        out.extend(module.RECIPES)
    return out


# ----------------------------------------------------------------- mutators

def mut_truncate(src, dst, rng):
    data = open(src, "rb").read()
    keep = rng.randrange(0, max(1, len(data)))
    open(dst, "wb").write(data[:keep])
    return f"truncated to {keep} of {len(data)} bytes"


def mut_flip(src, dst, rng):
    data = bytearray(open(src, "rb").read())
    if not data:
        open(dst, "wb").write(data)
        return "empty file"
    flips = rng.randint(1, 8)
    where = []
    for _ in range(flips):
        # Half in the first 4 KiB (superblock, object headers), half anywhere.
        limit = min(len(data), 4096) if rng.random() < 0.5 else len(data)
        at = rng.randrange(limit)
        data[at] = rng.randrange(256)
        where.append(at)
    open(dst, "wb").write(bytes(data))
    return f"{flips} byte(s) overwritten at {sorted(where)}"


def mut_empty(src, dst, rng):
    open(dst, "wb").close()
    return "empty file"


def mut_directory(src, dst, rng):
    os.makedirs(dst)
    return "a directory"


def datasets_of(f):
    names = []
    f.visititems(lambda name, obj: names.append(name) if isinstance(obj, h5py.Dataset) else None)
    return names


def objects_with_attrs(f):
    names = ["/"] if len(f.attrs) else []
    f.visititems(lambda name, obj: names.append(name) if len(obj.attrs) else None)
    return names


def mut_structure(src, dst, rng):
    shutil.copy(src, dst)
    with h5py.File(dst, "r+") as f:
        names = datasets_of(f)
        if not names:
            return "no dataset to change"
        name = rng.choice(names)
        d = f[name]
        data, attrs = d[()], dict(d.attrs)
        kind = rng.choice(["delete", "group", "dtype", "rows", "rank", "empty", "scalar", "value"])
        if kind == "value" and not (isinstance(data, np.ndarray) and data.size and data.dtype.kind in "iuf"):
            kind = "delete"

        def replace(new):
            del f[name]
            f[name] = new
            for k, v in attrs.items():
                f[name].attrs[k] = v

        if kind == "delete":
            del f[name]
        elif kind == "group":
            del f[name]
            f.create_group(name)
        elif kind == "dtype":
            if isinstance(data, np.ndarray) and data.dtype.kind == "f":
                replace(data.astype(np.int64))
            elif isinstance(data, np.ndarray) and data.dtype.kind in "iu":
                replace(data.astype(np.float64) + 0.5)
            else:
                replace(np.zeros(np.shape(data) or (1,), np.float32))
        elif kind == "rows":
            if isinstance(data, np.ndarray) and data.ndim and data.shape[0] > 1:
                replace(data[: data.shape[0] // 2] if rng.random() < 0.5 else np.concatenate([data, data[:1]]))
            else:
                replace(np.zeros((3, 2), np.float64))
        elif kind == "rank":
            replace(np.asarray(data)[..., None] if rng.random() < 0.5 else np.asarray(data).reshape(-1)[:1].reshape(()))
        elif kind == "empty":
            shape = (0,) + tuple(np.shape(data)[1:])
            replace(np.zeros(shape, np.asarray(data).dtype if np.asarray(data).dtype.kind in "iuf" else np.float64))
        elif kind == "scalar":
            replace(np.float64(7.0))
        else:
            flat = data.reshape(-1).copy()
            at = rng.randrange(flat.size)
            if data.dtype.kind == "f":
                flat[at] = rng.choice([np.nan, np.inf, -np.inf, 1e300 if data.dtype.itemsize == 8 else 3e38, -1e300 if data.dtype.itemsize == 8 else -3e38, 0.0])
            else:
                info = np.iinfo(data.dtype)
                flat[at] = rng.choice([info.max, info.min, -1 if info.min < 0 else 0, 0])
            replace(flat.reshape(data.shape))
        return f"dataset /{name}: {kind}"


def mut_attribute(src, dst, rng):
    shutil.copy(src, dst)
    with h5py.File(dst, "r+") as f:
        owners = objects_with_attrs(f)
        if not owners:
            return "no attribute to change"
        owner = rng.choice(owners)
        obj = f[owner]
        key = rng.choice(list(obj.attrs.keys()))
        kind = rng.choice(["delete", "garbage", "nan", "huge", "negative"])
        if kind == "delete":
            del obj.attrs[key]
        elif kind == "garbage":
            obj.attrs[key] = "\x01garbage\xff"
        elif kind == "nan":
            obj.attrs[key] = np.nan
        elif kind == "huge":
            obj.attrs[key] = np.int64(2**62)
        else:
            obj.attrs[key] = np.int64(-5)
        return f"attribute {owner}@{key}: {kind}"


def mut_text(src, dst, rng):
    lines = open(src, "rb").read().split(b"\n")
    kind = rng.choice(["drop-line", "dup-line", "nan", "negative", "huge", "garbage", "swap"])
    if len(lines) > 1:
        at = rng.randrange(len(lines))
        if kind == "drop-line":
            del lines[at]
        elif kind == "dup-line":
            lines.insert(at, lines[at])
        elif kind == "swap":
            other = rng.randrange(len(lines))
            lines[at], lines[other] = lines[other], lines[at]
        else:
            token = {"nan": b"nan", "negative": b"-3", "huge": b"1e400", "garbage": b"\xff\x00x"}[kind]
            fields = lines[at].split(b",") if b"," in lines[at] else lines[at].split(b"=")
            fields[rng.randrange(len(fields))] = token
            lines[at] = (b"," if b"," in lines[at] else b"=").join(fields)
    open(dst, "wb").write(b"\n".join(lines))
    return f"text: {kind}"


HDF5_MUTATORS = [mut_truncate, mut_flip, mut_flip, mut_structure, mut_structure, mut_structure, mut_attribute,
                 mut_empty, mut_directory]
TEXT_MUTATORS = [mut_text, mut_text, mut_text, mut_truncate, mut_flip, mut_empty, mut_directory]
# Raw binary inputs (binary=True: frames of a model command): bytes only.
BINARY_MUTATORS = [mut_truncate, mut_truncate, mut_flip, mut_flip, mut_empty, mut_directory]
MUTATOR_NAMES = {"truncate": mut_truncate, "flip": mut_flip, "structure": mut_structure, "attribute": mut_attribute,
                 "empty": mut_empty, "directory": mut_directory, "text": mut_text, "option": None}

# A numeric option in a recipe's command: --name VALUE or --name=VALUE, VALUE a
# number or a comma-separated list of numbers.
NUMBER = r"[-+]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:e[-+]?[0-9]+)?"
OPTION_RE = re.compile(r"(--[a-z][a-z0-9-]*)([ =])(" + NUMBER + r"(?:[,:x]" + NUMBER + r")*)(?=\s|$)")
OPTION_VALUES = ["nan", "inf", "-inf", "-1", "0", "1e18", "-1e18", "18446744073709551616", "1e-300", "abc", "''"]


GLOBAL_WITH_VALUE = {"--threads", "--device", "--seed", "--config"}
HELP_OPTION_RE = re.compile(r"^\s+(?:-[a-zA-Z],)?(--[a-z][a-z0-9-]*) (?:INT|UINT|FLOAT)\b", re.M)
_help_cache = {}


def verb_of(template, tool):
    """The verb a recipe's command runs: the first word after the tool that is not a global option."""
    words = template.split()
    if tool not in words:
        return None
    i = words.index(tool) + 1
    while i < len(words) and words[i].startswith("-"):
        i += 2 if words[i] in GLOBAL_WITH_VALUE else 1
    return words[i] if i < len(words) else None


def help_options(tool, verb, env):
    """The numeric options (INT, UINT, FLOAT) the verb's --help lists."""
    key = (tool, verb)
    if key not in _help_cache:
        text = subprocess.run([tool, verb, "--help"], env=env, capture_output=True, text=True).stdout if verb else ""
        _help_cache[key] = sorted(set(HELP_OPTION_RE.findall(text)) - {"--threads"})
    return _help_cache[key]


def numeric_options(template):
    return list(OPTION_RE.finditer(template))


def mut_option(template, tool, env, rng):
    """The template with one numeric option given an absurd value: one already in
    the command, or any the verb's --help lists (inserted after the verb);
    returns (template, description, value)."""
    value = rng.choice(OPTION_VALUES)
    present = numeric_options(template)
    verb = verb_of(template, tool)
    listed = help_options(tool, verb, env)
    if listed and (not present or rng.random() < 0.7):
        name = rng.choice(listed)
        for m in present:
            if m.group(1) == name:
                return template[: m.start(3)] + value + template[m.end(3):], f"option {name} {m.group(3)} -> {value}", value
        at = template.split(tool, 1)
        head, rest = at[0] + tool, at[1]
        i = rest.index(" " + verb) + len(verb) + 1
        return head + rest[:i] + f" {name} {value}" + rest[i:], f"option {name} {value} (added)", value
    m = rng.choice(present)
    return template[: m.start(3)] + value + template[m.end(3):], f"option {m.group(1)} {m.group(3)} -> {value}", value


# ----------------------------------------------------------------- running

def run_case(cmd, cwd, env, timeout):
    """Runs 'cmd' in its own process group; returns (status, stdout, stderr, seconds); status None on timeout."""
    start = time.time()
    proc = subprocess.Popen(cmd, shell=True, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, start_new_session=True)
    try:
        out, err = proc.communicate(timeout=timeout)
        status = proc.returncode
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        status = None
    return status, out, err, time.time() - start


def judge(status, err, outputs, case_dir, option_value=None):
    """The failure class of a finished case, or None."""
    if status is None:
        return "hang"
    if status == 0 and option_value == "nan":
        return "accepted (exit 0 with a nan option value)"
    if status < 0 or status >= 128:
        sig = -status if status < 0 else status - 128
        return f"crash ({signal.Signals(sig).name if sig in signal.Signals._value2member_map_ else sig})"
    if status not in (0, 2, 3, 4):
        return f"exit {status}"
    if status != 0:
        left = [o for o in outputs if os.path.lexists(o)]
        if left:
            return "partial (" + ", ".join(os.path.basename(o) for o in left) + ")"
    temps = [n for n in os.listdir(case_dir) if ".tmp." in n]
    if temps:
        return "temp (" + ", ".join(temps) + ")"
    if status != 0:
        lines = [line for line in err.decode(errors="replace").splitlines() if line.strip()]
        errors = [line for line in lines if ": error: " in line]
        if len(errors) != 1:
            return f"message ({len(errors)} 'error:' lines in {len(lines)})"
    return None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bin", required=True)
    ap.add_argument("--source", required=True)
    ap.add_argument("--cases", type=int, default=200)
    ap.add_argument("--seed", type=int, default=1)
    # above the 30 s within which nk::h5::File::open stops a libhdf5 that hangs on a file (exit 3)
    ap.add_argument("--timeout", type=float, default=60)
    ap.add_argument("--time-limit", type=float, default=0, help="stop starting cases after this many seconds of cases (0: none)")
    ap.add_argument("--only", default="", help="tools, comma-separated")
    ap.add_argument("--verbs", default="", help="TOOL:VERB pairs, comma-separated")
    ap.add_argument("--mutators", default="", help="only these mutators: " + ",".join(MUTATOR_NAMES))
    ap.add_argument("--keep", default="", help="folder for the failing cases (mutant and command)")
    ap.add_argument("--list", action="store_true", help="print the recipes and exit")
    ap.add_argument("--verbose", action="store_true", help="print every case: verb, mutation, exit status")
    a = ap.parse_args()

    chosen = load_recipes()
    allowed = None
    if a.mutators:
        unknown = set(a.mutators.split(",")) - set(MUTATOR_NAMES)
        if unknown:
            print(f"fuzz: unknown mutator(s) {sorted(unknown)}", file=sys.stderr)
            return 2
        allowed = {MUTATOR_NAMES[m] for m in a.mutators.split(",")}
    if a.only:
        tools = set(a.only.split(","))
        chosen = [r for r in chosen if r["tool"] in tools]
    if a.verbs:
        pairs = set(a.verbs.split(","))
        chosen = [r for r in chosen if f"{r['tool']}:{r['verb']}" in pairs]
    if a.list:
        for r in chosen:
            print(f"{r['tool']}:{r['verb']}\t{r['run']}")
        return 0
    if not chosen:
        print("fuzz: no recipe selected", file=sys.stderr)
        return 2

    env = dict(os.environ)
    env["PATH"] = os.path.abspath(a.bin) + os.pathsep + env["PATH"]
    env["NK_SOURCE"] = os.path.abspath(a.source)
    env.pop("NK_PROGRESS", None)
    # Under the sanitizers a memory error still fails a case (exit 1); what a
    # run that exits on bad input leaves unfreed is not the fuzzer's concern.
    # Absurd sizes must fail as C++ allocation failures do (std::bad_alloc), not as ASan reports.
    env["ASAN_OPTIONS"] = (env.get("ASAN_OPTIONS", "") + ":detect_leaks=0:allocator_may_return_null=1").lstrip(":")
    root = tempfile.mkdtemp(prefix="nk-fuzz-")
    rng = random.Random(a.seed)
    started = time.time()
    counts, failures = {}, []
    try:
        # Valid inputs, made once per recipe.
        broken_recipes = 0
        made = []  # (setup templates, folder) of the recipes set up so far
        for i, r in enumerate(chosen):
            w = os.path.join(root, f"valid{i}")
            steps = list(r.get("setup", []))
            # A recipe whose set-up begins with another's whole set-up starts
            # from a copy of that one's folder (recipes of one tool share
            # their models and corpora; under the sanitizers these take most
            # of a bounded run).
            done, source = 0, None
            for prev_steps, prev_dir in made:
                if len(prev_steps) > done and steps[:len(prev_steps)] == prev_steps:
                    done, source = len(prev_steps), prev_dir
            if source:
                shutil.copytree(source, w, symlinks=True)
            else:
                os.makedirs(w)
            r["_dir"] = w
            made.append((steps, w))
            set_up_from = time.time()
            for step in steps[done:]:
                cmd = step.format(w=w, src=env["NK_SOURCE"])
                status, out, err, _ = run_case(cmd, w, env, 600)
                if status != 0:
                    print(f"fuzz: setup of {r['tool']} {r['verb']} failed: {cmd}\n{err.decode(errors='replace')}",
                          file=sys.stderr)
                    return 2
            # The unmutated command must succeed: a recipe that fails on valid input is a broken recipe.
            case = os.path.join(root, f"check{i}")
            os.makedirs(case)
            subst = {k: v.format(w=w, src=env["NK_SOURCE"]) for k, v in r["inputs"].items()}
            subst.update(out=os.path.join(case, "out.h5"), out2=os.path.join(case, "out2.h5"), src=env["NK_SOURCE"], w=w)
            status, _, err, _ = run_case(r["run"].format(**subst), case, env, a.timeout * 4)
            if status != 0:
                print(f"fuzz: {r['tool']} {r['verb']} fails on valid input (exit {status}):\n{err.decode(errors='replace')}",
                      file=sys.stderr)
                broken_recipes += 1
            if a.verbose:
                print(f"set-up {r['tool']} {r['verb']}: {time.time() - set_up_from:.1f} s", flush=True)
        if broken_recipes:
            return 2
        cases_started = time.time()  # the time limit counts the cases, not the set-up
        for n in range(a.cases):
            if a.time_limit and time.time() - cases_started > a.time_limit:
                break
            r = chosen[n % len(chosen)]
            key = f"{r['tool']} {r['verb']}"
            counts[key] = counts.get(key, 0) + 1
            case = os.path.join(root, f"case{n}")
            os.makedirs(case)
            subst = {k: v.format(w=r["_dir"], src=env["NK_SOURCE"]) for k, v in r["inputs"].items()}
            template, option_value = r["run"], None
            options_allowed = allowed is None or None in allowed
            files_allowed = allowed is None or allowed - {None}
            has_options = numeric_options(template) or help_options(r["tool"], verb_of(template, r["tool"]), env)
            if has_options and options_allowed and (not files_allowed or rng.random() < 0.25):
                template, what, option_value = mut_option(template, r["tool"], env, rng)
            else:
                name = rng.choice(sorted(r["inputs"]))
                valid = r["inputs"][name].format(w=r["_dir"], src=env["NK_SOURCE"])
                mutant = os.path.join(case, "in_" + os.path.basename(valid))
                mutators = (TEXT_MUTATORS if r.get("text", {}).get(name) else
                            BINARY_MUTATORS if r.get("binary", {}).get(name) else HDF5_MUTATORS)
                if allowed is not None:
                    mutators = [m for m in mutators if m in allowed] or [mut_empty]
                what = rng.choice(mutators)(valid, mutant, rng)
                subst[name] = mutant
            outputs = [os.path.join(case, "out.h5"), os.path.join(case, "out2.h5")]
            subst.update(out=outputs[0], out2=outputs[1], src=env["NK_SOURCE"], w=r["_dir"])
            cmd = template.format(**subst)
            outputs += [os.path.join(case, o) for o in r.get("also", [])]
            status, out, err, seconds = run_case(cmd, case, env, a.timeout)
            verdict = judge(status, err, outputs, case, option_value)
            if a.verbose:
                print(f"case {n}: {key}: {what}: exit {status}{' FAIL ' + verdict if verdict else ''}", flush=True)
            if verdict:
                failures.append((key, verdict, what, cmd, err.decode(errors="replace").strip()[-400:]))
                if a.keep:
                    dest = os.path.join(a.keep, f"case{n}")
                    shutil.rmtree(dest, ignore_errors=True)
                    shutil.copytree(case, dest, symlinks=True)
                    with open(os.path.join(dest, "README"), "w") as f:
                        f.write(f"{key}: {verdict}\nmutation: {what}\ncommand: {cmd}\nstderr:\n{err.decode(errors='replace')}\n")
            shutil.rmtree(case, ignore_errors=True)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    print(f"{'verb':<32} {'cases':>6} {'failed':>7}")
    for key in sorted(counts):
        print(f"{key:<32} {counts[key]:>6} {sum(1 for f in failures if f[0] == key):>7}")
    print(f"{'all':<32} {sum(counts.values()):>6} {len(failures):>7}   ({time.time() - started:.0f} s, seed {a.seed})")
    for key, verdict, what, cmd, err in failures:
        print(f"FAIL {key}: {verdict}\n     mutation: {what}\n     command: {cmd}\n     stderr: {err.splitlines()[-1] if err else ''}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
