#!/usr/bin/env bash
# Install the Debian packages the integration tests run for real, when they are
# missing and we are root. The tests start their own instances on free ports.
set -euo pipefail
need=()
command -v mosquitto >/dev/null 2>&1 || [ -x /usr/sbin/mosquitto ] || need+=(mosquitto)
command -v influxd >/dev/null 2>&1 || [ -x /usr/bin/influxd ] || need+=(influxdb)
# libfaketime: the season test runs the real daemon through weeks of wall-clock time.
command -v faketime >/dev/null 2>&1 || need+=(faketime)
# The field app's browser tests drive Debian's Chromium (through Playwright's Python
# package, pointed at /usr/bin/chromium; chromium-driver for Selenium users).
command -v chromium >/dev/null 2>&1 || [ -x /usr/bin/chromium ] || need+=(chromium)
command -v chromedriver >/dev/null 2>&1 || [ -x /usr/bin/chromedriver ] || need+=(chromium-driver)
if [ ${#need[@]} -eq 0 ]; then
  exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
  echo "install-test-deps: missing ${need[*]}; not root, the tests that need them will skip" >&2
  exit 0
fi
echo "install-test-deps: installing ${need[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq >/dev/null
# --no-install-recommends and no service start: the tests run their own instances.
printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d && chmod +x /usr/sbin/policy-rc.d
apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
rm -f /usr/sbin/policy-rc.d
