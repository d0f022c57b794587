# nk-data.pipeline.sh - nk-data through files and through pipes gives the same results.
. "$(dirname "$0")/lib.sh"
CAMERA=$SKIMAGE_DATA/camera.png
ASTRONAUT=$SKIMAGE_DATA/astronaut.png

check "import camera to a file" nk-data import "$CAMERA" -o camera.h5
check "h5ls reads the output" h5ls -r camera.h5
check "h5dump reads the output" h5dump -H camera.h5
grep -q 'DATASPACE  SIMPLE { ( 1, 512, 512, 1 )' "$WORK/.out" && pass "h5dump shows [1,512,512,1]" || fail "h5dump shows [1,512,512,1]"

# info through a pipe equals info of the file (but for the provenance lines that name the output).
nk-data info camera.h5 --format tsv | grep -v -e nk_created -e nk_command > info_file.tsv
nk-data import "$CAMERA" -o - | nk-data info - --format tsv | grep -v -e nk_created -e nk_command > info_pipe.tsv
same "info via pipe == info via file" info_file.tsv info_pipe.tsv
grep -q $'^dataset\t/images\t\[1,512,512,1\]\tfloat32\tN,H,W,C' info_pipe.tsv && pass "info lists /images" || fail "info lists /images"
nk-data info camera.h5 --format json > info.json
$PY -c 'import json,sys; d=json.load(open("info.json")); assert d["attributes"]["nk_schema"]=="nk-data.images/1"; assert d["datasets"][0]["shape"]==[1,512,512,1]' \
  && pass "info --format json parses" || fail "info --format json parses"

# export through a pipe equals export of the file.
check "export from a file" nk-data export camera.h5 -o from_file.png
nk-data import "$CAMERA" -o - | nk-data export - -o from_pipe.png
same "export via pipe == export via file" from_file.png from_pipe.png
check "re-import the exported PNG" nk-data import from_pipe.png -o again.h5
check "PNG -> HDF5 -> PNG -> HDF5 keeps every pixel" h5diff camera.h5 again.h5 /images /images

# Data goes to stdout, everything else to stderr.
sig=$(nk-data import "$CAMERA" -o - 2>/dev/null | head -c 4 | od -An -c | tr -d ' ')
[ "$sig" = "211HDF" ] && pass "stdout carries the HDF5 image only" || fail "stdout starts with '$sig'"

# A 51 MB stack (17 RGB 512x512 float32 images) through pipes.
stack=""
for i in $(seq 17); do stack="$stack $ASTRONAUT"; done
check "import a 51 MB stack to a file" nk-data import $stack -o stack.h5
size=$(stat -c %s stack.h5)
[ "$size" -gt 50000000 ] && pass "stack file is $size bytes" || fail "stack file is only $size bytes"
nk-data import $stack -o - | nk-data info - --format tsv | grep '^dataset' > stack_pipe.tsv
nk-data info stack.h5 --format tsv | grep '^dataset' > stack_file.tsv
same "51 MB stack: info via pipe == via file" stack_pipe.tsv stack_file.tsv
nk-data import $stack -o - | nk-data export - --index 16 -o last_pipe.png
nk-data export stack.h5 --index 16 -o last_file.png
same "51 MB stack: export via pipe == via file" last_pipe.png last_file.png

# Identical runs give identical files but for nk_created (object times are off).
nk-data import "$CAMERA" -o run1.h5 2>/dev/null
sleep 1
nk-data import "$CAMERA" -o run2.h5 2>/dev/null
differing=$(cmp -l run1.h5 run2.h5 | wc -l)
[ "$differing" -le 20 ] && pass "repeat run differs in $differing bytes (nk_created only)" || fail "repeat run differs in $differing bytes"

# Resize and mixed gray/RGB input.
check "import gray + RGB with --resize" nk-data import "$CAMERA" "$ASTRONAUT" --resize 64x48 -o mixed.h5
nk-data info mixed.h5 --format tsv | grep -q $'/images\t\[2,48,64,3\]' && pass "mixed import is [2,48,64,3]" || fail "mixed import shape"
check "--channels 1 forces gray" nk-data import "$ASTRONAUT" --channels 1 -o gray.h5
nk-data info gray.h5 --format tsv | grep -q $'/images\t\[1,512,512,1\]' && pass "gray import is [1,512,512,1]" || fail "gray import shape"

# Fashion-MNIST from Debian's dataset-fashion-mnist.
check "import-idx Fashion-MNIST (gzip)" nk-data import-idx "$FMNIST/t10k-images-idx3-ubyte.gz" "$FMNIST/t10k-labels-idx1-ubyte.gz" --offset 100 --limit 500 -o fmnist.h5
nk-data info fmnist.h5 --format tsv | grep -q $'/images\t\[500,28,28,1\]' && pass "Fashion-MNIST images [500,28,28,1]" || fail "Fashion-MNIST images shape"
nk-data info fmnist.h5 --format tsv | grep -q $'/labels\t\[500\]\tint64' && pass "Fashion-MNIST labels [500] int64" || fail "Fashion-MNIST labels"
check "export a Fashion-MNIST item" nk-data export fmnist.h5 --index 499 -o item.png
file item.png | grep -q '28 x 28' && pass "item is a 28x28 PNG" || fail "item is a 28x28 PNG"

# CSV in and out.
printf 'a,b,c\n1,2,3\n4.5,-5,6e-3\n' > table.csv
check "import-csv" nk-data import-csv table.csv -o table.h5
check "export csv" nk-data export table.h5 --dataset /vectors -o table_out.csv
printf '1,2,3\n4.5,-5,0.006\n' > expected.csv
same "CSV round trip" expected.csv table_out.csv
nk-data info table.h5 --format json | grep -q '"/vectors", "shape": \[2,3\]' && pass "CSV import is [2,3]" || fail "CSV import shape"

# Outputs that are not regular files are written into, never replaced.
check "-o /dev/null: written into, still a character device" sh -c 'nk-data -q import "$0" -o /dev/null && test -c /dev/null' "$CAMERA"
check "-o a named pipe: the HDF5 file comes out of the pipe" sh -c 'mkfifo out.fifo && { cat out.fifo > from_fifo.h5 & } && nk-data -q import "$0" -o out.fifo && wait && test -p out.fifo && h5ls from_fifo.h5 | grep -q images' "$CAMERA"
no_temp_files "no temp files after the pipeline" "$WORK"
finish
