"""speedscale-sim: every verb that reads a file (tests/fuzz/fuzz.py)."""

# Three instances of 8 jobs each: every algorithm runs in milliseconds.
GEN = "speedscale-sim -q gen --jobs 8 --instances 3 --seed 1 -o {w}/inst.h5"
PRED_ALGOS = "yds,oa,las,pred-dynamic,pred-offline,pred-jobspeed"

RECIPES = [
    {"tool": "speedscale-sim", "verb": "gen --from-csv",
     "setup": ["printf 'id,release,deadline,work\\n1,0,4,4\\n2,1,2,3\\n3,5,9,1\\n4,5.5,7.25,0.5\\n' > {w}/trace.csv"],
     "inputs": {"csv": "{w}/trace.csv"}, "text": {"csv": True},
     "run": "speedscale-sim -q gen --from-csv {csv} -o {out}"},
    {"tool": "speedscale-sim", "verb": "solve",
     "setup": [GEN],
     "inputs": {"inst": "{w}/inst.h5"},
     "run": "speedscale-sim -q solve --threads 1 -i {inst} --algo yds,yds-naive,avr,oa,qoa,bkp -o {out}"},
    {"tool": "speedscale-sim", "verb": "solve --predictions",
     "setup": [GEN,
               "speedscale-sim -q predict --threads 1 -i {w}/inst.h5 --noise 0.3 --seed 4 -o {w}/pred.h5"],
     "inputs": {"inst": "{w}/inst.h5", "pred": "{w}/pred.h5"},
     "run": "speedscale-sim -q solve --threads 1 -i {inst} --predictions {pred} --algo " + PRED_ALGOS + " -o {out}"},
    {"tool": "speedscale-sim", "verb": "solve --predictions (profile)",
     "setup": [GEN,
               "speedscale-sim -q gen --jobs 8 --instances 4 --seed 99 -o {w}/train.h5",
               "speedscale-sim -q predict --threads 1 -i {w}/train.h5 --method mean --grid 16 -o {w}/learned.h5"],
     "inputs": {"pred": "{w}/learned.h5"},
     "run": "speedscale-sim -q solve --threads 1 -i {w}/inst.h5 --predictions {pred} --algo yds,oa,pred-dynamic,pred-offline -o {out}"},
    {"tool": "speedscale-sim", "verb": "predict",
     "setup": [GEN],
     "inputs": {"inst": "{w}/inst.h5"},
     "run": "speedscale-sim -q predict --threads 1 -i {inst} --noise 0.3 --seed 4 -o {out}"},
    {"tool": "speedscale-sim", "verb": "predict --method mean",
     "setup": ["speedscale-sim -q gen --jobs 8 --instances 4 --seed 99 -o {w}/train.h5"],
     "inputs": {"train": "{w}/train.h5"},
     "run": "speedscale-sim -q predict --threads 1 -i {train} --method mean --grid 16 -o {out}"},
    {"tool": "speedscale-sim", "verb": "eval",
     "setup": [GEN],
     "inputs": {"inst": "{w}/inst.h5"},
     "run": "speedscale-sim -q eval --threads 1 -i {inst} --noise 0,0.5 --eps-list 0,0.1 "
            "--plot curve.svg --profile-plot profile.svg -o {out}",
     "also": ["curve.svg", "profile.svg"]},
]
