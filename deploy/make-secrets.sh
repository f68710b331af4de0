#!/bin/sh
# Creates deploy/secrets/ for compose.yaml: random API key, PostgreSQL
# password (and the pgpass line xconn reads it from), the room's sign-in
# input. Files are mode 0600; the xconn ones are owned by 65532, the
# image's user (run with sudo to chown; Docker mounts them as they are).
set -eu
cd "$(dirname "$0")"
umask 077
mkdir -p secrets
rand() { head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n'; }
[ -s secrets/xconn_api_key ] || rand > secrets/xconn_api_key
[ -s secrets/pg_password ] || rand > secrets/pg_password
printf 'postgres:5432:xconn:xconn:%s\n' "$(cat secrets/pg_password)" > secrets/pgpass
[ -s secrets/room_input ] || printf 'room=lobby\naccess_code=%s\n' "$(rand | head -c 12)" > secrets/room_input
if [ "$(id -u)" = 0 ]; then
  chown 65532:65532 secrets/xconn_api_key secrets/pgpass secrets/room_input
  chown 999:999 secrets/pg_password   # the postgres image's user
else
  echo "make-secrets: run as root (sudo) to give the files to the containers' users (65532, postgres 999)" >&2
fi
ls -l secrets
