"""invariance-audit: every verb that reads a file (tests/fuzz/fuzz.py)."""

# Tiny labelled data: 24 images of 8x8x1 in three classes (stripes plus noise),
# as nk-data writes them; a U-Net of widths 4,8 trained 2 steps; a pca extractor
# of 4 components. Every run takes milliseconds.


def data(name, seed=1, n=24):
    return ("/usr/bin/python3 -c \"import h5py, numpy as np; r = np.random.default_rng(%d); y = np.arange(%d) %% 3; "
            "x = (r.random((%d, 8, 8, 1)) * 0.3 + (y[:, None, None, None] == np.arange(8)[None, :, None, None] %% 3) * 0.7)"
            ".astype(np.float32); f = h5py.File('{w}/%s', 'w'); f.attrs['nk_schema'] = 'nk-data.images/1'; "
            "f['images'] = x; f['labels'] = y\"" % (seed, n, n, name))


IA = "invariance-audit -q --threads 1"
UNET = "--channels 4,8 --groups 2 --time-dim 8 --steps 2 --batch 4"
PRIOR = IA + " train-prior -i {w}/data.h5 " + UNET + " -o {w}/prior.h5"
DED = IA + " train-dedicated -i {w}/data.h5 --extractor planted:down4 " + UNET + " -o {w}/ded.h5"
SNN = "spike-sft -q --threads 1 pretrain -i {w}/data.h5 --conv 2 --steps 4 --epochs 1 --batch 8 -o {w}/snn.h5"
PCA = IA + " train-extractor -i {w}/data.h5 --kind pca --components 4 -o {w}/pca.h5"

RECIPES = [
    {"tool": "invariance-audit", "verb": "train-prior",
     "setup": [data("data.h5")], "inputs": {"data": "{w}/data.h5"},
     "run": IA + " train-prior -i {data} " + UNET + " -o {out}"},
    {"tool": "invariance-audit", "verb": "train-extractor",
     "setup": [data("data.h5")], "inputs": {"data": "{w}/data.h5"},
     "run": IA + " train-extractor -i {data} --kind cnn --epochs 1 --batch 8 -o {out}"},
    {"tool": "invariance-audit", "verb": "features",
     "setup": [data("data.h5"), data("q.h5", seed=2, n=3), PCA],
     "inputs": {"data": "{w}/data.h5", "query": "{w}/q.h5", "model": "{w}/pca.h5"},
     "run": IA + " features -i {data} --extractor {model} --query {query} --index 1 -o {out}"},
    {"tool": "invariance-audit", "verb": "sample",
     "setup": [data("data.h5"), data("q.h5", seed=2, n=3), PRIOR, PCA],
     "inputs": {"query": "{w}/q.h5", "prior": "{w}/prior.h5", "model": "{w}/pca.h5"},
     "run": IA + " sample --query {query} --all --extractor {model}:penultimate --prior {prior} --samples 2 --steps 2 --inner 2 -o {out}"},
    {"tool": "invariance-audit", "verb": "sample (planted, --grid)",
     "setup": [data("q.h5", seed=2, n=3), data("data.h5"), PRIOR],
     "inputs": {"query": "{w}/q.h5", "prior": "{w}/prior.h5"},
     "run": IA + " sample --query {query} --index 2 --extractor planted:down4 --prior {prior} --samples 2 --steps 2 --grid {w}/g.png -o {out}"},
    {"tool": "invariance-audit", "verb": "sample (a spike-sft network)",
     "setup": [data("data.h5"), data("q.h5", seed=2, n=3), PRIOR, SNN],
     "inputs": {"query": "{w}/q.h5", "prior": "{w}/prior.h5", "model": "{w}/snn.h5"},
     "run": IA + " sample --query {query} --index 1 --extractor {model}:penultimate --prior {prior} --samples 2 --steps 2 --inner 2 -o {out}"},
    {"tool": "invariance-audit", "verb": "train-dedicated",
     "setup": [data("data.h5")], "inputs": {"data": "{w}/data.h5"},
     "run": IA + " train-dedicated -i {data} --extractor planted:mask-left " + UNET + " -o {out}"},
    {"tool": "invariance-audit", "verb": "train-dedicated (--until-frechet)",
     "setup": [data("data.h5"), data("q.h5", seed=2, n=3), data("ref.h5", seed=3, n=12), PCA],
     "inputs": {"data": "{w}/data.h5", "query": "{w}/q.h5", "reference": "{w}/ref.h5", "model": "{w}/pca.h5"},
     "run": IA + " train-dedicated -i {data} --extractor planted:down4 " + UNET + " --until-frechet 1e-9 --queries {query}"
                 " --reference {reference} --samples 2 --sample-steps 2 --check-every 1 --evaluator {model} -o {out}"},
    {"tool": "invariance-audit", "verb": "sample (dedicated)",
     "setup": [data("data.h5"), data("q.h5", seed=2, n=3), DED],
     "inputs": {"query": "{w}/q.h5", "dedicated": "{w}/ded.h5"},
     "run": IA + " sample --query {query} --index 1 --extractor planted:down4 --guidance dedicated --dedicated {dedicated} --samples 2 --steps 2 -o {out}"},
    {"tool": "invariance-audit", "verb": "eval",
     "setup": [data("data.h5"), data("q.h5", seed=2, n=3), PRIOR, PCA, DED],
     "inputs": {"query": "{w}/q.h5", "reference": "{w}/data.h5", "prior": "{w}/prior.h5", "model": "{w}/pca.h5",
                "dedicated": "{w}/ded.h5"},
     "run": IA + " eval --queries {query} --count 2 --reference {reference} --samples 2 --steps 2 --inner 1 --bits-steps 1"
                 " --methods ndtm,invert,dedicated --extractors planted:down4,{model} --dedicated planted:down4={dedicated}"
                 " --prior {prior} --evaluator {model} -o {out}"},
    {"tool": "invariance-audit", "verb": "sample (--extractor-cmd)",
     "setup": [data("data.h5"), data("q.h5", seed=2, n=3), PRIOR],
     "inputs": {"query": "{w}/q.h5", "prior": "{w}/prior.h5"},
     "run": IA + " sample --query {query} --index 0 --extractor-cmd '/usr/bin/python3 {src}/data/invariance-audit/extractor_cmd.py mask-left'"
                 " --prior {prior} --samples 2 --steps 2 -o {out}"},
]
