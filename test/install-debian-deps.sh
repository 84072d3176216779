#!/usr/bin/env bash
# The Debian tools the test suite drives, installed with apt-get only when missing (run as root, or with sudo):
# openssl (a throwaway test CA for the image_url tests), script from bsdutils (a pseudo-terminal for the
# progress-bar tests), tar (model assembly), chromium (the web page's browser tests drive Debian's chromium
# with playwright-core; a browser download cannot work offline), useradd from passwd (embedded-postgres
# creates its `postgres` user with it when the tests run as root), Mesa's lavapipe and the Vulkan loader (a real
# WebGPU adapter for the GPU tests), heif-enc from libheif-examples and tiffcp from libtiff-tools (the HEIC and
# multi-page TIFF photos of test/helpers/photo-formats.ts; its tiffinfo reads the TIFF results), ImageMagick and
# python3-psd-tools (real readers of the layered PSD results), raw-identify and dcraw_emu from libraw-bin (LibRaw's
# own tools read the RAW fixtures of test/helpers/raw-files.ts). Used by .ci/run and the README's quick start.
set -euo pipefail
# Not root: through sudo when it is there; otherwise apt-get says why it cannot.
as_root=""
[ "$(id -u)" = 0 ] || ! command -v sudo >/dev/null || as_root="sudo"
installed() { [ "$(dpkg-query -W -f='${Status}' "$1" 2>/dev/null)" = "install ok installed" ]; }
missing=""
command -v openssl >/dev/null || missing="$missing openssl"
command -v script >/dev/null || missing="$missing bsdutils"
command -v tar >/dev/null || missing="$missing tar"
[ -x /usr/bin/chromium ] || missing="$missing chromium"
command -v useradd >/dev/null || missing="$missing passwd"
command -v heif-enc >/dev/null || missing="$missing libheif-examples"
command -v tiffcp >/dev/null || missing="$missing libtiff-tools"
command -v identify >/dev/null || missing="$missing imagemagick"
/usr/bin/python3 -c 'import psd_tools' 2>/dev/null || missing="$missing python3-psd-tools"
command -v raw-identify >/dev/null || missing="$missing libraw-bin"
if [ -n "$missing" ]; then
  echo "installing the Debian packages the tests need:$missing"
  $as_root apt-get update -qq && $as_root apt-get install -y -qq $missing
fi
# heif-enc's HEVC encoder: built into bookworm's libheif1, a plugin package from libheif 1.16 on (trixie).
if ! heif-enc --list-encoders 2>/dev/null | grep -q x265; then
  echo "installing heif-enc's x265 encoder plugin for the HEIC test photos"
  $as_root apt-get update -qq && $as_root apt-get install -y -qq libheif-plugin-x265
fi
# A real WebGPU adapter for the GPU tests on a machine without a GPU: Mesa's lavapipe (Vulkan on the CPU) and
# the Vulkan loader. Dawn needs Mesa 25 (bookworm-backports); bookworm's own 22.3 lacks features it requires.
mesa=$(dpkg-query -W -f='${Version}' mesa-vulkan-drivers 2>/dev/null || true)
if ! installed mesa-vulkan-drivers || [ "${mesa%%.*}" -lt 25 ] 2>/dev/null || ! installed libvulkan1; then
  codename=$(. /etc/os-release && echo "${VERSION_CODENAME:-}")
  echo "installing lavapipe (mesa-vulkan-drivers, from ${codename}-backports on bookworm) and libvulkan1 for the GPU tests"
  if [ "$codename" = bookworm ]; then
    grep -rqs 'bookworm-backports' /etc/apt/sources.list /etc/apt/sources.list.d/ ||
      echo 'deb http://deb.debian.org/debian bookworm-backports main' | $as_root tee /etc/apt/sources.list.d/bookworm-backports.list >/dev/null
    $as_root apt-get update -qq && $as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq -t bookworm-backports mesa-vulkan-drivers libvulkan1
  else
    $as_root apt-get update -qq && $as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq mesa-vulkan-drivers libvulkan1
  fi
fi
