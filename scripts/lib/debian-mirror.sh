# Sourced by scripts/debian13-root.sh and scripts/check-libtorch2.sh.
# system_mirror: the Debian mirror this machine's apt already uses (deb822 "URIs:" or one-line
# "deb URL"), skipping the security archive; prints nothing when none is found.
system_mirror() {
  local f
  for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.sources /etc/apt/sources.list.d/*.list; do
    [ -r "$f" ] || continue
    sed -nE -e 's/^URIs:[[:space:]]*([^[:space:]]+).*/\1/p' \
            -e 's/^deb[[:space:]]+(\[[^]]*\][[:space:]]+)?([^[:space:]]+).*/\2/p' "$f"
  done | grep -E '/debian/?$' | grep -v security | head -n1
}
