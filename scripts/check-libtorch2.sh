#!/usr/bin/env bash
# check-libtorch2.sh [UNIT...]: does grassaudit still compile against LibTorch 2.x?
#
# This machine has Debian 12's LibTorch 1.13; the GPU machine builds against a 2.x wheel. Run this
# before every GPU-related change (it is not part of CI: it needs the Debian mirror).
#
# 1. Fetches Debian trixie's libtorch-dev (LibTorch 2.6) with `apt-get download` into a scratch
#    folder, using its own sources.list, state and cache dirs (the system's apt state is never
#    read or written, nothing is installed), and unpacks it there with dpkg -x.
# 2. Configures the project (configure only, no build) in the scratch folder to get an up-to-date
#    compile_commands.json with this machine's flags.
# 3. Compiles every translation unit with -fsyntax-only, the LibTorch include paths and compile
#    definitions swapped for trixie's, `xargs -P$JOBS`. fmt, nlohmann-json, Boost, GTest and the
#    libc/libstdc++ headers stay the system's own (the GPU machine uses bookworm's too).
#    A unit also fails if it silently picked up a LibTorch 1.13 header from /usr/include (a header
#    that 2.6 no longer has). Units whose project sources mention GRASSAUDIT_CUDA are compiled a
#    second time with -DGRASSAUDIT_CUDA. (trixie's package is a CPU build: it ships ATen/cuda and
#    c10/cuda headers but not c10/cuda/impl/cuda_cmake_macros.h nor the CUDA toolkit, so a unit that
#    includes CUDA headers under that macro cannot pass here; today no source uses the macro.)
# Only libtorch-dev is fetched: its own dependencies (libtorch2.6, libprotobuf-dev, python3-dev)
# hold no header that the LibTorch headers grassaudit includes pull in (checked from the
# dependency files); LT2_PKGS adds packages should that change.
#
# Prints one line per failing unit and its first errors:
#   FAIL                             compiles with the system LibTorch 1.13 but not with 2.x
#   FAIL(also-with-system-LibTorch)  broken with 1.13 too: a file mid-edit, re-run it later
#   FAIL(-DGRASSAUDIT_CUDA)          only the CUDA variant fails
# Exit status: 0 every unit compiles, 1 some unit fails, 2 the check itself could not run.
#
# Arguments: optional source paths (or substrings of them) to check only those units.
# Environment (all optional):
#   LT2_DIR     scratch folder (default /tmp/grassaudit-libtorch2); downloads are cached there
#   LT2_SUITE   Debian suite to take LibTorch from (default trixie)
#   LT2_MIRROR  Debian mirror (default: the one this machine's apt sources use)
#   LT2_PKGS    packages to fetch and unpack (default: libtorch-dev)
#   LT2_SCOPE   all | src: tests/ units too, or src/ only (default all)
#   LT2_REFRESH=1  re-run apt-get update and re-download even when cached
#   COMPILE_DB  use this compile_commands.json instead of configuring one
#   JOBS        parallel compiles (default 2);  VERBOSE=1  one line per unit as it finishes
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
LT2_DIR=${LT2_DIR:-/tmp/grassaudit-libtorch2}
LT2_SUITE=${LT2_SUITE:-trixie}
LT2_PKGS=${LT2_PKGS:-libtorch-dev}
LT2_SCOPE=${LT2_SCOPE:-all}
JOBS=${JOBS:-2}
log() { echo "check-libtorch2: $*" >&2; }
die() { log "error: $*"; exit 2; }

case "$LT2_SCOPE" in all|src) ;; *) die "LT2_SCOPE must be all or src, got '$LT2_SCOPE'" ;; esac
[[ "$JOBS" =~ ^[1-9][0-9]*$ ]] || die "JOBS must be a positive integer, got '$JOBS'"
for tool in apt-get dpkg python3 cmake c++; do
  command -v "$tool" >/dev/null || die "$tool not found"
done

. "$(dirname "$0")/lib/debian-mirror.sh"   # system_mirror
LT2_MIRROR=${LT2_MIRROR:-$(system_mirror)}
LT2_MIRROR=${LT2_MIRROR:-http://deb.debian.org/debian}

mkdir -p "$LT2_DIR"
LT2_DIR=$(cd "$LT2_DIR" && pwd)
APT_DIR=$LT2_DIR/apt
DEBS=$LT2_DIR/debs
TREE=$LT2_DIR/root
mkdir -p "$APT_DIR"/state/lists/partial "$APT_DIR"/cache/archives/partial \
         "$APT_DIR"/etc/sources.list.d "$APT_DIR"/etc/preferences.d "$DEBS"
touch "$APT_DIR/state/status"   # an empty dpkg status: apt sees nothing installed
KEYRING=/usr/share/keyrings/debian-archive-keyring.gpg
[ -r "$KEYRING" ] || die "$KEYRING missing (package debian-archive-keyring)"
SOURCES="deb [signed-by=$KEYRING] $LT2_MIRROR $LT2_SUITE main"

# Every path apt would otherwise take from the system points into the scratch folder.
APT_OPTS=(
  -o "Dir::State=$APT_DIR/state" -o "Dir::State::status=$APT_DIR/state/status"
  -o "Dir::Cache=$APT_DIR/cache"
  -o "Dir::Etc::SourceList=$APT_DIR/etc/sources.list"
  -o "Dir::Etc::SourceParts=$APT_DIR/etc/sources.list.d"
  -o "Dir::Etc::Preferences=$APT_DIR/etc/preferences"
  -o "Dir::Etc::PreferencesParts=$APT_DIR/etc/preferences.d"
  -o "Acquire::Languages=none" -o "Debug::NoLocking=1"
)
# As root apt drops to the _apt user for downloads, which cannot write a root-owned scratch dir.
[ "$(id -u)" -ne 0 ] || APT_OPTS+=(-o "APT::Sandbox::User=root")

# 1. Download (cached: apt-get update only when the sources line changed or LT2_REFRESH=1).
t0=$SECONDS
if [ "${LT2_REFRESH:-0}" = 1 ] || [ "$(cat "$APT_DIR/etc/sources.list" 2>/dev/null)" != "$SOURCES" ] \
   || ! ls "$APT_DIR"/state/lists/*_Packages* >/dev/null 2>&1; then
  echo "$SOURCES" > "$APT_DIR/etc/sources.list"
  log "apt-get update ($LT2_MIRROR $LT2_SUITE) into $APT_DIR"
  apt-get "${APT_OPTS[@]}" -qq update >"$LT2_DIR/apt-update.log" 2>&1 \
    || { cat "$LT2_DIR/apt-update.log" >&2; die "apt-get update failed"; }
  rm -f "$DEBS"/*.deb
fi
wanted=()
for pkg in $LT2_PKGS; do
  ver=$(apt-cache "${APT_OPTS[@]}" policy "$pkg" | sed -nE 's/^[[:space:]]*Candidate:[[:space:]]*//p')
  [ -n "$ver" ] && [ "$ver" != "(none)" ] || die "package $pkg not found in $LT2_SUITE"
  # .deb file names encode ':' in versions as %3a.
  deb="${pkg}_${ver//:/%3a}_$(dpkg --print-architecture).deb"
  [ -f "$DEBS/$deb" ] || ls "$DEBS/${pkg}_${ver//:/%3a}_"*.deb >/dev/null 2>&1 || {
    log "apt-get download $pkg=$ver"
    (cd "$DEBS" && apt-get "${APT_OPTS[@]}" -qq download "$pkg=$ver") || die "download of $pkg failed"
  }
  wanted+=("$(ls "$DEBS/${pkg}_${ver//:/%3a}_"*.deb | head -n1)")
done

# Unpack (again only when the set of .deb files changed).
stamp=$(printf '%s\n' "${wanted[@]}" | xargs -n1 basename)
if [ "$(cat "$TREE/.unpacked" 2>/dev/null)" != "$stamp" ]; then
  rm -rf "$TREE"
  mkdir -p "$TREE"
  for deb in "${wanted[@]}"; do dpkg -x "$deb" "$TREE"; done
  echo "$stamp" > "$TREE/.unpacked"
fi
INC=$TREE/usr/include
VERSION_H=$INC/torch/csrc/api/include/torch/version.h
[ -f "$VERSION_H" ] || die "no torch/version.h in the unpacked packages ($LT2_PKGS)"
TORCH_VERSION=$(sed -nE 's/^[[:space:]]*"([0-9][^"]*)".*/\1/p; s/^#define TORCH_VERSION "(.*)"/\1/p' "$VERSION_H" | head -n1)
# The compile definitions LibTorch's CMake package would add (torch_cpu's interface).
TARGETS=$(find "$TREE" -name Caffe2Targets.cmake | head -n1)
TORCH_DEFS=$( [ -n "$TARGETS" ] && sed -nE 's/^[[:space:]]*INTERFACE_COMPILE_DEFINITIONS "([^$"\\][^"]*)".*/\1/p' "$TARGETS" | head -n1 | tr ';' ' ')
log "LibTorch $TORCH_VERSION headers in $INC (defines: ${TORCH_DEFS:-none}); fetched in $((SECONDS - t0)) s"

# 2. A compile database that knows every current source file.
if [ -n "${COMPILE_DB:-}" ]; then
  [ -f "$COMPILE_DB" ] || die "COMPILE_DB $COMPILE_DB does not exist"
  DB=$COMPILE_DB
else
  cmake -S "$ROOT" -B "$LT2_DIR/cmake" -G Ninja -DCMAKE_BUILD_TYPE=Release >"$LT2_DIR/cmake.log" 2>&1 \
    || { tail -n 20 "$LT2_DIR/cmake.log" >&2; die "cmake configure failed"; }
  DB=$LT2_DIR/cmake/compile_commands.json
fi

# 3. One argv file per unit (NUL-separated), with the LibTorch 1.13 flags swapped for 2.x ones.
UNITS=$LT2_DIR/units
rm -rf "$UNITS"
mkdir -p "$UNITS"
python3 - "$DB" "$ROOT" "$INC" "$UNITS" "$LT2_SCOPE" "$TORCH_DEFS" "$@" <<'PY'
import json, os, shlex, sys
db, root, inc, units, scope, defs, *only = sys.argv[1:]
SYSTEM_TORCH_API = "/usr/include/torch/csrc/api/include"
# Debian 1.13's interface definitions (glog/gflags, distributed); replaced by the 2.x package's.
SYSTEM_TORCH_DEFS = {"-DGFLAGS_IS_A_DLL=0", "-DGLOG_CUSTOM_PREFIX_SUPPORT", "-DUSE_C10D_GLOO",
                     "-DUSE_DISTRIBUTED", "-DUSE_RPC", "-DUSE_TENSORPIPE", "-DUSE_C10D_MPI"}
dirs = ["src/"] if scope == "src" else ["src/", "tests/"]
entries = json.load(open(db))
seen = set()
n = 0
for e in entries:
    src = os.path.realpath(os.path.join(e["directory"], e["file"]))
    rel = os.path.relpath(src, root)
    if not any(rel.startswith(d) for d in dirs) or rel in seen:
        continue
    if only and not any(o in rel for o in only):
        continue
    seen.add(rel)
    argv = e["arguments"] if "arguments" in e else shlex.split(e["command"])
    out, uses_torch, i = [argv[0]], False, 1
    while i < len(argv):
        a = argv[i]
        if a == "-o" or a in ("-MF", "-MT", "-MQ"):
            i += 2; continue
        if a in ("-c", "-MD", "-MMD") or a == e["file"] or os.path.realpath(os.path.join(e["directory"], a)) == src:
            i += 1; continue
        if a in ("-isystem", "-I") and i + 1 < len(argv) and argv[i + 1].rstrip("/") == SYSTEM_TORCH_API:
            out += ["-isystem", inc + "/torch/csrc/api/include", "-isystem", inc]
            uses_torch = True; i += 2; continue
        if a.rstrip("/") in ("-isystem" + SYSTEM_TORCH_API, "-I" + SYSTEM_TORCH_API):
            out += ["-isystem", inc + "/torch/csrc/api/include", "-isystem", inc]
            uses_torch = True; i += 1; continue
        if a in SYSTEM_TORCH_DEFS:
            i += 1; continue
        if a.startswith("-std=") and a[-2:] in ("98", "03", "11", "14", "0x", "1y"):
            a = "-std=gnu++17"  # LibTorch 2.x needs C++17
        out.append(a); i += 1
    if uses_torch:
        out += ["-D" + d for d in defs.split()]
    n += 1
    with open(os.path.join(units, "%04d" % n), "wb") as f:
        f.write(b"\0".join(x.encode() for x in [rel, e["directory"]] + out + ["-fsyntax-only", src]) + b"\0")
    # The unit's own flags against the system LibTorch, to tell a 2.x break from a file mid-edit.
    with open(os.path.join(units, "%04d.system" % n), "wb") as f:
        kept = [a for a in argv if a != "-c"]
        if "-o" in kept:
            j = kept.index("-o"); del kept[j:j + 2]
        f.write(b"\0".join(x.encode() for x in kept + ["-fsyntax-only"]) + b"\0")
    with open(os.path.join(units, "list"), "a") as f:
        f.write(os.path.join(units, "%04d" % n) + "\n")
# Sources CMake does not compile are not translation units of grassaudit; say so, do not fail.
for d in dirs:
    for base, _, files in os.walk(os.path.join(root, d)):
        for f in files:
            rel = os.path.relpath(os.path.join(base, f), root)
            if f.endswith(".cpp") and rel not in seen and not only:
                print("check-libtorch2: note: %s is not in the compile database (not built by CMake), skipped" % rel,
                      file=sys.stderr)
if n == 0:
    print("check-libtorch2: error: no translation units matched", file=sys.stderr)
    sys.exit(2)
PY

# compile_one UNIT_FILE: runs one unit (and its GRASSAUDIT_CUDA variant when it has one), writes
# UNIT_FILE.log and UNIT_FILE.status (ok or one of the FAIL kinds above), prints it when VERBOSE=1.
compile_one() {
  local unit=$1 rel dir status=ok
  local -a a
  mapfile -d '' -t a < "$unit"
  rel=${a[0]}; dir=${a[1]}; a=("${a[@]:2}")
  : > "$unit.log"
  run_variant() {  # extra flags...
    local dep=$unit.d$# leaked
    if ! (cd "$dir" && nice "${a[@]:0:${#a[@]}-1}" "$@" -MD -MF "$dep" "${a[-1]}") >>"$unit.log" 2>&1; then
      return 1
    fi
    # A header 2.6 lacks would silently resolve to the system's 1.13 copy: fail on any.
    leaked=$(tr ' ' '\n' < "$dep" | grep -E '^/usr/include/(ATen|c10|caffe2|torch|kineto)/' | head -n 3 || true)
    if [ -n "$leaked" ]; then
      echo "error: used LibTorch 1.13 headers from /usr/include (missing in 2.x):" $leaked >>"$unit.log"
      return 1
    fi
  }
  if ! run_variant; then
    status=FAIL
    # Same unit against the system's LibTorch: if that fails too, the file is broken (or being
    # edited right now), not a LibTorch 2.x incompatibility.
    local -a sys_argv
    mapfile -d '' -t sys_argv < "$unit.system"
    (cd "$dir" && nice "${sys_argv[@]}") >/dev/null 2>&1 || status="FAIL(also-with-system-LibTorch)"
  elif tr ' ' '\n' < "$unit.d0" | grep -E "^$CHECK_ROOT/" | xargs -r grep -l GRASSAUDIT_CUDA 2>/dev/null | grep -q .; then
    echo "[GRASSAUDIT_CUDA variant]" >>"$unit.log"
    run_variant -DGRASSAUDIT_CUDA || status="FAIL(-DGRASSAUDIT_CUDA)"
  fi
  echo "$status $rel" > "$unit.status"
  [ "${VERBOSE:-0}" != 1 ] || echo "$status $rel"
}
export -f compile_one
export CHECK_ROOT=$ROOT

t1=$SECONDS
total=$(wc -l < "$UNITS/list")
log "compiling $total units against LibTorch $TORCH_VERSION with -fsyntax-only, $JOBS at a time"
xargs -P "$JOBS" -n 1 bash -c 'compile_one "$0"' < "$UNITS/list"

failed=0
for st in "$UNITS"/*.status; do
  read -r status rel < "$st"
  [ "$status" = ok ] && continue
  failed=$((failed + 1))
  echo "$status $rel"
  grep -E 'error|required from here' "${st%.status}.log" | grep -v '^In file included' | head -n 5 | sed 's/^/    /'
done
missing=$((total - $(ls "$UNITS"/*.status 2>/dev/null | wc -l)))
[ "$missing" -eq 0 ] || { echo "$missing units did not report (killed?)"; failed=$((failed + missing)); }
log "$((total - failed))/$total units compile against LibTorch $TORCH_VERSION ($((SECONDS - t1)) s; logs in $UNITS)"
[ "$failed" -eq 0 ]
