"""teacher-limits: every verb that reads a file (tests/fuzz/fuzz.py)."""

TL = "teacher-limits -q --threads 1"
# A small he3 teacher (d = 8, k = 3). The large noise keeps theory's fixed-point equations fast (well under
# a second; at Delta ~ 0.1 they take seconds).
TEACHER = TL + " teacher --d 8 --k 3 --activation he3 --noise 1000 --seed 1 -o {w}/t.h5"
DATA = TL + " data -i {w}/t.h5 --n 60 --test 30 --seed 2 -o {w}/d.h5"
# amp needs k = 1; a linear teacher with large noise runs in a fraction of a second.
AMP_DATA = [TL + " teacher --d 16 --k 1 --activation linear --noise 1000 --seed 3 -o {w}/t1.h5",
            TL + " data -i {w}/t1.h5 --n 40 --test 20 --seed 4 -o {w}/d1.h5"]
HMC = " --chains 1 --samples 10 --warmup 10 --leapfrog 4 --batches 2"
ADAM = " --widths 1,k --epochs 3 --batch 16 --lr 0.01 --restarts 1 --patience 2 --ridge-features 1"

RECIPES = [
    {"tool": "teacher-limits", "verb": "data",
     "setup": [TEACHER],
     "inputs": {"teacher": "{w}/t.h5"},
     "run": TL + " data -i {teacher} --n 60 --test 30 --seed 2 -o {out}"},
    {"tool": "teacher-limits", "verb": "theory",
     "setup": [TEACHER],
     "inputs": {"teacher": "{w}/t.h5"},
     "run": TL + " theory -i {teacher} --n 10,100,1000 --widths 1,3 -o {out}"},
    {"tool": "teacher-limits", "verb": "theory --config",
     "setup": ["printf 'threads = 1\\nquiet = true\\n[theory]\\nd = 6\\nk = 3\\nbeta = 1.5\\nactivation = \"he3\"\\n"
               "noise = 1000\\nn = [10, 100, 1000]\\nwidths = [1, 3]\\n' > {w}/c.toml"],
     "inputs": {"config": "{w}/c.toml"}, "text": {"config": True},
     "run": "teacher-limits --config {config} theory -o {out}"},
    {"tool": "teacher-limits", "verb": "hmc",
     "setup": [TEACHER, DATA],
     "inputs": {"data": "{w}/d.h5"},
     "run": TL + " hmc -i {data}" + HMC + " -o {out}"},
    {"tool": "teacher-limits", "verb": "hmc --n",
     "setup": [TEACHER],
     "inputs": {"teacher": "{w}/t.h5"},
     "run": TL + " hmc -i {teacher} --n 40 --data-seeds 0,1 --test 20" + HMC + " -o {out}"},
    {"tool": "teacher-limits", "verb": "amp",
     "setup": AMP_DATA,
     "inputs": {"data": "{w}/d1.h5"},
     "run": TL + " amp -i {data} --iterations 3 -o {out}"},
    {"tool": "teacher-limits", "verb": "adam",
     "setup": [TEACHER, DATA],
     "inputs": {"data": "{w}/d.h5"},
     "run": TL + " adam -i {data}" + ADAM + " -o {out}"},
    {"tool": "teacher-limits", "verb": "adam --n",
     "setup": [TEACHER],
     "inputs": {"teacher": "{w}/t.h5"},
     "run": TL + " adam -i {teacher} --n 40 --test 20" + ADAM + " -o {out}"},
    {"tool": "teacher-limits", "verb": "report",
     "setup": [TEACHER, DATA,
               TL + " theory -i {w}/t.h5 --n 10,100,1000 -o {w}/th.h5",
               TL + " hmc -i {w}/d.h5" + HMC + " -o {w}/h.h5",
               TL + " adam -i {w}/d.h5" + ADAM + " -o {w}/a.h5"],
     "inputs": {"theory": "{w}/th.h5", "hmc": "{w}/h.h5", "adam": "{w}/a.h5"},
     "run": TL + " report -i {theory} {hmc} {adam} --svg fig -o {out}",
     "also": ["fig-eps.svg", "fig-overlap.svg", "fig-kc.svg", "fig-onset.svg", "fig-width.svg"]},
]
