// SPDX-License-Identifier: GPL-2.0
/*
 * idgend: keep this host's idgen generator leased.
 *
 * In etcd mode it claims a worker number of its region from etcd, renews
 * it, and gives it back on SIGTERM (lease_protocol.c); in standalone mode it uses a
 * fixed number and a state file (standalone.c).  Between renewals it
 * sleeps in one poll() on a signalfd and the module's netlink events: a
 * "fence near" event renews at once, clock events and a reached fence are
 * logged.
 *
 * Exit status: 0 after a clean stop, 1 when it cannot go on (etcd
 * unreachable at start, the device gone, another idgend running), 2 for
 * what a restart cannot mend: a bad configuration, a region or worker the
 * generator's layout lacks, a standalone state file that is bad or
 * missing, a region whose layout record is not this host's layout (or
 * that was cut over to another layout).
 *
 * idgend --cut-over-layout R/W/S changes the region's layout record and
 * exits (layout_cut_over()).
 */
#include <curl/curl.h>
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/signalfd.h>
#include <time.h>
#include <unistd.h>

#include <linux/idgen.h>

#include "idgen_nl.h"
#include "wall_clock.h"
#include "config.h"
#include "device.h"
#include "etcd.h"
#include "layout_protocol.h"
#include "lease_protocol.h"
#include "log.h"
#include "runtime.h"
#include "standalone.h"

#define EXIT_FATAL	1
#define EXIT_CONFIG	2

/* While etcd does not answer, renewals are retried this often. */
#define RETRY_MS	2000
/* Events ask for a renewal at most this often (a fence-near threshold
 * longer than the lease would otherwise ask after every renewal). */
#define EVENT_RENEW_MIN_MS	1000

struct daemon {
	struct config cfg;
	struct device dev;
	struct system_clock clock;
	int sig_fd;
	struct idgen_nl *nl;
	struct etcd *etcd;	/* etcd mode: SIGHUP re-reads its files */
	bool renew_now;
	uint64_t renewed_at;	/* monotonic ms of the last renewal */

	/* One of the two, by mode. */
	struct lease lease;
	struct lease_config lease_cfg;
	char token[RUNTIME_TOKEN_LEN + 1];
	struct standalone sa;
};

static uint64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int setup_signals(struct daemon *d)
{
	sigset_t set;

	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGHUP);
	if (sigprocmask(SIG_BLOCK, &set, NULL))
		return -errno;
	d->sig_fd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
	if (d->sig_fd < 0)
		return -errno;
	d->clock.stop_fd = d->sig_fd;
	return 0;
}

/* True when asked to stop; SIGHUP is logged and otherwise ignored. */
static bool read_signals(struct daemon *d)
{
	struct signalfd_siginfo si;
	bool stop = false;

	while (read(d->sig_fd, &si, sizeof(si)) == sizeof(si)) {
		if (si.ssi_signo == SIGHUP) {
			if (d->etcd) {
				log_info("SIGHUP: reading etcd's TLS files and password "
					 "file again; the rest of the configuration is "
					 "read at start only");
				etcd_reload(d->etcd);
			} else {
				log_info("SIGHUP: the configuration is read at start "
					 "only; restart idgend to apply changes");
			}
			continue;
		}
		log_info("%s: stopping", strsignal(si.ssi_signo));
		stop = true;
	}
	return stop;
}

static int on_event(const struct idgen_nl_event *ev, void *ctx)
{
	struct daemon *d = ctx;
	const char *name = idgen_nl_event_name(ev->event);

	switch (ev->event) {
	case IDGEN_EVENT_FENCE_NEAR:
		if (mono_ms() - d->renewed_at < EVENT_RENEW_MIN_MS)
			break;
		log_warn("the generator nears its fence, ms %" PRIu64 ": renewing now",
			 ev->valid_until_ms);
		d->renew_now = true;
		break;
	case IDGEN_EVENT_FENCE_REACHED:
		log_alert("the generator reached its fence, ms %" PRIu64 ", and mints "
			  "nothing until the lease is renewed", ev->valid_until_ms);
		d->renew_now = true;
		break;
	case IDGEN_EVENT_CLOCK_STEP_BACK:
	case IDGEN_EVENT_CLOCK_STEP_FWD:
		log_warn("the wall clock stepped %s by %" PRId64 " ms%s",
			 ev->step_ms < 0 ? "back" : "forward",
			 ev->step_ms < 0 ? -ev->step_ms : ev->step_ms,
			 ev->flags & IDGEN_STATE_CLOCK_HELD ?
			 "; the generator holds to the raw clock until it is adopted" : "");
		break;
	case IDGEN_EVENT_CLOCK_ADOPTED:
		log_info("the generator adopted a forward clock step of %" PRId64 " ms",
			 ev->step_ms);
		break;
	case IDGEN_EVENT_LEAD_EXCEEDED:
		log_warn("readers outran the generator's ceiling: it refused to run "
			 "further ahead of the clock");
		break;
	default:
		/* Lease events are our own doing, and logged where done. */
		if (!name)
			log_info("generator event %" PRIu32, ev->event);
		break;
	}
	return 0;
}

/*
 * Wait until the deadline (monotonic ms), a signal or a netlink event that
 * asks for a renewal.  Returns true when asked to stop.
 */
static bool wait_until(struct daemon *d, uint64_t deadline)
{
	struct pollfd pfd[2];
	int n, ret;

	d->renew_now = false;
	for (;;) {
		uint64_t now = mono_ms();

		if (now >= deadline || d->renew_now)
			return false;
		pfd[0].fd = d->sig_fd;
		pfd[0].events = POLLIN;
		n = 1;
		if (d->nl) {
			pfd[1].fd = idgen_nl_fd(d->nl);
			pfd[1].events = POLLIN;
			n = 2;
		}
		ret = poll(pfd, n, (int)(deadline - now));
		if (ret < 0 && errno != EINTR) {
			log_err("poll: %s", strerror(errno));
			return true;
		}
		if (ret <= 0)
			continue;
		if ((pfd[0].revents & POLLIN) && read_signals(d))
			return true;
		if (n == 2 && pfd[1].revents) {
			ret = idgen_nl_dispatch(d->nl, on_event, d);
			if (ret < 0 && ret != -EAGAIN) {
				log_err("netlink events: %s%s", strerror(-ret),
					ret == -ENODEV ? " (the module was unloaded)" : "");
				idgen_nl_close(d->nl);
				d->nl = NULL;
			}
		}
	}
}

/*
 * "Fence near" should mean that renewals have been failing, not that one
 * is due: the module is told to warn once two renewal periods are missed
 * (never earlier than one), so a healthy host sees no such event.
 */
static uint32_t fence_near_ms(const struct config *cfg)
{
	uint64_t near = cfg->lease_ms - 2 * cfg->renew_ms;

	if (near < cfg->renew_ms)
		near = cfg->renew_ms;
	return near > 3600000 ? 3600000 : near;
}

static void subscribe(struct daemon *d)
{
	uint32_t near = fence_near_ms(&d->cfg);

	if (idgen_sim_is_spec(d->cfg.device))
		return;		/* no module to listen to */
	d->nl = idgen_nl_subscribe();
	if (!d->nl) {
		log_warn("not watching the generator's netlink events; renewals "
			 "follow the timer only");
		return;
	}
	if (idgen_nl_set_fence_near(near))
		log_warn("cannot set the module's fence-near threshold to %" PRIu32
			 " ms; a fence-near event may come while renewals are well",
			 near);
	else
		log_info("the module warns %" PRIu32 " ms before its fence", near);
}

static int run_standalone(struct daemon *d)
{
	struct standalone *s = &d->sa;
	int err;

	s->region = d->cfg.region;
	s->worker = d->cfg.worker;
	s->lease_ms = d->cfg.lease_ms;
	s->state_file = d->cfg.state_file;
	s->fresh_state = d->cfg.fresh_state;
	s->dev = &d->dev;
	s->clock = &system_clock_ops;
	s->clock_ctx = &d->clock;

	err = standalone_start(s);
	if (err == -EINTR)
		return 0;
	/* A bad number or state file: restarting will not mend it. */
	if (err == -ERANGE || err == -EBADMSG || err == -ENOENT)
		return EXIT_CONFIG;
	if (err)
		return EXIT_FATAL;
	for (uint64_t next = mono_ms() + d->cfg.renew_ms;;) {
		if (wait_until(d, next))
			break;
		d->renewed_at = mono_ms();
		if (standalone_renew(s))
			next = mono_ms() + RETRY_MS;
		else
			next = mono_ms() + d->cfg.renew_ms;
	}
	return standalone_stop(s) ? EXIT_FATAL : 0;
}

static const char *start_why(int err)
{
	return err == -EPROTO ? "is answering garbage" :
	       err == -EACCES ? "refuses this host" : "is unreachable";
}

/*
 * Claim or adopt at start, retrying for a while an etcd that cannot be
 * reached or whose answers make no sense (a proxy in the way, a member
 * restarting): either may be over in a moment.
 */
static int etcd_start(struct daemon *d)
{
	uint64_t give_up = mono_ms() + d->cfg.start_timeout_ms;
	struct lease *l = &d->lease;
	bool said = false;
	int err;

	for (;;) {
		err = lease_adopt(l);
		if (!err && !l->held)
			err = lease_claim(l);
		if (!err)
			return 0;
		if (err == -EINTR)
			return err;
		if (err == -EBUSY || err == -EAGAIN)
			return 0;	/* the main loop retries */
		if (err == -EMEDIUMTYPE)
			return err;
		/*
		 * -EACCES: TLS or etcd refused this host (etcd_http.h); a
		 * role may be granted or a certificate rotated in a moment,
		 * and nothing was claimed.
		 */
		if (err != -ECONNREFUSED && err != -ETIMEDOUT && err != -EPROTO &&
		    err != -EACCES)
			return err;
		if (mono_ms() >= give_up) {
			log_err("etcd %s (%s); giving up after %" PRIu64
				" ms (start_timeout_ms)", start_why(err),
				l->store->error(l->store_ctx),
				d->cfg.start_timeout_ms);
			return err;
		}
		if (!said) {
			log_warn("etcd %s (%s); nothing claimed; retrying every %d ms "
				 "for up to %" PRIu64 " ms (start_timeout_ms)",
				 start_why(err), l->store->error(l->store_ctx), RETRY_MS,
				 d->cfg.start_timeout_ms);
			said = true;
		}
		if (wait_until(d, mono_ms() + RETRY_MS))
			return -EINTR;
	}
}

static struct etcd *etcd_open(const struct config *cfg)
{
	const struct etcd_security sec = {
		.ca_file = cfg->ca_file,
		.cert_file = cfg->cert_file,
		.key_file = cfg->key_file,
		.user = cfg->user,
		.password_file = cfg->password_file,
	};
	char err[512];
	struct etcd *e;

	if (curl_global_init(CURL_GLOBAL_DEFAULT)) {
		log_err("cannot initialise libcurl");
		return NULL;
	}
	e = etcd_new((const char *const *)cfg->endpoints, cfg->nr_endpoints,
		     cfg->prefix, cfg->timeout_ms);
	if (!e) {
		log_err("out of memory");
		curl_global_cleanup();
		return NULL;
	}
	if (etcd_secure(e, &sec, err, sizeof(err))) {
		log_err("%s; nothing claimed", err);
		etcd_free(e);
		curl_global_cleanup();
		return NULL;
	}
	return e;
}

/* idgend --cut-over-layout R/W/S: change the region's layout record. */
static int run_cut_over(struct daemon *d)
{
	struct lease_config *lc = &d->lease_cfg;
	struct etcd *e;
	int err;

	e = etcd_open(&d->cfg);
	if (!e)
		return EXIT_FATAL;
	lc->region = d->cfg.region;
	lc->layout = d->cfg.layout;
	lc->lease_ms = d->cfg.lease_ms;
	err = layout_cut_over(lc, &etcd_store_ops, e, &system_clock_ops, &d->clock,
			      &d->cfg.cut_over_layout, d->cfg.force);
	etcd_free(e);
	curl_global_cleanup();
	return !err ? 0 : err == -EINVAL || err == -ERANGE ? EXIT_CONFIG : EXIT_FATAL;
}

static int run_etcd(struct daemon *d)
{
	struct lease_config *lc = &d->lease_cfg;
	struct lease *l = &d->lease;
	char boot_id[RUNTIME_BOOT_ID_LEN + 1];
	struct etcd *e;
	int err, status = 0;

	err = runtime_boot_id(boot_id);
	if (!err)
		err = runtime_token(d->cfg.runtime_dir, boot_id, d->token);
	if (err)
		return err == -EBADMSG ? EXIT_CONFIG : EXIT_FATAL;
	e = etcd_open(&d->cfg);
	if (!e)
		return EXIT_FATAL;
	d->etcd = e;

	lc->owner = d->cfg.owner;
	lc->token = d->token;
	lc->layout = d->cfg.layout;
	lc->region = d->cfg.region;
	lc->workers = 1U << lc->layout.worker_bits;
	lc->lease_ms = d->cfg.lease_ms;
	lc->floor_wait_ms = 1000;
	lc->require_sync = d->cfg.require_clock_sync;
	lc->claim_attempts = 8;
	l->cfg = lc;
	l->store = &etcd_store_ops;
	l->store_ctx = e;
	l->dev = &d->dev;
	l->clock = &system_clock_ops;
	l->clock_ctx = &d->clock;
	if (getrandom(&l->rng, sizeof(l->rng), 0) != sizeof(l->rng))
		l->rng = mono_ms() ^ ((uint64_t)getpid() << 32);

	log_info("etcd mode: owner '%s', region %" PRIu32 " of layout %s (%" PRIu32
		 " numbers), lease %" PRIu64 " ms renewed every %" PRIu64 " ms, %u "
		 "endpoint(s) starting with %s", lc->owner, lc->region,
		 d->cfg.layout_name, lc->workers,
		 lc->lease_ms, d->cfg.renew_ms, d->cfg.nr_endpoints,
		 d->cfg.endpoints[0]);

	err = etcd_start(d);
	if (err == -EINTR)
		goto out;
	if (err) {
		status = err == -EMEDIUMTYPE ? EXIT_CONFIG : EXIT_FATAL;
		goto out;
	}
	/* An adopted lease is renewed at once: its fence may be close. */
	for (uint64_t next = l->held ? 0 : mono_ms() + d->cfg.claim_retry_ms;;) {
		if (wait_until(d, next))
			break;
		d->renewed_at = mono_ms();
		if (l->held) {
			err = lease_renew(l);
			if (err == -EMEDIUMTYPE) {
				status = EXIT_CONFIG;
				break;
			}
			if (!err)
				next = mono_ms() + d->cfg.renew_ms;
			else if (err == -ESTALE)
				next = mono_ms() + d->cfg.claim_retry_ms;
			else
				next = mono_ms() + RETRY_MS;
		} else {
			err = lease_claim(l);
			if (err == -EINTR)
				break;
			if (err == -EMEDIUMTYPE) {
				status = EXIT_CONFIG;
				break;
			}
			next = mono_ms() + (err ? d->cfg.claim_retry_ms : d->cfg.renew_ms);
		}
	}
	if (l->held && lease_release(l))
		status = EXIT_FATAL;
out:
	d->etcd = NULL;
	etcd_free(e);
	curl_global_cleanup();
	return status;
}

int main(int argc, char *argv[])
{
	struct daemon d;
	int ret, status, lock_fd;

	memset(&d, 0, sizeof(d));
	log_init("idgend");
	ret = config_load(&d.cfg, argc, argv);
	if (ret) {
		config_free(&d.cfg);
		return ret > 0 ? 0 : EXIT_CONFIG;
	}
	if (d.cfg.check_only) {
		printf("# %s: configuration is valid\n", d.cfg.path ? d.cfg.path : "defaults");
		config_print(&d.cfg, stdout);
		config_free(&d.cfg);
		return 0;
	}
	if (d.cfg.cut_over) {
		status = run_cut_over(&d);
		config_free(&d.cfg);
		return status;
	}
	ret = setup_signals(&d);
	if (ret) {
		log_err("signals: %s", strerror(-ret));
		return EXIT_FATAL;
	}
	lock_fd = runtime_lock(d.cfg.runtime_dir);
	if (lock_fd < 0) {
		config_free(&d.cfg);
		return EXIT_FATAL;
	}
	ret = device_open(&d.dev, d.cfg.device, &d.cfg.layout);
	if (ret) {
		config_free(&d.cfg);
		return EXIT_FATAL;
	}
	subscribe(&d);
	if (d.cfg.mode == MODE_ETCD)
		status = run_etcd(&d);
	else
		status = run_standalone(&d);
	if (d.nl)
		idgen_nl_close(d.nl);
	device_close(&d.dev);
	close(d.sig_fd);
	close(lock_fd);
	log_info("stopped");
	config_free(&d.cfg);
	return status;
}
