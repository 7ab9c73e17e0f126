// SPDX-License-Identifier: GPL-2.0
/*
 * idgen-httpd: the host's ID service for callers on other machines, over
 * /dev/idgen (Documentation/design.md section 9, idgen-httpd(8)).  It mints
 * only through the generator, which enforces lease and fence; it decodes
 * locally; it holds no lease logic of its own.
 *
 * The main thread reads the configuration, opens the generator, starts a
 * server per listen address and waits for SIGTERM or SIGINT; then it
 * stops accepting, lets the requests in flight finish and exits 0.
 * SIGHUP reloads the TLS files (tls.h) for the connections from then on.
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "api.h"
#include "lane.h"
#include "config.h"
#include "credential.h"
#include "decimal.h"
#include "grpc.h"
#include "idgen.h"
#include "log.h"
#include "metrics.h"
#include "minter.h"
#include "quota.h"
#include "server.h"
#include "tls.h"

/* How long a stop waits for the requests in flight. */
#define DRAIN_MS	5000

/*
 * The layout the generator mints with must be the one the decode table
 * has in force now: else every decoded region, worker, sequence and
 * layout_version answered would be wrong (a module loaded with other
 * widths, or a layouts file not the module's).  0, or 1 after a log line
 * naming both.
 */
static int check_layout(struct minter *m, const struct idgen_layouts *layouts)
{
	struct idgen_layout dev;
	const struct idgen_layout *l;
	struct minter_state st;
	int ret;

	ret = m->ops->layout(m->ctx, &dev);
	if (!ret)
		ret = m->ops->state(m->ctx, &st);
	if (ret) {
		log_err("%s: cannot read the generator's layout: %s", m->name,
			strerror(-ret));
		return 1;
	}
	l = idgen_layout_at(layouts, st.now_ms > st.wall_ms ? st.now_ms : st.wall_ms);
	if (l->region_bits == dev.region_bits && l->worker_bits == dev.worker_bits &&
	    l->seq_bits == dev.seq_bits)
		return 0;
	log_err("%s mints with layout %u/%u/%u (region/worker/sequence bits), but "
		"the decode table has layout version %u (%u/%u/%u) in force now: "
		"give the layouts file the module was loaded with (--layouts)",
		m->name, dev.region_bits, dev.worker_bits, dev.seq_bits, l->version,
		l->region_bits, l->worker_bits, l->seq_bits);
	return 1;
}

/*
 * The public-ID keys of public_keys, public_current's version current:
 * 0 with *out NULL when none is configured; 0; or 1 after saying what is
 * wrong (a key file readable by others, say: libidgen's message).
 */
static int load_keys(const struct httpd_config *cfg, struct idgen_keyring **out)
{
	struct idgen_keyring *kr;
	char err[512], *path;
	uint64_t version;
	unsigned int i;
	int ret;

	*out = NULL;
	if (!cfg->nr_public_keys) {
		if (*cfg->public_current) {
			fprintf(stderr, "idgen-httpd: public_current: %s is given, but no "
				"public_keys\n", cfg->public_current);
			return 1;
		}
		return 0;
	}
	ret = idgen_keyring_new(&kr);
	if (ret) {
		fprintf(stderr, "idgen-httpd: public_keys: %s\n", strerror(-ret));
		return 1;
	}
	for (i = 0; i < cfg->nr_public_keys; i++) {
		/* A bare name: a systemd credential (credential.h). */
		path = idgen_credential_path(cfg->public_keys[i]);
		if (!path)
			snprintf(err, sizeof(err), "%s: out of memory", cfg->public_keys[i]);
		ret = !path || idgen_keyring_load(kr, path, err, sizeof(err));
		free(path);
		if (ret) {
			fprintf(stderr, "idgen-httpd: public_keys: %s\n", err);
			idgen_keyring_free(kr);
			return 1;
		}
	}
	if (*cfg->public_current) {
		if (idgen_decimal_str(cfg->public_current, 0, UINT32_MAX, &version)) {
			fprintf(stderr, "idgen-httpd: public_current: '%.64s' is not a key "
				"version (a decimal number up to %u)\n", cfg->public_current,
				UINT32_MAX);
			idgen_keyring_free(kr);
			return 1;
		}
		if (idgen_keyring_set_current(kr, (uint32_t)version)) {
			fprintf(stderr, "idgen-httpd: public_current: no file of public_keys "
				"holds key version %" PRIu64 "\n", version);
			idgen_keyring_free(kr);
			return 1;
		}
	}
	*out = kr;
	return 0;
}

/*
 * The TLS files of cfg, checked as a set: 0 with *f filled (f->cert NULL:
 * no TLS), or 1 after saying what is missing.
 */
static int tls_files(const struct httpd_config *cfg, struct tls_files *f)
{
	memset(f, 0, sizeof(*f));
	if (!*cfg->tls_cert != !*cfg->tls_key) {
		fprintf(stderr, "idgen-httpd: %s is given without %s: TLS takes both\n",
			*cfg->tls_cert ? "tls_cert" : "tls_key",
			*cfg->tls_cert ? "tls_key" : "tls_cert");
		return 1;
	}
	if (!*cfg->tls_cert && (*cfg->tls_client_ca || *cfg->caller_map)) {
		fprintf(stderr, "idgen-httpd: %s is given without tls_cert and tls_key: "
			"client certificates are asked for only over TLS\n",
			*cfg->tls_client_ca ? "tls_client_ca" : "caller_map");
		return 1;
	}
	if (*cfg->caller_map && !*cfg->tls_client_ca) {
		fprintf(stderr, "idgen-httpd: caller_map is given without tls_client_ca: "
			"without client certificates there is no identity to map\n");
		return 1;
	}
	if (!*cfg->tls_cert)
		return 0;
	*f = (struct tls_files){
		.cert = cfg->tls_cert,
		.key = cfg->tls_key,
		.client_ca = *cfg->tls_client_ca ? cfg->tls_client_ca : NULL,
		.caller_map = *cfg->caller_map ? cfg->caller_map : NULL,
		.unmapped = cfg->tls_unmapped_refuse ? TLS_UNMAPPED_REFUSE :
			    TLS_UNMAPPED_OTHER,
		.callers = cfg->callers,
		.nr_callers = cfg->nr_callers,
	};
	return 0;
}

/*
 * Every listener may hold max_connections + SERVER_REFUSE_ROOM sockets,
 * and each of its threads an epoll and a wake-up descriptor.  systemd's
 * default soft limit, 1024, is below the default max_connections' need:
 * the soft limit is raised to it, up to the hard limit, and a limit still
 * short is said, for accept() would fail (EMFILE) before max_connections.
 */
static void raise_nofile(const struct httpd_config *cfg)
{
	long cores = sysconf(_SC_NPROCESSORS_ONLN);
	uint64_t threads = cfg->threads ? cfg->threads : cores > 0 ? cores : 1;
	uint64_t need = (cfg->nr_listen + cfg->nr_grpc_listen) * ((uint64_t)cfg->max_connections +
					  SERVER_REFUSE_ROOM + 2 * threads + 1) + 64;
	struct rlimit r, raised;

	if (getrlimit(RLIMIT_NOFILE, &r) || r.rlim_cur >= need)
		return;
	raised = r;
	raised.rlim_cur = r.rlim_max != RLIM_INFINITY && r.rlim_max < need ?
			  r.rlim_max : need;
	if (raised.rlim_cur > r.rlim_cur && !setrlimit(RLIMIT_NOFILE, &raised))
		r.rlim_cur = raised.rlim_cur;
	if (r.rlim_cur < need)
		log_warn("open files: %llu allowed (RLIMIT_NOFILE), %" PRIu64 " needed "
			 "for %u listen address(es) of max_connections %u: past it "
			 "connections are not accepted (raise LimitNOFILE=, or lower "
			 "max_connections)", (unsigned long long)r.rlim_cur, need,
			 cfg->nr_listen, cfg->max_connections);
}

int main(int argc, char *argv[])
{
	struct server *servers[HTTPD_MAX_LISTEN] = { 0 };
	struct grpc_server *grpc[HTTPD_MAX_LISTEN] = { 0 };
	struct idgen_layouts *layouts = NULL;
	struct idgen_keyring *keyring = NULL;
	struct tls_files tlsf;
	struct tls *tls = NULL;
	struct httpd_config cfg;
	struct metrics metrics;
	struct server_limits lim;
	struct grpc_limits glim;
	struct minter minter;
	struct quota quota;
	struct api api;
	char err[512];
	unsigned int i;
	sigset_t stop;
	int ret, sig;

	log_init("idgen-httpd");
	ret = httpd_config_load(&cfg, argc, argv);
	if (ret) {
		httpd_config_free(&cfg);
		return ret < 0 ? 1 : 0;
	}
	if (*cfg.layouts && idgen_layouts_load(cfg.layouts, &layouts, err, sizeof(err))) {
		fprintf(stderr, "idgen-httpd: layouts: %s\n", err);
		httpd_config_free(&cfg);
		return 1;
	}
	if (load_keys(&cfg, &keyring)) {
		idgen_layouts_free(layouts);
		httpd_config_free(&cfg);
		return 1;
	}
	if (tls_files(&cfg, &tlsf)) {
		idgen_keyring_free(keyring);
		idgen_layouts_free(layouts);
		httpd_config_free(&cfg);
		return 1;
	}
	if (cfg.check_only) {
		httpd_config_print(&cfg, stdout);
		idgen_keyring_free(keyring);
		idgen_layouts_free(layouts);
		httpd_config_free(&cfg);
		return 0;
	}

	/* Every thread started from here on leaves these to sigwait(). */
	sigemptyset(&stop);
	sigaddset(&stop, SIGTERM);
	sigaddset(&stop, SIGINT);
	/*
	 * A reload: TLS's files.  Without TLS it reloads nothing, but stops
	 * nothing either (systemctl reload would stop it for good: a stop by
	 * SIGHUP is a clean one to Restart=on-failure).
	 */
	sigaddset(&stop, SIGHUP);
	pthread_sigmask(SIG_BLOCK, &stop, NULL);
	signal(SIGPIPE, SIG_IGN);

	ret = 1;
	if (minter_open(&minter, cfg.device, cfg.sim_lease_ms, err, sizeof(err))) {
		log_err("%s", err);
		goto err_minter;
	}
	if (minter.simulated)
		log_warn("minting through a SIMULATED generator (%s: region 0, worker "
			 "%u, in this process only): for tests, never for IDs that are "
			 "kept", minter.name, minter.sim_worker);
	else
		log_info("minting through %s", minter.name);
	if (check_layout(&minter, layouts))
		goto err_layout;

	if (metrics_init(&metrics, cfg.callers, cfg.nr_callers) ||
	    quota_init(&quota, cfg.callers, cfg.nr_callers)) {
		log_err("out of memory");
		goto err_metrics;
	}
	for (i = 0; i < cfg.nr_quotas; i++) {
		const struct httpd_quota *q = &cfg.quotas[i];

		quota_set(&quota, quota_caller_index(&quota, q->caller), q->rate_milli,
			  q->burst);
		log_info("quota of %s: %" PRIu64 ".%03" PRIu64 " IDs/s, bursts of %"
			 PRIu64, q->caller, q->rate_milli / 1000, q->rate_milli % 1000,
			 q->burst);
	}
	if (tlsf.cert) {
		char what[1024];

		if (tls_open(&tls, &tlsf, &metrics, err, sizeof(err))) {
			log_err("TLS: %s", err);
			goto err_tls;
		}
		struct tls_ctx *ctx = tls_current(tls);

		tls_ctx_describe(ctx, what, sizeof(what));
		tls_ctx_put(ctx);
		log_info("TLS on every listener: %s", what);
	}
	api = (struct api){
		.minter = &minter,
		.metrics = &metrics,
		.quota = cfg.nr_quotas ? &quota : NULL,
		.layouts = layouts,
		.keyring = keyring,
		.tls = tls,
		.ready = {
			.margin_ms = cfg.ready_margin_ms,
			.max_ahead_ms = cfg.ready_max_ahead_ms,
			.check_clock = cfg.clock_check,
			.max_offset_us = cfg.clock_max_offset_us,
		},
	};
	api.lane = lane_start(&minter);
	if (!api.lane) {
		log_err("cannot start the thread that mints large requests");
		goto err_lane;
	}
	if (!cfg.clock_check)
		log_warn("clock_check = no: /readyz does not ask whether the clock is "
			 "synchronised");
	lim = (struct server_limits){
		.threads = cfg.threads,
		.max_connections = cfg.max_connections,
		.max_connections_per_ip = cfg.max_connections_per_ip,
		.ipv6_prefix_per_ip = cfg.ipv6_prefix_per_ip,
		.timeout_s = cfg.timeout_s,
		.handshake_timeout_s = cfg.tls_handshake_timeout_s,
	};
	raise_nofile(&cfg);
	ret = 0;
	for (i = 0; i < cfg.nr_listen; i++) {
		servers[i] = server_start(cfg.listen[i], &lim, &api);
		if (!servers[i]) {
			ret = 1;
			break;
		}
		log_info("listening on %s (port %u)", cfg.listen[i],
			 server_port(servers[i]));
	}
	glim = (struct grpc_limits){
		.max_connections = cfg.max_connections,
		.max_connections_per_ip = cfg.max_connections_per_ip,
		.ipv6_prefix_per_ip = cfg.ipv6_prefix_per_ip,
		.max_streams = cfg.grpc_max_streams,
		.idle_timeout_s = cfg.grpc_idle_timeout_s,
		.timeout_s = cfg.timeout_s,
		.handshake_timeout_s = cfg.tls_handshake_timeout_s,
	};
	for (i = 0; !ret && i < cfg.nr_grpc_listen; i++) {
		grpc[i] = grpc_server_start(cfg.grpc_listen[i], &glim, &api);
		if (!grpc[i]) {
			ret = 1;
			break;
		}
		log_info("serving gRPC (idgen.v1.IdGen, %s) on %s (port %u)",
			 tls ? "TLS" : "h2c", cfg.grpc_listen[i], grpc_server_port(grpc[i]));
	}
	while (!ret) {
		do {
			ret = sigwait(&stop, &sig);
		} while (ret == EINTR);
		if (sig == SIGHUP) {
			if (tls)
				tls_reload(tls);
			else
				log_info("SIGHUP: no TLS files to reload (no tls_cert), "
					 "nothing else is reloaded");
			continue;
		}
		log_info("%s: stopping once the requests in flight are answered",
			 strsignal(sig));
		break;
	}
	ret = ret > 0 ? 1 : 0;
	/* Both faces drain at once. */
	grpc_servers_stop(grpc, cfg.nr_grpc_listen, DRAIN_MS);
	servers_stop(servers, cfg.nr_listen, DRAIN_MS);
	grpc_servers_join(grpc, cfg.nr_grpc_listen);
	lane_free(api.lane);
	/* After the lane: it may have held calls of theirs. */
	for (i = 0; i < cfg.nr_grpc_listen; i++)
		grpc_server_free(grpc[i]);
err_lane:
	tls_close(tls);
err_tls:
	quota_free(&quota);
err_metrics:
	metrics_free(&metrics);
err_layout:
	minter_close(&minter);
err_minter:
	idgen_keyring_free(keyring);
	idgen_layouts_free(layouts);
	httpd_config_free(&cfg);
	return ret;
}
