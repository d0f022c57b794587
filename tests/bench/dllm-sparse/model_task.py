"""model_task.py - the closed-book task and the measures of model.sh (issue #38).

  model_task.py prompts N SEED LIST OUT   N WordNet noun synsets of the training
      split (LIST: `nk-lm corpus --source wordnet --list`), read from
      /usr/share/wordnet as nk-lm's corpus renders them ("lemma, lemma (noun):
      gloss"): OUT/prompts.txt (the text up to and with "(noun):") and
      OUT/refs.txt (the gloss's definition, before any ';' or example).
  model_task.py measures OUT DENSE NAME...  for each generation NAME (NAME.h5
      from generate -o, NAME.jsonl from --jsonl, NAME.score.h5 from score under
      the dense model), one TSV row: the share of answer tokens equal to the
      dense generation's (DENSE), the gloss F1 (content words of the
      completion's first line against the reference definition's, SQuAD's
      bag-of-words F1, mean over prompts) and the likelihood bound per answer token.
"""
import json
import random
import re
import sys
from collections import Counter

import h5py
import numpy as np

ROOT = "/usr/share/wordnet"


def noun_synsets():
    """(name, document text, definition) of every noun synset, names as nk-lm gives them."""
    position = {}
    for line in open(f"{ROOT}/index.noun", encoding="latin-1"):
        if line.startswith("  "):
            continue
        f = line.split()
        count = int(f[2])
        offsets = f[-count:]
        position[f[0]] = {off: i for i, off in enumerate(offsets)}
    out = []
    for line in open(f"{ROOT}/data.noun", encoding="latin-1"):
        if line.startswith("  ") or "|" not in line:
            continue
        head, gloss = line.split("|", 1)
        f = head.split()
        words = [f[4 + 2 * i] for i in range(int(f[3], 16))]
        first = words[0].lower()
        sense = position.get(first, {}).get(f[0])
        if sense is None:
            continue
        name = "wordnet:%s.n.%02d" % (first, sense + 1)
        lemmas = ", ".join(w.replace("_", " ") for w in words)
        gloss = gloss.strip()
        definition = re.split(r';\s*"|;', gloss)[0].strip()
        out.append((name, lemmas + " (noun):", definition))
    return out


STOP = set("a an the of or and to in for with that is by as on from at its it be".split())


def words(text):
    return re.findall(r"[a-z0-9]+", text.lower())


def f1(prediction, reference):
    """SQuAD's bag-of-words F1 over content words (function words would credit any babble)."""
    p = [w for w in words(prediction) if w not in STOP]
    r = [w for w in words(reference) if w not in STOP]
    common = sum((Counter(p) & Counter(r)).values())
    if not p or not r or common == 0:
        return 0.0
    precision, recall = common / len(p), common / len(r)
    return 2 * precision * recall / (precision + recall)


def prompts(n, seed, listing, out):
    train = set()
    for line in open(listing):
        name, _, split = line.rstrip("\n").split("\t")
        if split == "train":
            train.add(name)
    # Prompts of at most 48 bytes (at most 49 tokens with BOS), so that an answer of
    # context - 56 tokens always fits; definitions of 4 to 16 words.
    chosen = [s for s in noun_synsets() if s[0] in train and len(s[1].encode()) <= 48 and 4 <= len(words(s[2])) <= 16]
    random.Random(int(seed)).shuffle(chosen)
    chosen = chosen[: int(n)]
    with open(f"{out}/prompts.txt", "w") as p, open(f"{out}/refs.txt", "w") as r:
        for _, prompt, definition in chosen:
            p.write(prompt + "\n")
            r.write(definition + "\n")


def answers(name):
    f = h5py.File(name + ".h5", "r")
    t, lengths = f["tokens"][()], f["prompt_lengths"][()]
    longest = lengths.max()
    return t[:, longest:]


def measures(out, dense, names):
    refs = [l.rstrip("\n") for l in open(f"{out}/refs.txt")]
    base = answers(f"{out}/{dense}")
    print("\t".join(["generation", "same_as_dense", "gloss_f1", "nll_per_token", "seconds"]))
    for name in names:
        a = answers(f"{out}/{name}")
        live = (base >= 0) | (a >= 0)
        same = float(((a == base) & live).sum() / max(1, live.sum()))
        completions = [json.loads(l)["completion"] for l in open(f"{out}/{name}.jsonl")]
        gloss = float(np.mean([f1(c.split("\n")[0], r) for c, r in zip(completions, refs)]))
        s = h5py.File(f"{out}/{name}.score.h5", "r")
        nll = float(s.attrs["nats"] / s.attrs["scored_tokens"])
        seconds = float(h5py.File(f"{out}/{name}.h5", "r").attrs["seconds"])
        print(f"{name}\t{same:.4f}\t{gloss:.4f}\t{nll:.4f}\t{seconds:.2f}")


if __name__ == "__main__":
    if sys.argv[1] == "prompts":
        prompts(*sys.argv[2:6])
    elif sys.argv[1] == "measures":
        measures(sys.argv[2], sys.argv[3], sys.argv[4:])
    else:
        sys.exit(__doc__)
