#!/usr/bin/env bash
# Install the Debian packages the tests need (Chromium for Playwright, a CJK font so Chinese pages draw, PostgreSQL for the shared-database tests).
set -euo pipefail
packages=()
[ -x /usr/bin/chromium ] || packages+=(chromium)
compgen -G "/usr/share/fonts/opentype/noto/NotoSansCJK*" >/dev/null || packages+=(fonts-noto-cjk)
compgen -G "/usr/lib/postgresql/*/bin/initdb" >/dev/null || packages+=(postgresql)
if [ ${#packages[@]} -eq 0 ]; then
  exit 0
fi
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
echo "installing Debian packages: ${packages[*]}" >&2
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${packages[@]}" >&2
