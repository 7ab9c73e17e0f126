# SPDX-License-Identifier: GPL-2.0
#
# etcd-lib.sh: sourced by the idgend tests.  Starts real etcd members on
# loopback, each in its own data directory under $work, and stops them.
#
#   etcd_cluster NAME N      start an N-member cluster; sets the arrays
#                            ETCD_URLS (client URLs) and ETCD_PIDS
#   etcd_stop I / etcd_start I   stop (SIGKILL) or restart member I
#   etcd_leader              the index of the current leader
#   etcd_endpoints           "url,url,..." for idgend --endpoints
#   etcdctl_ ARGS...         etcdctl against the running members
#   etcdctl_at URLS ARGS...  etcdctl against URLS ("url,url,...")
#   etcd_cleanup             kill every member (also on EXIT)
#
# With ETCD_TLS set to a directory (secure.sh's certificates), members serve clients
# over TLS only, with its server.pem and server.key, and require client
# certificates signed by its ca.pem (--client-cert-auth); etcdctl_ then
# speaks as admin.pem (CN root: etcd takes a gRPC client's CN as its
# user), etcd_leader too.
#
# Ports are probed free below the kernel's ephemeral range, distinct
# within a cluster.  ETCD_BIN
# names the etcd to run (default the machine's, /usr/bin/etcd); etcdctl is
# always the machine's, which speaks the same v3 API to 3.4 and 3.5.

ETCD_BIN=${ETCD_BIN:-/usr/bin/etcd}
ETCD_TLS=${ETCD_TLS:-}
# More flags for every member.
ETCD_EXTRA=${ETCD_EXTRA:-}

ETCD_URLS=()
ETCD_PIDS=()
ETCD_ARGS=()

# Below the kernel's ephemeral range (32768 up, by default): a port probed
# free there cannot be taken, before etcd binds it, as the source port of
# some connection the tests make meanwhile.
etcd_free_port() {
	local port
	while :; do
		port=$((20000 + RANDOM % 12000))
		if ! (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
			echo "$port"
			return
		fi
	done
}

# A free port that none of the arguments names: a cluster's ports are all
# probed before any member binds one.
etcd_free_port_but() {
	local port p
	while :; do
		port=$(etcd_free_port)
		for p in "$@"; do
			[ "$p" != "$port" ] || continue 2
		done
		echo "$port"
		return
	done
}

etcd_cluster() {
	local name=$1 count=$2 i cluster="" peers=() clients=() scheme=http tls=""
	ETCD_URLS=()
	ETCD_PIDS=()
	ETCD_ARGS=()
	for ((i = 0; i < count; i++)); do
		clients[i]=$(etcd_free_port_but "${clients[@]}" "${peers[@]}")
		peers[i]=$(etcd_free_port_but "${clients[@]}" "${peers[@]}")
		cluster+="${cluster:+,}$name$i=http://127.0.0.1:${peers[i]}"
	done
	if [ -n "$ETCD_TLS" ]; then
		scheme=https
		tls="--cert-file $ETCD_TLS/server.pem --key-file $ETCD_TLS/server.key
			--trusted-ca-file $ETCD_TLS/ca.pem --client-cert-auth"
	fi
	for ((i = 0; i < count; i++)); do
		ETCD_URLS[i]=$scheme://127.0.0.1:${clients[i]}
		ETCD_ARGS[i]="--name $name$i --data-dir $work/etcd-$name$i
			--listen-client-urls ${ETCD_URLS[i]}
			--advertise-client-urls ${ETCD_URLS[i]}
			--listen-peer-urls http://127.0.0.1:${peers[i]}
			--initial-advertise-peer-urls http://127.0.0.1:${peers[i]}
			--initial-cluster $cluster --initial-cluster-token $name
			--initial-cluster-state new $tls $ETCD_EXTRA"
		etcd_start "$i"
	done
	for ((i = 0; i < count; i++)); do
		etcd_wait "$i" || return 1
	done
}

etcd_start() {
	local i=$1
	# shellcheck disable=SC2086 # the arguments are words
	"$ETCD_BIN" ${ETCD_ARGS[i]} >>"$work/etcd-$i.log" 2>&1 &
	ETCD_PIDS[i]=$!
}

# Until the member answers a serialised read (no quorum needed); over
# TLS, until it answers at all (with auth enabled, a read without a token
# is refused).
etcd_wait() {
	local i=$1 t code
	for ((t = 0; t < 300; t++)); do
		if [ -n "$ETCD_TLS" ]; then
			# -k: a member whose certificate is expired on purpose
			# must come up too; this only waits for it.
			code=$(curl -s -k -m 1 -o /dev/null -w '%{http_code}' \
				--cert "$ETCD_TLS/admin.pem" \
				--key "$ETCD_TLS/admin.key" -X POST "${ETCD_URLS[i]}/v3/kv/range" \
				-d '{"key":"AA==","serializable":true}')
			[ "$code" != 000 ] && return 0
		elif curl -sf -m 1 -X POST "${ETCD_URLS[i]}/v3/kv/range" \
			-d '{"key":"AA==","serializable":true}' >/dev/null; then
			return 0
		fi
		sleep 0.1
	done
	echo "# etcd member $i did not come up; its log:"
	tail -n 20 "$work/etcd-$i.log" | sed 's/^/#   /'
	return 1
}

etcd_stop() {
	local i=$1
	kill -KILL "${ETCD_PIDS[i]}" 2>/dev/null
	wait "${ETCD_PIDS[i]}" 2>/dev/null
	ETCD_PIDS[i]=
}

etcd_endpoints() {
	local IFS=,
	echo "${ETCD_URLS[*]}"
}

# etcdctl at ENDPOINTS ("url,url,..."), as admin.pem over TLS.
etcdctl_at() {
	local endpoints=$1 tls=()
	shift
	[ -n "$ETCD_TLS" ] && tls=(--cacert "$ETCD_TLS/ca.pem" --cert "$ETCD_TLS/admin.pem"
		--key "$ETCD_TLS/admin.key")
	ETCDCTL_API=3 /usr/bin/etcdctl --endpoints "$endpoints" "${tls[@]}" \
		--dial-timeout 2s --command-timeout 5s "$@"
}

etcdctl_() {
	etcdctl_at "$(etcd_endpoints)" "$@"
}

# The leader's index: the member whose status says it is the leader.
etcd_leader() {
	local i status
	for i in "${!ETCD_URLS[@]}"; do
		[ -n "${ETCD_PIDS[i]}" ] || continue
		status=$(etcdctl_at "${ETCD_URLS[i]}" endpoint status -w json 2>/dev/null) ||
			continue
		if /usr/bin/python3 -c '
import json, sys
s = json.load(sys.stdin)[0]["Status"]
sys.exit(0 if s["header"]["member_id"] == s["leader"] else 1)' <<<"$status"; then
			echo "$i"
			return 0
		fi
	done
	return 1
}

# Waits for the members only: the caller may have other children running.
etcd_cleanup() {
	local pid
	for pid in "${ETCD_PIDS[@]}"; do
		[ -n "$pid" ] && kill -KILL "$pid" 2>/dev/null
	done
	for pid in "${ETCD_PIDS[@]}"; do
		[ -n "$pid" ] && wait "$pid" 2>/dev/null
	done
	ETCD_PIDS=()
}
