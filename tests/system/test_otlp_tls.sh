#!/bin/bash
# timeout: 300
# The agent's OTLP transport security, against the real OpenTelemetry Collector
# (collector_lib.sh) with certificates this test makes with openssl (a CA, a second CA,
# server and client certificates, an expired one):
#  - mutual TLS over gRPC and over HTTP: the Collector, requiring a client certificate of the
#    CA, receives every interval of the agent's own store with its sample count, the
#    workload's stacks equal to the store's, its resource attributes, intact dictionaries
#    (check_against_store, as test_collector.sh without TLS); --otlp-server-name names the certificate's host while
#    the agent connects to 127.0.0.1; an --otlp-header token appears neither in the agent's log
#    (-v) nor in /metrics.
#  - refused, each with one clear line in the log and counted in /metrics
#    (stackscope_exports_lost_total{reason="tls"}), nothing accepted by the Collector: a CA
#    that did not sign the server's certificate, an expired server certificate, a name the
#    certificate does not carry, no client certificate, a server of TLS 1.1 at most.
#  - never plaintext: an https:// endpoint served by a bare TCP listener sees a TLS
#    ClientHello, never an HTTP request; an http:// endpoint to a non-loopback host without
#    --otlp-insecure, and TLS files with an http:// endpoint, fail at start with one line.
#  - rotation: the CA file and the client certificate replaced while the agent runs (the
#    Collector restarted with a server certificate of a new CA): deliveries go on, and the log
#    says the files changed.
#  - the agent's CPU time and peak RSS with TLS on and off over the same workload and
#    duration (printed for docs/BENCHMARKS.md; not asserted).
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/collector_lib.sh"
need_root
have_fixture wl_chain_nofp || finish
collector_find || finish
command -v openssl >/dev/null || { fail "openssl missing"; finish; }
CHAIN='main;chain_a;chain_b;chain_c;hot_leaf'
PKI=$TMP/pki
mkdir -p "$PKI"

# --- certificates --------------------------------------------------------------------------
# ca NAME: a CA (NAME.crt, NAME.key)
ca()
{
	openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj "/CN=stackscope test $1" \
		-keyout "$PKI/$1.key" -out "$PKI/$1.crt" -addext basicConstraints=critical,CA:TRUE \
		-addext keyUsage=critical,keyCertSign,cRLSign 2>/dev/null
}
# leaf NAME CA SAN USAGE [START END]: a certificate NAME.crt/.key signed by CA for the
# subjectAltName SAN and extendedKeyUsage USAGE (serverAuth, clientAuth), valid 2 days or
# from START to END (YYYYMMDDHHMMSSZ, through `openssl ca`)
leaf()
{
	local name=$1 ca=$2 san=$3 usage=$4
	openssl req -newkey rsa:2048 -nodes -subj "/CN=$name" -keyout "$PKI/$name.key" \
		-out "$PKI/$name.csr" 2>/dev/null || return 1
	printf '%s\n' "subjectAltName=$san" "extendedKeyUsage=$usage" \
		"basicConstraints=CA:FALSE" >"$PKI/$name.ext"
	if [[ -z ${5:-} ]]; then
		openssl x509 -req -in "$PKI/$name.csr" -CA "$PKI/$ca.crt" -CAkey "$PKI/$ca.key" \
			-CAcreateserial -days 2 -extfile "$PKI/$name.ext" -out "$PKI/$name.crt" 2>/dev/null
		return
	fi
	mkdir -p "$PKI/db-$name"
	: >"$PKI/db-$name/index.txt"
	echo 1000 >"$PKI/db-$name/serial"
	cat >"$PKI/$name.cnf" <<-EOF
		[ ca ]
		default_ca = test_ca
		[ test_ca ]
		database = $PKI/db-$name/index.txt
		new_certs_dir = $PKI/db-$name
		serial = $PKI/db-$name/serial
		default_md = sha256
		policy = any
		[ any ]
		commonName = supplied
		[ ext ]
		subjectAltName = $san
		extendedKeyUsage = $usage
		basicConstraints = CA:FALSE
	EOF
	openssl ca -batch -notext -config "$PKI/$name.cnf" -extensions ext -cert "$PKI/$ca.crt" \
		-keyfile "$PKI/$ca.key" -in "$PKI/$name.csr" -out "$PKI/$name.crt" \
		-startdate "$5" -enddate "$6" 2>"$PKI/$name.err"
}
ca ca && ca other && ca ca2 &&
	leaf srv ca "DNS:collector.test,IP:127.0.0.1" serverAuth &&
	leaf srv_named ca "DNS:collector.test" serverAuth &&
	leaf srv_expired ca "IP:127.0.0.1" serverAuth 20200101000000Z 20200201000000Z &&
	leaf cli ca "DNS:agent.test" clientAuth &&
	leaf srv2 ca2 "IP:127.0.0.1" serverAuth &&
	leaf cli2 ca2 "DNS:agent.test" clientAuth
check "certificates made by openssl" test -s "$PKI/cli2.crt" -a -s "$PKI/srv_expired.crt" ||
	finish

# tls_yaml SERVER-CERT CLIENT-CA: the receiver's TLS block (client certificates required;
# versions TLS_MIN, default 1.2, up to TLS_MAX when set)
tls_yaml()
{
	printf '        tls:\n          cert_file: %s\n          key_file: %s\n          client_ca_file: %s\n          min_version: "%s"\n' \
		"$PKI/$1.crt" "$PKI/$1.key" "$PKI/$2.crt" "${TLS_MIN:-1.2}"
	if [[ -n ${TLS_MAX:-} ]]; then
		printf '          max_version: "%s"\n' "$TLS_MAX"
	fi
}

# tls_run NAME PROTO ENDPOINT WAIT_OK ARGS...: an agent exporting to ENDPOINT (PROTO grpc or
# http) with ARGS for a few intervals (until WAIT_OK exports succeeded, or 12 s), stopped;
# /metrics of its last scrape in $TMP/NAME.metrics
tls_run()
{
	local name=$1 proto=$2 endpoint=$3 want=$4 mport
	shift 4
	mport=$(free_port)
	workload
	agent "$name" --interval 0.5 --otlp-protocol "${proto/http/http\/protobuf}" \
		--otlp-endpoint "$endpoint" --metrics-addr "127.0.0.1:$mport" "$@"
	if ! wait_agent "$TMP/$name.err" "$APID"; then
		fail "$name: the agent did not start: $(tail -3 "$TMP/$name.err")"
		return 1
	fi
	if [[ $want -gt 0 ]]; then
		wait_metric "$mport" 'stackscope_exports_total{result="ok"}' "$want" 20
	else
		wait_metric "$mport" 'stackscope_exports_lost_total{reason="tls"}' 2 12
	fi
	scrape "$mport"
	cp "$TMP/metrics.txt" "$TMP/$name.metrics"
	stop_agent
}

# --- mutual TLS over gRPC and HTTP -------------------------------------------------------------
SECRET=tok-$RANDOM$RANDOM-secret
for proto in grpc http; do
	echo "# mutual TLS over $proto (at ${SECONDS} s)"
	name=mtls_$proto
	collector_start "$name" "$(tls_yaml srv ca)" || continue
	port=$GRPC_PORT
	[[ $proto == http ]] && port=$HTTP_PORT
	tls_run "$name" "$proto" "https://127.0.0.1:$port" 3 -v --otlp-ca "$PKI/ca.crt" \
		--otlp-cert "$PKI/cli.crt" --otlp-key "$PKI/cli.key" \
		--otlp-header "authorization=Bearer $SECRET"
	collector_stop
	check_eq "$name: agent exit status" "$ARC" 0
	# as test_collector.sh without TLS: intervals, stacks, attributes, dictionaries against
	# the agent's own store of the same run
	check_against_store "$name"
	check_eq "$name: /metrics: requests lost" \
		"$(awk '$1 ~ /^stackscope_exports_lost_total/ { n += $2 } END { print n + 0 }' "$TMP/$name.metrics")" 0
	check_eq "$name: the header's value in the agent's log (-v) and /metrics" \
		"$(cat "$TMP/$name.err" "$TMP/$name.metrics" | grep -c "$SECRET")" 0
done

echo "# --otlp-server-name (at ${SECONDS} s)"
name=named
if collector_start "$name" "$(tls_yaml srv_named ca)"; then
	tls_run "$name" grpc "https://127.0.0.1:$GRPC_PORT" 2 --otlp-ca "$PKI/ca.crt" \
		--otlp-cert "$PKI/cli.crt" --otlp-key "$PKI/cli.key" --otlp-server-name collector.test
	collector_stop
	check_ge "$name: exports accepted with the certificate's name given" \
		"$(awk '$1 == "stackscope_exports_total{result=\"ok\"}" { print $2 }' "$TMP/$name.metrics")" 2
fi

# --- refusals: one clear line, counted, nothing received ---------------------------------------
# refused NAME SERVER-CERT PATTERN ARGS...: the Collector with SERVER-CERT (client certificates
# of ca required) receives nothing from an agent with ARGS; the agent's log has one line
# "TLS ... refused" matching PATTERN, /metrics counts the losses under reason="tls"
refused()
{
	local name=$1 srv=$2 pat=$3 lines lost
	shift 3
	echo "# refused: $name (at ${SECONDS} s)"
	collector_start "$name" "$(tls_yaml "$srv" ca)" || return
	tls_run "$name" grpc "https://127.0.0.1:$GRPC_PORT" 0 "$@"
	collector_stop
	lines=$(grep -c 'otlp: TLS with .* refused' "$TMP/$name.err")
	check_eq "$name: TLS refusal lines in the agent's log" "$lines" 1
	check "$name: the line says why ($(grep -o 'refused: .*' "$TMP/$name.err" | head -1 | cut -c1-120))" \
		grep -Eiq "refused: .*($pat)" "$TMP/$name.err"
	lost=$(awk '$1 == "stackscope_exports_lost_total{reason=\"tls\"}" { print $2 }' "$TMP/$name.metrics")
	check_ge "$name: /metrics: requests lost, reason tls" "${lost:-0}" 2
	check_eq "$name: /metrics: requests delivered" \
		"$(awk '$1 == "stackscope_exports_total{result=\"ok\"}" { print $2 }' "$TMP/$name.metrics")" 0
	check_eq "$name: messages the Collector wrote" "$(stat -c %s "$TMP/$name.pb" 2>/dev/null || echo 0)" 0
}
refused wrong_ca srv 'issuer|self.signed|verify' --otlp-ca "$PKI/other.crt" \
	--otlp-cert "$PKI/cli.crt" --otlp-key "$PKI/cli.key"
refused expired srv_expired 'expired' --otlp-ca "$PKI/ca.crt" \
	--otlp-cert "$PKI/cli.crt" --otlp-key "$PKI/cli.key"
refused wrong_name srv_named 'name|match' --otlp-ca "$PKI/ca.crt" \
	--otlp-cert "$PKI/cli.crt" --otlp-key "$PKI/cli.key"
refused no_client_cert srv 'certificate|alert|handshake' --otlp-ca "$PKI/ca.crt"
# a server that speaks TLS 1.1 at most: the agent asks for 1.2 or later
TLS_MIN=1.1 TLS_MAX=1.1 refused tls_1_1 srv 'version|protocol|alert|handshake' \
	--otlp-ca "$PKI/ca.crt" --otlp-cert "$PKI/cli.crt" --otlp-key "$PKI/cli.key"

# --- never plaintext -----------------------------------------------------------------------------
echo "# never plaintext (at ${SECONDS} s)"
cat >"$TMP/listen.py" <<'EOF'
import socket, sys, time
s = socket.socket()
s.bind(("127.0.0.1", 0))
s.listen(8)
print(s.getsockname()[1], flush=True)
s.settimeout(1)
end = time.monotonic() + float(sys.argv[1])
with open(sys.argv[2], "wb") as out:
    while time.monotonic() < end:
        try:
            c, _ = s.accept()
        except socket.timeout:
            continue
        c.settimeout(1)
        try:
            data = c.recv(16)
        except OSError:
            data = b""
        out.write(data[:8].hex().encode() + b"\n")
        out.flush()
        c.close()
EOF
$PY "$TMP/listen.py" 12 "$TMP/listen.bytes" >"$TMP/listen.port" &
LPID=$!
_bg_pids+=($LPID)
for ((i = 0; i < 50; i++)); do
	[[ -s $TMP/listen.port ]] && break
	sleep 0.1
done
LPORT=$(head -1 "$TMP/listen.port")
tls_run plain_listener grpc "https://127.0.0.1:$LPORT" 0 --otlp-ca "$PKI/ca.crt"
wait "$LPID" 2>/dev/null
check_ge "plaintext: connections to the bare listener" "$(grep -c . "$TMP/listen.bytes")" 1
check_eq "plaintext: connections that did not start with a TLS handshake record" \
	"$(grep -vc '^1603' "$TMP/listen.bytes")" 0
# bad_start DESCRIPTION PATTERN ARGS...: the agent (with the environment BAD_ENV) exits at once
# with one line matching PATTERN
BAD_ENV=()
bad_start()
{
	local what=$1 pat=$2 rc
	shift 2
	env "${BAD_ENV[@]}" timeout -k 2 10 "$SS" agent --output-dir "$TMP/never" "$@" 2>"$TMP/bad.err" </dev/null
	rc=$?
	if [[ $rc -ne 0 && $rc -ne 124 && $(grep -c . "$TMP/bad.err") -eq 1 ]] &&
		grep -Eiq "$pat" "$TMP/bad.err"; then
		ok "$what: exit $rc: $(cat "$TMP/bad.err")"
	else
		fail "$what: exit $rc: $(head -c 300 "$TMP/bad.err")"
	fi
}
bad_start "http:// to a non-loopback host without --otlp-insecure" 'plaintext.*--otlp-insecure' \
	--otlp-endpoint http://192.0.2.1:4318
bad_start "TLS files with an http:// endpoint" 'TLS settings.*https' \
	--otlp-endpoint http://127.0.0.1:4318 --otlp-ca "$PKI/ca.crt"
bad_start "--otlp-insecure with an https:// endpoint" 'insecure.*https' \
	--otlp-endpoint https://127.0.0.1:4318 --otlp-insecure
bad_start "--otlp-cert without --otlp-key" 'both' \
	--otlp-endpoint https://127.0.0.1:4318 --otlp-cert "$PKI/cli.crt"
bad_start "a header's value never echoed" 'header' \
	--otlp-endpoint http://127.0.0.1:4318 --otlp-header "x-token=$SECRET$(printf '\001')"
check_eq "a bad header's value not in the error line" "$(grep -c "$SECRET" "$TMP/bad.err")" 0
BAD_ENV=(OTEL_EXPORTER_OTLP_PROFILES_CLIENT_KEY=$TMP/none)
bad_start "OTEL_EXPORTER_OTLP_PROFILES_CLIENT_KEY unreadable" 'PROFILES_CLIENT_KEY' \
	--otlp-endpoint https://127.0.0.1:4318
BAD_ENV=(OTEL_EXPORTER_OTLP_INSECURE=maybe)
bad_start "OTEL_EXPORTER_OTLP_INSECURE=maybe" 'INSECURE' --otlp-endpoint http://127.0.0.1:4318
BAD_ENV=(OTEL_EXPORTER_OTLP_INSECURE=true)
bad_start "OTEL_EXPORTER_OTLP_INSECURE=true with an https:// endpoint" 'insecure.*https' \
	--otlp-endpoint https://127.0.0.1:4318
BAD_ENV=()
check "no output folder created" test ! -e "$TMP/never"

# --- rotation --------------------------------------------------------------------------------------
echo "# rotation (at ${SECONDS} s)"
name=rotate
cp "$PKI/ca.crt" "$PKI/live-ca.crt"
cp "$PKI/cli.crt" "$PKI/live-cli.crt"
cp "$PKI/cli.key" "$PKI/live-cli.key"
MPORT=$(free_port)
if collector_start rot1 "$(tls_yaml srv ca)"; then
	workload
	agent "$name" --interval 0.5 --otlp-protocol grpc --otlp-endpoint "https://127.0.0.1:$GRPC_PORT" \
		--metrics-addr "127.0.0.1:$MPORT" --otlp-ca "$PKI/live-ca.crt" \
		--otlp-cert "$PKI/live-cli.crt" --otlp-key "$PKI/live-cli.key"
	if wait_agent "$TMP/$name.err" "$APID" &&
		wait_metric "$MPORT" 'stackscope_exports_total{result="ok"}' 2 20; then
		collector_stop
		# the new CA's files, each replaced whole (as a secret volume or cert-manager does)
		for f in ca:live-ca.crt cli2:live-cli.crt; do
			cp "$PKI/${f%%:*}.crt" "$PKI/${f#*:}.new" && mv "$PKI/${f#*:}.new" "$PKI/${f#*:}"
		done
		cp "$PKI/cli2.key" "$PKI/live-cli.key.new" && mv "$PKI/live-cli.key.new" "$PKI/live-cli.key"
		cp "$PKI/ca2.crt" "$PKI/live-ca.crt.new" && mv "$PKI/live-ca.crt.new" "$PKI/live-ca.crt"
		scrape "$MPORT"
		before=$(metric 'stackscope_exports_total{result="ok"}')
		collector_start rot2 "$(tls_yaml srv2 ca2)"
		wait_metric "$MPORT" 'stackscope_exports_total{result="ok"}' $((before + 3)) 20
		after=$(metric 'stackscope_exports_total{result="ok"}')
		check_ge "rotation: exports accepted with the new CA and client certificate" \
			"$((after - before))" 3
		check "rotation: the log says the TLS files changed" \
			grep -q 'TLS files changed' "$TMP/$name.err"
		received rot2
		check_ge "rotation: messages the new Collector wrote" \
			"$(find "$TMP/rot2.msgs" -name '*.pb' 2>/dev/null | wc -l)" 3
	else
		fail "rotation: no delivery before the rotation: $(tail -3 "$TMP/$name.err")"
	fi
	stop_agent
	collector_stop
fi

# --- cost: TLS on and off, the same workload and duration --------------------------------------------
echo "# cost of TLS (at ${SECONDS} s)"
# cost NAME ENDPOINT ARGS...: the agent at 99 Hz, 1 s intervals, gRPC, COST_SECS after it runs:
# its CPU seconds (utime + stime) over those seconds and its peak RSS, as "NAME CPU_MS HWM_KB"
# (reported, not bounded: four exports each are enough to show both ran; 10 s cost 12 s more)
COST_SECS=4
cost()
{
	local name=$1 endpoint=$2 t0 t1 hz
	shift 2
	hz=$(getconf CLK_TCK)
	workload
	agent "$name" --interval 1 --otlp-protocol grpc --otlp-endpoint "$endpoint" "$@"
	wait_agent "$TMP/$name.err" "$APID" || { fail "$name: the agent did not start"; return; }
	t0=$(awk '{ print $14 + $15 }' "/proc/$APID/stat")
	sleep $COST_SECS
	t1=$(awk '{ print $14 + $15 }' "/proc/$APID/stat")
	echo "$name $(((t1 - t0) * 1000 / hz)) $(awk '/^VmHWM:/ { print $2 }' "/proc/$APID/status")" \
		>>"$TMP/cost.txt"
	stop_agent
}
if collector_start cost_plain; then
	cost cost_plain "http://127.0.0.1:$GRPC_PORT"
	collector_stop
fi
if collector_start cost_tls "$(tls_yaml srv ca)"; then
	cost cost_tls "https://127.0.0.1:$GRPC_PORT" --otlp-ca "$PKI/ca.crt" \
		--otlp-cert "$PKI/cli.crt" --otlp-key "$PKI/cli.key"
	collector_stop
fi
while read -r n cpu hwm; do
	echo "  info $n: agent CPU ${cpu} ms over $COST_SECS s, peak RSS ${hwm} KiB"
done <"$TMP/cost.txt"
check_eq "cost: both runs measured" "$(grep -c . "$TMP/cost.txt")" 2
kill "$WPID" 2>/dev/null

finish
