#!/usr/bin/env bash
# tests/tls/certs.sh DIR: the certificates tests/ns/tls-gateway.test.sh
# uses, made with openssl(1) (EC P-256, fast). Idempotent: an existing
# complete DIR is kept. Prints nothing on success.
#   ca.pem                 the CA; ca2.pem another CA
#   server.pem/-key.pem    SAN DNS:localhost, IP:127.0.0.1, IP:::1; serverAuth
#   server2.pem/-key.pem   the same names, a new key (rotation)
#   admin, operator, reader          clients with CN only
#   ops                    SAN URI spiffe://kin.test/ops, DNS ops.kin.test, CN ops
#   expired                valid 2020-01-01 .. 2020-12-31
#   otherca                a client cert from ca2
#   wrongeku               extendedKeyUsage serverAuth only
#   revoked                revoked in crl.pem
#   NAME.pem, NAME-key.pem for each client
set -euo pipefail
D=$1
[ -f "$D/.done" ] && exit 0
mkdir -p "$D"
cd "$D"
exec 3>&2 2>openssl.log
trap 'cat openssl.log >&3' ERR

key() { openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$1"; }
ca() { # ca NAME CN
	key "$1-key.pem"
	openssl req -x509 -new -key "$1-key.pem" -subj "/CN=$2" -days 3650 -out "$1.pem" \
		-addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign,cRLSign
}
# leaf NAME CA SUBJECT EXTENSIONS...
leaf() {
	local name=$1 ca=$2 subj=$3
	shift 3
	key "$name-key.pem"
	openssl req -new -key "$name-key.pem" -subj "$subj" -out "$name.csr"
	printf '%s\n' "basicConstraints=CA:FALSE" "$@" >"$name.ext"
	openssl x509 -req -in "$name.csr" -CA "$ca.pem" -CAkey "$ca-key.pem" -CAcreateserial \
		-days 825 -extfile "$name.ext" -out "$name.pem"
	rm -f "$name.csr" "$name.ext"
}
CLIENT="keyUsage=critical,digitalSignature
extendedKeyUsage=clientAuth"

ca ca "kin test CA"
ca ca2 "another CA"
for s in server server2; do
	leaf $s ca /CN=localhost "keyUsage=critical,digitalSignature" "extendedKeyUsage=serverAuth" \
		"subjectAltName=DNS:localhost,IP:127.0.0.1,IP:::1"
done
for n in admin operator reader; do leaf $n ca "/CN=$n" "$CLIENT"; done
leaf ops ca /CN=ops "$CLIENT" "subjectAltName=URI:spiffe://kin.test/ops,DNS:ops.kin.test"
leaf otherca ca2 /CN=admin "$CLIENT"
leaf wrongeku ca /CN=admin "keyUsage=critical,digitalSignature" "extendedKeyUsage=serverAuth"

# openssl ca for what x509 -req cannot do: dates in the past, revocation, a CRL.
mkdir -p cadb
: >cadb/index.txt
echo 1000 >cadb/serial
echo 1000 >cadb/crlnumber
cat >ca.cnf <<CNF
[ca]
default_ca = kin
[kin]
dir = $PWD/cadb
database = \$dir/index.txt
serial = \$dir/serial
crlnumber = \$dir/crlnumber
new_certs_dir = \$dir
certificate = $PWD/ca.pem
private_key = $PWD/ca-key.pem
default_md = sha256
default_crl_days = 3650
policy = any
copy_extensions = none
unique_subject = no
x509_extensions = client
[any]
commonName = supplied
[client]
basicConstraints = CA:FALSE
keyUsage = critical,digitalSignature
extendedKeyUsage = clientAuth
CNF
for n in expired revoked; do
	key "$n-key.pem"
	openssl req -new -key "$n-key.pem" -subj "/CN=$n" -out "$n.csr"
done
openssl ca -batch -config ca.cnf -notext -in expired.csr -out expired.pem \
	-startdate 20200101000000Z -enddate 20201231000000Z
openssl ca -batch -config ca.cnf -notext -in revoked.csr -out revoked.pem -days 825
openssl ca -batch -config ca.cnf -revoke revoked.pem
openssl ca -batch -config ca.cnf -gencrl -out crl.pem
rm -f ./*.csr
exec 2>&3
rm -f openssl.log
touch .done
