# layout.sh - the include direction of the house: tools -> common/lm ->
# common/nn -> kernels -> common/core (common/snn beside common/nn), never
# back, never tool -> tool.
# Every quoted #include of every source file is resolved to the library that
# holds it; a file may include only its own layer or a layer below it, and a
# tool only its own folder's headers.
. "$(dirname "$0")/lib.sh"

cd "$NK_SOURCE" || exit 1
rank_of_dir() {
  case $1 in
    common/core/*) echo 0 ;; kernels/*) echo 1 ;; common/nn/*|common/snn/*) echo 2 ;; common/lm/*) echo 3 ;; tools/*) echo 4 ;;
    *) echo -1 ;;
  esac
}
# where "nk/..." or "tool/..." is found: the folder of the library that holds it
holder_of() {
  local header=$1 from=$2
  for root in common/core/include kernels/include common/nn/include common/snn/include common/lm/include tools; do
    [ -f "$root/$header" ] && { echo "$root/$header"; return; }
  done
  [ -f "$(dirname "$from")/$header" ] && { echo "$(dirname "$from")/$header"; return; }
  echo ""
}

bad=0
files=$(find common kernels tools -type f \( -name '*.cpp' -o -name '*.hpp' -o -name '*.cu' -o -name '*.cuh' \) | sort)
for file in $files; do
  rank=$(rank_of_dir "$file")
  own_tool=""
  case $file in tools/*) own_tool=$(echo "$file" | cut -d/ -f2) ;; esac
  while IFS= read -r header; do
    holder=$(holder_of "$header" "$file")
    if [ -z "$holder" ]; then
      fail "$file includes \"$header\", which no library holds"; bad=1; continue
    fi
    target=$(rank_of_dir "$holder")
    if [ "$target" -gt "$rank" ]; then
      fail "$file ($(echo "$file" | cut -d/ -f1-2)) includes $holder: an arrow up the house"; bad=1
    fi
    case $holder in
      tools/*)
        t=$(echo "$holder" | cut -d/ -f2)
        if [ "$t" != "$own_tool" ]; then
          fail "$file includes another tool's header $holder"; bad=1
        else
          case $header in "$own_tool"/*) ;; *) fail "$file includes \"$header\": tool headers are included as \"$own_tool/$header\""; bad=1 ;; esac
        fi
        ;;
    esac
  done < <(sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' "$file")
done
[ "$bad" = 0 ] && pass "every include of $(echo "$files" | wc -w) files points down the house (tools -> lm -> nn -> kernels -> core)"
# common/core must not see CUDA or kernels at all, nor the CMake target link back up
grep -rqE 'kernels/include|nk_kernels|nk::kernels' common/core/CMakeLists.txt && fail "common/core/CMakeLists.txt refers to kernels/" || pass "common/core's CMake target does not reach kernels/"
finish
