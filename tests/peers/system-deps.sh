#!/usr/bin/env bash
# Installs the system packages the test suite needs, only those missing: libportaudio2 (sounddevice), pulseaudio +
# pulseaudio-utils + libasound2-plugins (PortAudio reaches PulseAudio through ALSA's pulse plugin: a null sink for
# the real audio-device tests), redis-server (the Redis store's tests run a real one). It installs with apt-get as root, or through passwordless sudo.
# Under CI=true a package still missing afterwards is an error that names it (exit 1): CI must run every test.
# Elsewhere it is a warning, and the tests that need the package skip with the reason.
set -euo pipefail
export PATH="$PATH:/sbin:/usr/sbin"  # ldconfig lives there, and a non-root PATH often lacks it

missing() {
  local need=()
  # grep reads to the end (no -q): under pipefail an early exit would SIGPIPE ldconfig and read as "missing"
  ldconfig -p 2>/dev/null | grep libportaudio.so.2 >/dev/null || need+=(libportaudio2)
  command -v pulseaudio >/dev/null 2>&1 || need+=(pulseaudio)
  command -v pactl >/dev/null 2>&1 || need+=(pulseaudio-utils)
  dpkg -s libasound2-plugins >/dev/null 2>&1 || need+=(libasound2-plugins)
  command -v redis-server >/dev/null 2>&1 || need+=(redis-server)
  echo "${need[*]}"
}

in_ci() {
  case "$(echo "${CI:-}" | tr '[:upper:]' '[:lower:]')" in true | 1 | yes) return 0 ;; *) return 1 ;; esac
}

need="$(missing)"
[ -z "$need" ] && exit 0

why=""
if ! command -v apt-get >/dev/null 2>&1; then
  why="there is no apt-get on this machine"
else
  if [ "$(id -u)" = "0" ]; then
    as_root=()
  elif command -v sudo >/dev/null 2>&1 && sudo -n true >/dev/null 2>&1; then
    as_root=(sudo -n)
  else
    why="not root and no passwordless sudo, so nothing was installed"
  fi
  if [ -z "$why" ]; then
    echo "installing system packages: $need (one time)…"
    log="$(mktemp)"
    # shellcheck disable=SC2086  # $need is a list of package names
    if ! { "${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -qq \
        && "${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $need; } \
        >"$log" 2>&1; then
      why="apt-get failed: $(tail -5 "$log" | tr '\n' ' ')"
    fi
    rm -f "$log"
  fi
fi

still="$(missing)"
[ -z "$still" ] && exit 0
[ -n "$why" ] || why="apt-get reported success but they are still not there"
if in_ci; then
  echo "error: missing system packages: $still ($why)." >&2
  echo "error: CI must run every test: install them in the CI image or run make test as root." >&2
  exit 1
fi
echo "warning: missing system packages: $still ($why); the audio-device and Redis tests will skip." >&2
echo "warning: install them with: sudo apt-get install $still" >&2
