#!/usr/bin/env bash
# The Debian packages the test suite drives besides Python's: Chromium and its driver (the MLflow
# UI browser test) and PostgreSQL (the PostgreSQL store tests start their own throw-away server).
# Installs what is missing, once; quiet when everything is there. `make test` runs it first.
set -euo pipefail
missing=()
command -v chromium >/dev/null || missing+=(chromium)
command -v chromedriver >/dev/null || missing+=(chromium-driver)
command -v initdb >/dev/null || ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || missing+=(postgresql)
[ ${#missing[@]} -eq 0 ] && exit 0
if [ "$(id -u)" -eq 0 ]; then
  sudo=()
elif command -v sudo >/dev/null && sudo -n true 2>/dev/null; then
  sudo=(sudo -n)
else
  echo "system-packages: the tests need ${missing[*]}; install them first:" >&2
  echo "  sudo apt-get install -y ${missing[*]}" >&2
  exit 1
fi
echo "system-packages: installing ${missing[*]} (apt-get) ..."
log="$(mktemp)"
if ! { "${sudo[@]}" apt-get update -qq && DEBIAN_FRONTEND=noninteractive \
       "${sudo[@]}" apt-get install -y -qq "${missing[@]}"; } >"$log" 2>&1; then
  tail -20 "$log" >&2
  echo "system-packages: apt-get failed (above); install ${missing[*]} by hand and run make test again" >&2
  exit 1
fi
rm -f "$log"
