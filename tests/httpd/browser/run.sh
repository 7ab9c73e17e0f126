#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# run.sh URL WORKER: idgen-httpd's IDs as a real browser sees them.
# nginx serves ids.html and ids.js and passes /v1/ to the service at URL,
# so the page's fetch calls stay on one origin (the service sends no CORS
# headers, and needs none for this); headless Chromium loads the page, and
# the verdict ids.js writes into the DOM becomes TAP here.  WORKER is the
# simulated generator's worker.  Without chromium or nginx, one SKIP line
# says which is missing.  Chromium starts in about a second here.
set -uo pipefail

url=$1
worker=$2
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=../../lib/tap.sh
. "$here/../../lib/tap.sh"

echo "TAP version 13"
skip() { echo "ok 1 - a browser's view of the IDs # SKIP $1"; echo "1..1"; exit 0; }
chromium=$(command -v chromium || command -v chromium-browser) ||
	skip "chromium is not installed (scripts/deps.sh installs it)"
command -v nginx >/dev/null || skip "nginx is not installed (scripts/deps.sh installs it)"

work=$(mktemp -d) || exit 1
nginx_pid=
cleanup() {
	[ -n "$nginx_pid" ] && kill "$nginx_pid" 2>/dev/null && wait "$nginx_pid"
	rm -rf "$work"
}
trap cleanup EXIT

# nginx on a free loopback port: it cannot pick one itself, so try a few.
for ((try = 0; try < 10; try++)); do
	port=$((20000 + RANDOM % 40000))
	cat >"$work/nginx.conf" <<NGINX
user $(id -un) $(id -gn);
worker_processes 1;
pid $work/nginx.pid;
error_log $work/nginx.err;
events { worker_connections 64; }
http {
	access_log off;
	client_body_temp_path $work/body;
	proxy_temp_path $work/proxy;
	fastcgi_temp_path $work/fastcgi;
	uwsgi_temp_path $work/uwsgi;
	scgi_temp_path $work/scgi;
	types { text/html html; text/javascript js; }
	server {
		listen 127.0.0.1:$port;
		root $here;
		location /v1/ { proxy_pass $url; }
	}
}
NGINX
	nginx -c "$work/nginx.conf" -p "$work" -g 'daemon off;' 2>>"$work/nginx.err" &
	nginx_pid=$!
	for ((t = 0; t < 50; t++)); do
		curl -s -o /dev/null "http://127.0.0.1:$port/ids.html" && break 2
		kill -0 "$nginx_pid" 2>/dev/null || break
		sleep 0.1
	done
	kill "$nginx_pid" 2>/dev/null; wait "$nginx_pid" 2>/dev/null
	nginx_pid=
done
if [ -z "$nginx_pid" ]; then
	not_ok "nginx serves the page"
	sed 's/^/# /' "$work/nginx.err"
	echo "1..$n"
	exit 1
fi
ok "nginx serves the page and passes /v1/ to idgen-httpd"

# As root Chromium runs only without its sandbox.  The virtual time
# budget lets the page's fetch calls finish before the DOM is dumped
# (it is virtual: an idle page does not wait for it).
flags=(--headless --disable-gpu --user-data-dir="$work/chromium" --virtual-time-budget=30000)
[ "$(id -u)" -ne 0 ] || flags+=(--no-sandbox)
start=$(date +%s%N)
timeout 120 "$chromium" "${flags[@]}" --dump-dom \
	"http://127.0.0.1:$port/ids.html?worker=$worker" >"$work/dom.html" 2>"$work/chromium.err"
rc=$?
echo "# chromium: exit $rc after $((($(date +%s%N) - start) / 1000000)) ms"
verdict=$(sed -n '/<pre id="verdict">/,/<\/pre>/p' "$work/dom.html" |
	  sed -e 's/.*<pre id="verdict">//' -e 's/<\/pre>.*//')
while IFS= read -r line; do
	case $line in
	"ok - "*) ok "${line#ok - }" ;;
	"not ok - "*) not_ok "${line#not ok - }" ;;
	esac
done <<<"$verdict"
if ! check "the page ran to its end" grep -qx "done" <<<"$verdict"; then
	echo "# the DOM:"; sed 's/^/#   /' "$work/dom.html"
	echo "# chromium's log:"; grep -v -i dbus "$work/chromium.err" | tail -n 20 | sed 's/^/#   /'
fi
echo "1..$n"
exit "$status"
