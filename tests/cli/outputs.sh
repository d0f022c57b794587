#!/usr/bin/env bash
# outputs.sh - a run's outputs publish together or not at all (neurkit(7)
# FILES): a verb with two outputs that fails on the second leaves neither and
# replaces no existing file; a run stopped by SIGTERM or SIGPIPE leaves no
# temporary file; an output into a missing folder or under a plain file is
# exit 4 before any work.
. "$(dirname "$0")/lib.sh"

# Valid inputs: a painting (sbr-render), a spiking model and its data (spike-sft).
IMG="$SKIMAGE_DATA/camera.png"
nk-data -q import "$IMG" --resize 32x32 -o cam.h5
sbr-render -q paint -i cam.h5 --strokes 10 --iterations 5 -o strokes.h5
nk-data -q import-idx "$FMNIST/t10k-images-idx3-ubyte.gz" "$FMNIST/t10k-labels-idx1-ubyte.gz" --limit 100 -o fm.h5
spike-sft -q --seed 1 pretrain -i fm.h5 --hidden 16 --steps 2 --epochs 1 --batch 50 -o base.h5

echo old > old.png
echo old > old.h5
unchanged() { [ "$(cat "$1")" = old ]; }
no_temps() { ! find . -name '.*.tmp.*' | grep -q .; }

expect_fail "render: the PNG's SVG twin into a missing folder" 4 "missing/x.svg" \
  sbr-render render -i strokes.h5 -o old.png --svg missing/x.svg
check "  ... leaves the existing PNG as it was" unchanged old.png
expect_fail "render: a new PNG, its SVG into a missing folder" 4 "missing" \
  sbr-render render -i strokes.h5 -o new.png --svg missing/x.svg
check "  ... leaves no new PNG" test ! -e new.png
expect_fail "stats: the plot into a missing folder" 4 "missing/p.svg" \
  spike-sft -q stats -i base.h5 --data fm.h5 --fractions 0.5 --plot missing/p.svg -o old.h5
check "  ... leaves the existing HDF5 output as it was" unchanged old.h5
mkdir -p plots
check "stats with both outputs writable writes both" sh -c \
  'spike-sft -q stats -i base.h5 --data fm.h5 --fractions 0.5 --plot plots/p.svg -o stats.h5 >/dev/null && test -s plots/p.svg && test -s stats.h5'
echo old > keep.svg
expect_fail "--no-clobber on the second output refuses before anything is published" 4 "keep.svg" \
  sbr-render render -i strokes.h5 -o fresh.png --svg keep.svg --no-clobber
check "  ... leaves neither output" sh -c 'test ! -e fresh.png && test "$(cat keep.svg)" = old'
touch plainfile
expect_fail "an output under a plain file" 4 "plainfile/x.h5.*not a folder" spike-sft -q stats -i base.h5 --data fm.h5 --fractions 0.5 -o plainfile/x.h5
check "no temporary file after the failures" no_temps

# Standard input and the terminal.
expect_fail "standard input named twice is a usage error" 2 "more than one input" \
  sh -c 'spike-sft eval -i - --data - < base.h5'
check "spike-sft eval reads its model from standard input when -i is not given (the documented default)" \
  sh -c 'spike-sft -q eval --data fm.h5 < base.h5 > /dev/null'
on_tty() { $PY -c "import os, pty, sys; sys.exit(os.waitstatus_to_exitcode(pty.spawn(sys.argv[1:])))" "$@"; }
check "a PNG to a terminal is refused (exit 2), as HDF5 is" sh -c \
  'out=$('"$(declare -f on_tty)"'; PY='"$PY"' on_tty sbr-render -q render -i strokes.h5 -o - < /dev/null); rc=$?; [ $rc -eq 2 ] && echo "$out" | grep -q "PNG to a terminal"'

# Signals: a long run stopped by SIGTERM, and a writer whose reader went away.
spike-sft -q --seed 1 pretrain -i fm.h5 --hidden 256 --steps 8 --epochs 1000 --batch 10 -o long.h5 2>/dev/null &
pid=$!
sleep 1.5
kill -TERM "$pid"
wait "$pid"
rc=$?
check "SIGTERM ends the run by the signal (exit 143)" test "$rc" -eq 143
check "  ... with no output and no temporary file" sh -c 'test ! -e long.h5 && ! find . -name ".long.h5.tmp.*" | grep -q .'
check "SIGPIPE: a reader that stops early leaves no temporary output behind" sh -c \
  'sbr-render -q render -i strokes.h5 -o - --svg piped.svg | head -c 10 >/dev/null; ! find . -name ".piped.svg.tmp.*" | grep -q .'

# Checksummed files (#40): HDF5 1.10 format (superblock v3, checksummed
# metadata), datasets chunked with Fletcher-32; h5py and h5dump read them; an
# overwritten data byte or metadata byte is exit 3 naming the file, no crash.
check "h5dump reads a tool's output" sh -c 'h5dump -d /images cam.h5 > /dev/null'
check "  ... the superblock is version 3, /images chunked with Fletcher-32, h5py reads it" "$PY" -c "
import h5py, numpy as np
raw = open('cam.h5', 'rb').read()
assert raw[:8] == b'\\x89HDF\\r\\n\\x1a\\n' and raw[8] == 3, raw[8]
f = h5py.File('cam.h5', 'r')
d = f['/images']
assert d.chunks is not None and d.fletcher32, (d.chunks, d.fletcher32)
assert np.isfinite(d[...]).all()
"
"$PY" -c "
import h5py, shutil
shutil.copy('cam.h5', 'data_flip.h5')
with h5py.File('cam.h5', 'r') as f:
    offset = f['/images'].id.get_chunk_info(0).byte_offset
raw = bytearray(open('cam.h5', 'rb').read())
raw[offset + 100] ^= 0x5a
open('data_flip.h5', 'wb').write(raw)
"
"$PY" -c "
import h5py
with h5py.File('cam.h5', 'r') as f:
    header = h5py.h5o.get_info(f['/images'].id).addr
raw = bytearray(open('cam.h5', 'rb').read())
assert raw[header:header + 4] == b'OHDR', raw[header:header + 4]   # a version 2 object header: checksummed
raw[header + 12] ^= 0x5a
open('meta_flip.h5', 'wb').write(raw)
"
# libhdf5 1.10.8 leaks 424 bytes on the failing checksum's path (its own
# allocation, not neurkit's): under the sanitizers these two runs skip the
# leak check, as the fuzzer's bad-input cases do.
NOLEAK="env ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
expect_fail "a byte of /images' object header overwritten: its checksum tells (exit 3)" 3 "meta_flip.h5.*(checksum|corrupt)" $NOLEAK nk-data export meta_flip.h5 -o flip.png
expect_fail "a data byte overwritten: Fletcher-32 tells (exit 3)" 3 "data_flip.h5.*/images.*(checksum|Fletcher)" $NOLEAK nk-data export data_flip.h5 -o flip.png
check "no output, no temporary file" sh -c 'test ! -e flip.png && ! find . -name ".flip.png.tmp.*" | grep -q .'

finish
