# Sourced by the training launchers: deadline_seconds NAME TIME prints TIME (a `date -d` time,
# e.g. "01:05") as seconds since the epoch, the next such time (a clock time already passed
# today means tomorrow's), or ends the script with one line naming NAME.
deadline_seconds() {
  local t
  t=$(date -d "$2" +%s 2>/dev/null) || { echo "$1: cannot read the deadline '$2'" >&2; exit 2; }
  [ "$t" -gt "$(date +%s)" ] || t=$((t + 86400))
  echo "$t"
}
