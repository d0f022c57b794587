# nk-data.bad-input.sh - bad input gets one clear error line, a documented exit
# code, no output file, and never destroys an existing file.
. "$(dirname "$0")/lib.sh"
CAMERA=$SKIMAGE_DATA/camera.png

nk-data import "$CAMERA" -o good.h5 2>/dev/null
size=$(stat -c %s good.h5)
head -c $((size / 2)) good.h5 > truncated.h5
head -c 5000 /dev/urandom > random.h5
echo "hello, I am text" > text.h5
cp "$CAMERA" camera.h5
cp "$CAMERA" camera.jpg
"$PY" - <<'PYEOF'
import h5py, numpy as np
with h5py.File("nan.h5", "w") as f:
    f.attrs["nk_schema"] = "nk-data.images/1"
    x = np.zeros((2, 8, 8, 1), np.float32); x[1, 3, 4, 0] = np.nan
    f["/images"] = x
    f["/flat"] = np.zeros((5,), np.float32)
    f["/words"] = np.array([b"a", b"b"])
    f.create_dataset("/huge", shape=(1 << 40,), dtype=np.float64, chunks=(1 << 16,))
with h5py.File("foreign.h5", "w") as f:
    f["/images"] = np.zeros((1, 4, 4, 1), np.float32)
    f.attrs["nk_schema"] = "someone-else/3"
PYEOF

# Reading HDF5: truncated, random bytes, text, a PNG, empty stdin, a missing file.
expect_fail "truncated HDF5" 3 "input 'truncated.h5'" nk-data export truncated.h5 -o out.png
expect_fail "truncated HDF5 on stdin" 3 "input '-' \(standard input\)" sh -c 'cat truncated.h5 | nk-data export - -o out.png'
expect_fail "random bytes" 3 "input 'random.h5': not an HDF5 file" nk-data info random.h5
expect_fail "random bytes on stdin" 3 "not an HDF5 file" sh -c 'cat random.h5 | nk-data info -'
expect_fail "a text file" 3 "input 'text.h5': not an HDF5 file" nk-data info text.h5
expect_fail "a PNG named .h5" 3 "input 'camera.h5': not an HDF5 file" nk-data info camera.h5
expect_fail "empty stdin" 3 "standard input is empty" sh -c 'nk-data info - < /dev/null'
expect_fail "missing file" 4 "'absent.h5': cannot open: No such file" nk-data info absent.h5
check "a PNG named .jpg still imports (content decides)" nk-data import camera.jpg -o fine.h5

# Datasets: missing, wrong dtype, wrong rank, NaN, absurd size.
expect_fail "missing dataset" 3 "input 'good.h5': dataset /nope: missing" nk-data export good.h5 --dataset /nope -o out.png
expect_fail "wrong dtype" 3 "dataset /words: expected numeric data, found string" nk-data export nan.h5 --dataset /words -o out.csv
expect_fail "wrong rank" 3 "dataset /flat: expected an image stack" nk-data export nan.h5 --dataset /flat -o out.png
expect_fail "NaN in float data" 3 "dataset /images: NaN at index \[1,3,4,0\]" nk-data export nan.h5 --index 1 -o out.png
expect_fail "absurd size refused before allocating" 3 "dataset /huge: needs 8192.0 GiB, more than the" nk-data export nan.h5 --dataset /huge -o out.csv
expect_fail "index out of range" 2 "--index 5 is outside the 1 item" nk-data export good.h5 --index 5 -o out.png
expect_fail "schema mismatch in merge" 3 "nk_schema is 'someone-else/3'" nk-data merge good.h5 foreign.h5 -o merged.h5

# Image, IDX and CSV readers.
expect_fail "text given as an image" 3 "input 'text.h5': not a supported image" nk-data import text.h5 -o out.h5
expect_fail "empty image file" 3 "file is empty" nk-data import /dev/null -o out.h5
expect_fail "images of different sizes" 3 "give --resize" nk-data import "$CAMERA" "$SKIMAGE_DATA/coins.png" -o out.h5
expect_fail "bad --resize" 2 "--resize: expected WxH" nk-data import "$CAMERA" --resize 0x5 -o out.h5
head -c 3000 "$FMNIST/t10k-images-idx3-ubyte.gz" | gzip -dc 2>/dev/null > short.idx
expect_fail "truncated IDX" 3 "IDX data is truncated" nk-data import-idx short.idx -o out.h5
expect_fail "IDX label count mismatch" 3 "10000 labels for 60000 images" nk-data import-idx "$FMNIST/train-images-idx3-ubyte.gz" "$FMNIST/t10k-labels-idx1-ubyte.gz" --limit 5 -o out.h5
expect_fail "not IDX" 3 "not an IDX file" nk-data import-idx text.h5 -o out.h5
"$PY" -c "
import struct
open('zero.idx', 'wb').write(bytes([0, 0, 8, 3]) + struct.pack('>III', 0, 8, 8))
open('long.idx', 'wb').write(bytes([0, 0, 8, 3]) + struct.pack('>III', 1, 2, 2) + bytes(4) + b'extra')
"
expect_fail "IDX of zero items" 3 "zero.idx.*zero" nk-data import-idx zero.idx -o out.h5
expect_fail "IDX with bytes after its data" 3 "long.idx.*5 bytes after" nk-data import-idx long.idx -o out.h5
"$PY" -c "
b = bytearray(open('$NK_SOURCE/data/images/camera-64.png', 'rb').read())
b[40] ^= 0xff
open('crc.png', 'wb').write(b)
open('cut.png', 'wb').write(bytes(b[:200]))
open('short.pgm', 'wb').write(b'P5 4 4 255\\n' + bytes(8))
open('max0.pgm', 'wb').write(b'P5 2 2 0\\n' + bytes(4))
open('max100.pgm', 'wb').write(b'P5\\n# a comment\\n2 1\\n100\\n' + bytes([100, 50]))
"
expect_fail "PNG with a bad chunk CRC" 3 "crc.png.*bad CRC" nk-data import crc.png -o out.h5
expect_fail "PNG cut short" 3 "cut.png.*(past the end|IEND)" nk-data import cut.png -o out.h5
expect_fail "PGM with its pixels cut short" 3 "short.pgm.*truncated: 16 bytes needed, 8 present" nk-data import short.pgm -o out.h5
expect_fail "PGM of maxval 0" 3 "max0.pgm.*maxval is 0" nk-data import max0.pgm -o out.h5
check "PGM of maxval 100 scales by maxval" sh -c "nk-data -q import max100.pgm -o max100.h5 && $PY -c \"import h5py, numpy as np, sys; sys.exit(0 if np.allclose(h5py.File('max100.h5')['/images'][()].ravel(), [1.0, 0.5]) else 1)\""
head -c 3000 "$FMNIST/t10k-images-idx3-ubyte.gz" > cut.gz
expect_fail "a gzip stream cut short" 3 "cut.gz.*truncated gzip" nk-data import-idx cut.gz -o out.h5
expect_fail "IDX images and labels both on stdin" 2 "both come from standard input" nk-data import-idx - - -o out.h5
check "IDX images on standard input, labels from a file" sh -c "nk-data -q import-idx - \"$FMNIST/t10k-labels-idx1-ubyte.gz\" --limit 5 -o stdin_idx.h5 < \"$FMNIST/t10k-images-idx3-ubyte.gz\""
check "a CSV table on standard input" sh -c "printf 'a,b\\n1,2\\n3,4\\n' | nk-data -q import-csv - -o stdin_csv.h5 && nk-data info stdin_csv.h5 | grep -q '2'"
printf '1,2\n3,nan\n' > nan.csv
expect_fail "import-csv --dataset /" 2 "not a dataset path" nk-data import-csv nan.csv --dataset / -o out.h5
expect_fail "import-csv --dataset /a/../b" 2 "not a dataset path" nk-data import-csv nan.csv --dataset /a/../b -o out.h5
expect_fail "NaN in CSV" 3 "line 2 column 2 is not finite" nk-data import-csv nan.csv -o out.h5
printf '1,2\n3\n' > ragged.csv
expect_fail "ragged CSV" 3 "line 2 has 1 columns, expected 2" nk-data import-csv ragged.csv -o out.h5

# Outputs: a missing folder, --no-clobber, a failed run over an existing file.
expect_fail "output in a missing folder" 4 "folder 'no/such' does not exist" nk-data import "$CAMERA" -o no/such/out.h5
cp good.h5 keep.h5
sum_before=$(md5sum < keep.h5)
expect_fail "--no-clobber on an existing output" 4 "'keep.h5': output exists and --no-clobber is set" nk-data import "$CAMERA" --no-clobber -o keep.h5
expect_fail "failed run over an existing output" 3 "not a supported image" nk-data import text.h5 -o keep.h5
expect_fail "failed export over an existing output" 3 "NaN" nk-data export nan.h5 --index 1 -o keep.h5
[ "$(md5sum < keep.h5)" = "$sum_before" ] && pass "existing output untouched by failed runs" || fail "existing output was changed"
# Standard output on a pseudo-terminal: binary HDF5 must not be sprayed on it.
cat > on_tty.py <<'PYEOF'
import os, pty, subprocess, sys
main, secondary = pty.openpty()
run = subprocess.run(sys.argv[1:], stdout=secondary, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL)
os.close(secondary)
sys.stderr.write(run.stderr.decode())
sys.exit(run.returncode)
PYEOF
expect_fail "HDF5 to a terminal is refused" 2 "refusing to write HDF5 to a terminal" "$PY" on_tty.py nk-data import "$CAMERA" -o -
[ ! -e out.h5 ] && [ ! -e out.png ] && [ ! -e out.csv ] && [ ! -e merged.h5 ] && pass "no output file from any failed run" || fail "a failed run left an output file"
no_temp_files "no temp files left" "$WORK"
finish
