#!/usr/bin/env bash
# debian13-root.sh: makes (or reuses) a Debian 13 (trixie) root in which grassaudit is built and
# tested against Debian's LibTorch 2.6 (scripts/test-debian13.sh runs the suite in it).
#
# The root lives in a cache folder outside the checkout, CACHE/debian13-root, where CACHE is
# $GRASSAUDIT_CACHE, else $XDG_CACHE_HOME/grassaudit, else ~/.cache/grassaudit. It is made by
# debootstrap (minbase) and then gets exactly what scripts/setup.sh installs on Debian 13 (setup.sh
# itself is run inside it, so the README's commands are what is tested), plus git (the build
# records the checkout's commit). It is stamped with the SHA-256 of that package list, the suite,
# the mirror and this script's ROOT_FORMAT: a matching stamp reuses the root (seconds), any change
# rebuilds it from scratch beside the old one, which is replaced only once the new one is complete
# (an interrupted build leaves the old root, or none, never a half-made one).
#
# Needs root (debootstrap, chroot, mount namespaces) and the Debian mirror.
# Environment (all optional):
#   GRASSAUDIT_CACHE   cache folder (see above)
#   DEBIAN13_MIRROR    mirror (default: the one this machine's apt uses, else deb.debian.org)
#   DEBIAN13_SUITE     default trixie
#   REBUILD=1          rebuild even when the stamp matches
# Prints the root's path on stdout (last line); progress on stderr. Exit 0 ok, 2 cannot run.
set -euo pipefail
ROOT_FORMAT=1   # bump when the way the root is made changes (not the package list: that is read)
HERE=$(cd "$(dirname "$0")" && pwd)
log() { echo "debian13-root: $*" >&2; }
die() { log "error: $*"; exit 2; }

CACHE=${GRASSAUDIT_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/grassaudit}
SUITE=${DEBIAN13_SUITE:-trixie}
[ "$(id -u)" -eq 0 ] || die "needs root (debootstrap, chroot and mount namespaces); run it with sudo"
if ! command -v debootstrap >/dev/null; then   # the one host package this needs beyond setup.sh's
  log "installing debootstrap"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends debootstrap >/dev/null 2>&1 \
    || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends debootstrap >/dev/null; } \
    || die "could not install debootstrap (apt-get install debootstrap)"
fi
for tool in debootstrap chroot unshare mount sha256sum flock; do
  command -v "$tool" >/dev/null || die "$tool not found (apt-get install debootstrap util-linux)"
done

. "$(dirname "$0")/lib/debian-mirror.sh"   # system_mirror
MIRROR=${DEBIAN13_MIRROR:-$(system_mirror)}
MIRROR=${MIRROR:-http://deb.debian.org/debian}

PKGS=$(RELEASE=13 bash "$HERE/setup.sh" --print-packages)
STAMP_TEXT=$(printf 'format %s\nsuite %s\nmirror %s\nextra git\n%s\n' "$ROOT_FORMAT" "$SUITE" "$MIRROR" "$PKGS")
STAMP=$(printf '%s' "$STAMP_TEXT" | sha256sum | cut -c1-64)

mkdir -p "$CACHE"
CACHE=$(cd "$CACHE" && pwd)
ROOT=$CACHE/debian13-root
exec 9>"$CACHE/debian13-root.lock"
flock 9   # one maker at a time; a second caller waits, then finds the stamp

if [ "${REBUILD:-0}" != 1 ] && [ "$(cat "$ROOT/.grassaudit-stamp" 2>/dev/null)" = "$STAMP" ]; then
  log "reusing $ROOT (stamp ${STAMP:0:12}, packages unchanged)"
  echo "$ROOT"
  exit 0
fi

t0=$SECONDS
NEW=$ROOT.new
rm -rf "$NEW"
log "debootstrap $SUITE from $MIRROR into $NEW"
debootstrap --variant=minbase "$SUITE" "$NEW" "$MIRROR" >"$CACHE/debootstrap.log" 2>&1 \
  || { tail -n 20 "$CACHE/debootstrap.log" >&2; die "debootstrap failed (log: $CACHE/debootstrap.log)"; }
t1=$SECONDS
log "base system in $((t1 - t0)) s; installing setup.sh's Debian 13 packages"
cp /etc/resolv.conf "$NEW/etc/resolv.conf"
mkdir -p "$NEW/opt/grassaudit"
cp "$HERE/setup.sh" "$NEW/opt/grassaudit/setup.sh"
# A private mount namespace: /proc and /dev vanish with the process, whatever ends it.
unshare --mount --propagation private bash -euc '
  NEW=$1
  mount -t proc proc "$NEW/proc"
  mount --rbind /dev "$NEW/dev"
  chroot "$NEW" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 \
    bash -euc "bash /opt/grassaudit/setup.sh && apt-get install -y -qq --no-install-recommends git >/dev/null && apt-get clean"
' _ "$NEW" >"$CACHE/debian13-install.log" 2>&1 \
  || { tail -n 20 "$CACHE/debian13-install.log" >&2; die "installing the packages failed (log: $CACHE/debian13-install.log)"; }
printf '%s\n' "$STAMP_TEXT" > "$NEW/.grassaudit-packages"
echo "$STAMP" > "$NEW/.grassaudit-stamp"
rm -rf "$ROOT"
mv "$NEW" "$ROOT"
log "made $ROOT in $((SECONDS - t0)) s (debootstrap $((t1 - t0)) s, packages $((SECONDS - t1)) s; $(du -sh "$ROOT" | cut -f1))"
echo "$ROOT"
