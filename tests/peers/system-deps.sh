#!/usr/bin/env bash
# Installs the system libraries the project needs, only when running as root and only what is missing:
# libportaudio2 (sounddevice), pulseaudio + pulseaudio-utils + libasound2-plugins (PortAudio reaches PulseAudio
# through ALSA's pulse plugin: a null sink for the real audio-device tests).
set -euo pipefail
need=()
ldconfig -p 2>/dev/null | grep -q libportaudio.so.2 || need+=(libportaudio2)
command -v pulseaudio >/dev/null 2>&1 || need+=(pulseaudio)
command -v pactl >/dev/null 2>&1 || need+=(pulseaudio-utils)
dpkg -s libasound2-plugins >/dev/null 2>&1 || need+=(libasound2-plugins)
[ ${#need[@]} -eq 0 ] && exit 0
if [ "$(id -u)" != "0" ]; then
  echo "note: missing system packages ${need[*]} (not root, so not installing them); audio-device tests will skip" >&2
  exit 0
fi
echo "installing system packages: ${need[*]} (one time)…"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq >/dev/null 2>&1 || true
apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null 2>&1 \
  || echo "warning: apt-get could not install ${need[*]}; audio-device tests will skip" >&2
