#!/usr/bin/env bash
# One-time (and after each change of sites or sensors) setup of the compose stack:
#
#   * random secrets in deploy/secrets/ (kept when they exist already):
#     influx_token, influx_admin_password, grafana_admin_password, mqtt_password;
#   * the Mosquitto ACL, generated from compose/stormwatch.yaml by `stormwatch acl`;
#   * the Mosquitto password file: the daemon's account (stormwatch) and every
#     other account of the ACL (one per node, {site}.{node} or {site}.{sensor},
#     and one per site, {site}.qp) whose passwords are printed once and kept in
#     secrets/nodes.txt, to load onto the sensor nodes.
#
# Run from anywhere: deploy/compose/setup.sh. Needs docker (compose v2).
set -euo pipefail
cd "$(dirname "$0")/.."        # deploy/
umask 077
mkdir -p secrets
chmod 700 secrets

random_secret() { head -c 30 /dev/urandom | base64 | tr -d '/+=\n'; }

for name in influx_token influx_admin_password grafana_admin_password mqtt_password; do
  if [ ! -s "secrets/$name" ]; then
    random_secret > "secrets/$name"     # no trailing newline: Grafana reads it verbatim
    echo "created secrets/$name"
  fi
  # Read inside the containers by non-root users (grafana, influxdb, mosquitto,
  # stormwatch); the 0700 directory keeps other host users out.
  chmod 644 "secrets/$name"
done

docker compose build stormwatch
docker compose run --rm --no-deps --entrypoint stormwatch stormwatch \
  acl --config /etc/stormwatch/stormwatch.yaml > secrets/mosquitto.acl

# Accounts: the daemon, then every user line of the ACL except the daemon's.
touch secrets/nodes.txt
: > secrets/mosquitto.passwd
chmod 644 secrets/mosquitto.passwd secrets/mosquitto.acl
add_user() {  # name password
  docker run --rm -v "$PWD/secrets:/s" eclipse-mosquitto:2.0 \
    mosquitto_passwd -b /s/mosquitto.passwd "$1" "$2"
}
add_user stormwatch "$(cat secrets/mqtt_password)"
for user in $(awk '$1 == "user" && $2 != "stormwatch" {print $2}' secrets/mosquitto.acl); do
  password=$(awk -v u="$user" '$1 == u {print $2}' secrets/nodes.txt)
  if [ -z "$password" ]; then
    password=$(random_secret)
    echo "$user $password" >> secrets/nodes.txt
    echo "new MQTT account $user (password in secrets/nodes.txt)"
  fi
  add_user "$user" "$password"
done
# mosquitto_passwd rewrites the file with its own mode; the broker runs as the
# image's mosquitto user and must be able to read it.
chmod 644 secrets/mosquitto.passwd
echo "done: docker compose up -d"
