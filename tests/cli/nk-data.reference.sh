# nk-data.reference.sh - nk-data's output checked by independent readers:
# h5py + scikit-image for images, a numpy IDX parser for Fashion-MNIST.
. "$(dirname "$0")/lib.sh"

nk-data import "$SKIMAGE_DATA/camera.png" "$SKIMAGE_DATA/moon.png" -o gray.h5 2>/dev/null
nk-data import "$SKIMAGE_DATA/astronaut.png" "$SKIMAGE_DATA/coffee.png" --resize 400x400 -o rgb.h5 2>/dev/null
nk-data import "$SKIMAGE_DATA/coffee.png" -o coffee.h5 2>/dev/null
nk-data import-idx "$FMNIST/t10k-images-idx3-ubyte.gz" "$FMNIST/t10k-labels-idx1-ubyte.gz" --offset 7 --limit 300 -o fmnist.h5 2>/dev/null
nk-data export coffee.h5 -o coffee_out.png 2>/dev/null

if "$PY" - "$SKIMAGE_DATA" "$FMNIST" <<'PYEOF'
import gzip, sys
import h5py, numpy as np
from skimage import io
data, fmnist = sys.argv[1], sys.argv[2]
fails = 0
def check(name, ok):
    global fails
    print(("ok   " if ok else "FAIL ") + name)
    fails += 0 if ok else 1

with h5py.File("gray.h5", "r") as f:
    imgs = f["/images"][...]
    check("gray dtype float32", imgs.dtype == np.float32)
    check("gray dims attribute", f["/images"].attrs["dims"] == "N,H,W,C")
    check("provenance attributes", all(k in f.attrs for k in ("nk_schema", "nk_tool", "nk_version", "nk_command", "nk_created")))
    for k, name in enumerate(("camera.png", "moon.png")):
        ref = io.imread(f"{data}/{name}").astype(np.float32) / 255.0
        check(f"{name} pixels equal skimage's / 255", np.array_equal(imgs[k, :, :, 0], ref))
    check("names dataset", [n.decode() if isinstance(n, bytes) else n for n in f["/names"][...]][0].endswith("camera.png"))

with h5py.File("coffee.h5", "r") as f:
    ref = io.imread(f"{data}/coffee.png").astype(np.float32) / 255.0
    check("coffee RGB pixels equal skimage's / 255", np.array_equal(f["/images"][0], ref))
check("export PNG equals the source image", np.array_equal(io.imread("coffee_out.png"), io.imread(f"{data}/coffee.png")))

with h5py.File("rgb.h5", "r") as f:
    check("resized RGB stack shape", f["/images"].shape == (2, 400, 400, 3))
    v = f["/images"][...]
    check("resized values in [0,1]", v.min() >= 0 and v.max() <= 1)
    ref = io.imread(f"{data}/astronaut.png").astype(np.float64) / 255.0
    from skimage.transform import resize
    ref_small = resize(ref, (400, 400), anti_aliasing=True)
    check("resize close to skimage's (mean abs < 0.02)", np.abs(v[0] - ref_small).mean() < 0.02)

def idx(path):
    raw = gzip.open(path).read()
    rank = raw[3]
    dims = [int.from_bytes(raw[4 + 4 * i: 8 + 4 * i], "big") for i in range(rank)]
    return np.frombuffer(raw[4 + 4 * rank:], dtype=np.uint8).reshape(dims)
ref_images = idx(f"{fmnist}/t10k-images-idx3-ubyte.gz")[7:307].astype(np.float32) / 255.0
ref_labels = idx(f"{fmnist}/t10k-labels-idx1-ubyte.gz")[7:307]
with h5py.File("fmnist.h5", "r") as f:
    check("Fashion-MNIST images equal the IDX bytes / 255", np.array_equal(f["/images"][..., 0], ref_images))
    check("Fashion-MNIST labels equal the IDX labels", np.array_equal(f["/labels"][...], ref_labels))
    check("labels int64", f["/labels"].dtype == np.int64)
print(f"python reference: {fails} failed")
sys.exit(1 if fails else 0)
PYEOF
then pass "independent reference (h5py, scikit-image, numpy)"; else fail "independent reference"; fi
finish
