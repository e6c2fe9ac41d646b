#!/bin/sh
# Installs the Debian packages given as arguments that are not installed yet (apt-get update once first).
# Needs root when something is missing; does nothing when everything is there.
missing=""
for p in "$@"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
[ -z "$missing" ] && exit 0
echo "installing:$missing" >&2
if [ "$(id -u)" != 0 ]; then
  echo "error: missing Debian packages:$missing (run as root, or install them)" >&2
  exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq && apt-get install -y -qq --no-install-recommends $missing >/dev/null
