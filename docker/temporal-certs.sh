#!/bin/sh
# The compose stack's own PKI for mTLS between Temporal's frontend and everything that calls it
# (docker-compose.yml's temporal-certs service runs it into the temporal-tls volume):
#
#   DIR/ca/        ca.pem, ca.key: the stack's CA (only this script ever mounts the key)
#   DIR/temporal/  the Temporal server: cert.pem/key.pem for the frontend and between its own roles, ca.pem to check
#                  callers against
#   DIR/forge/     Forge's workers, DIR/ui/ the Web UI, DIR/operator/ the namespace setup and an operator's CLI on the
#                  host: each a client cert.pem/key.pem of its own and ca.pem to check the server against
#
# Each service mounts only its own directory, so a container holds one private key: its own.
# Idempotent: what exists is kept, what is missing is issued (a new CA reissues everything). Delete DIR (the volume)
# to start over.
#
# Usage: temporal-certs.sh DIR
#   TLS_OWNER         uid:gid to hand the issued files to (compose: 1000:1000, the user of every image that reads them)
#   TLS_SERVER_NAMES  the server's DNS names, comma-separated (default temporal,localhost: its compose service name,
#                     and the published port on the host); 127.0.0.1 and ::1 are always in
#   TLS_DAYS          validity (default 825)
set -eu

dir=${1:?usage: temporal-certs.sh DIR}
owner=${TLS_OWNER:-}
server_names=${TLS_SERVER_NAMES:-temporal,localhost}
days=${TLS_DAYS:-825}
clients='forge ui operator'

issued() { [ -s "$dir/$1/cert.pem" ] && [ -s "$dir/$1/key.pem" ] && [ -s "$dir/$1/ca.pem" ]; }

all_there=yes
[ -s "$dir/ca/ca.pem" ] && [ -s "$dir/ca/ca.key" ] || all_there=no
for leaf in temporal $clients; do issued "$leaf" || all_there=no; done
if [ "$all_there" = yes ]; then
  echo "temporal-certs: every certificate is in $dir already"
  exit 0
fi

# The compose service runs this on plain Alpine: it fetches openssl only when there is something to issue.
if ! command -v openssl >/dev/null 2>&1; then
  if command -v apk >/dev/null 2>&1; then apk add --no-cache --quiet openssl; else
    echo 'temporal-certs: openssl is needed' >&2
    exit 1
  fi
fi

umask 077
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# P-256 keys in PKCS#8: read by Go (server, Web UI), Node's TLS (the client) and rustls (the worker's core).
new_key() { openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$1" 2>/dev/null; }

mkdir -p "$dir/ca"
if [ ! -s "$dir/ca/ca.pem" ] || [ ! -s "$dir/ca/ca.key" ]; then
  cat >"$work/ca.cnf" <<'EOF'
[req]
distinguished_name = dn
prompt = no
[dn]
CN = Forge compose stack CA
[ext]
basicConstraints = critical, CA:TRUE, pathlen:0
keyUsage = critical, keyCertSign, cRLSign
subjectKeyIdentifier = hash
EOF
  new_key "$dir/ca/ca.key"
  openssl req -new -x509 -config "$work/ca.cnf" -extensions ext -key "$dir/ca/ca.key" -sha256 -days "$days" \
    -out "$dir/ca/ca.pem"
  # Certificates of an earlier CA would not verify against this one.
  for leaf in temporal $clients; do rm -rf "${dir:?}/$leaf"; done
  echo "temporal-certs: new CA"
fi

# issue NAME COMMON_NAME EXTENDED_KEY_USAGE [SUBJECT_ALT_NAMES]
issue() {
  if issued "$1"; then return 0; fi
  mkdir -p "$dir/$1"
  {
    echo 'basicConstraints = critical, CA:FALSE'
    echo 'keyUsage = critical, digitalSignature'
    echo "extendedKeyUsage = $3"
    echo 'subjectKeyIdentifier = hash'
    echo 'authorityKeyIdentifier = keyid'
    if [ -n "${4:-}" ]; then echo "subjectAltName = $4"; fi
  } >"$work/$1.ext"
  new_key "$dir/$1/key.pem"
  openssl req -new -key "$dir/$1/key.pem" -subj "/CN=$2" -out "$work/$1.csr"
  openssl x509 -req -in "$work/$1.csr" -CA "$dir/ca/ca.pem" -CAkey "$dir/ca/ca.key" \
    -set_serial "0x$(openssl rand -hex 16)" -sha256 -days "$days" -extfile "$work/$1.ext" -out "$dir/$1/cert.pem" \
    2>/dev/null
  cp "$dir/ca/ca.pem" "$dir/$1/ca.pem"
  chmod 0644 "$dir/$1/cert.pem" "$dir/$1/ca.pem"
  chmod 0600 "$dir/$1/key.pem"
  chmod 0700 "$dir/$1"
  if [ -n "$owner" ]; then chown -R "$owner" "$dir/$1"; fi
  echo "temporal-certs: issued $1 ($2)"
}

sans=''
old_ifs=$IFS
IFS=,
for name in $server_names; do sans="${sans}DNS:$name,"; done
IFS=$old_ifs
# The server's certificate serves the frontend and, as Temporal uses it, the client side between its own roles (its
# system worker calls the frontend with it): both usages.
issue temporal temporal 'serverAuth, clientAuth' "${sans}IP:127.0.0.1,IP:::1"
issue forge forge-worker clientAuth
issue ui temporal-ui clientAuth
issue operator operator clientAuth
