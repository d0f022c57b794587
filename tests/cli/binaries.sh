# binaries.sh - every binary: --help, --version, usage errors, and no CUDA link.
. "$(dirname "$0")/lib.sh"

for tool in $(ls "$NK_BIN" | grep -v '\.so$' | grep -v '^nk_unit_tests$'); do
  [ -x "$NK_BIN/$tool" ] || continue
  check "$tool --help exits 0" "$tool" --help
  grep -q "Usage:\|USAGE\|Usage" "$WORK/.out" && pass "$tool --help prints usage on stdout" || fail "$tool --help prints usage on stdout"
  check "$tool --version exits 0" "$tool" --version
  head -1 "$WORK/.out" | grep -Eq "^$tool [0-9]+\.[0-9]+\.[0-9]+" && pass "$tool --version first line" || fail "$tool --version first line: $(head -1 "$WORK/.out")"
  for lib in HDF5 Eigen CLI11 FFTW "CUDA module"; do
    grep -q "$lib" "$WORK/.out" && pass "$tool --version names $lib" || fail "$tool --version names $lib"
  done
  "$tool" --no-such-option >"$WORK/.out" 2>"$WORK/.err"
  rc=$?
  [ "$rc" -eq 2 ] && pass "$tool: unknown option exits 2" || fail "$tool: unknown option exits $rc"
  [ -s "$WORK/.out" ] && fail "$tool: usage error wrote to stdout" || pass "$tool: usage error leaves stdout empty"
  if ldd "$NK_BIN/$tool" | grep -Eq 'libcudart|libcublas|libcufft|libcuda\.'; then
    fail "$tool links CUDA libraries directly"
  else
    pass "$tool does not link CUDA libraries"
  fi
  NK_CUDA_MODULE=/nonexistent "$tool" --device cpu --help >/dev/null 2>&1 && pass "$tool starts with --device cpu" || fail "$tool starts with --device cpu"
done
finish
