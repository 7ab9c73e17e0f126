// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * libidgen-client's hosts: each one's health, and which one a try goes
 * to.
 */
#include <stdio.h>

#include "internal.h"

/*
 * Skip h from now on.  After a failed try (soon), look again in 50 ms: a
 * try that timed out on a loaded machine should not keep a good host out
 * for a whole period.  After a failed probe, at the next period.
 */
void idgen_client__host_down(struct idgen_client *c, struct host *h, uint64_t now,
			     const char *why, bool soon)
{
	snprintf(h->why, sizeof(h->why), "%s", why);
	__atomic_store_n(&h->healthy, 0, __ATOMIC_RELAXED);
	if (soon && h->next_probe_ns > now + 50000000ULL && c->health_ns > 50000000ULL)
		h->next_probe_ns = now + 50000000ULL;
}

void idgen_client__host_up(struct host *h)
{
	h->why[0] = '\0';
	__atomic_store_n(&h->healthy, 1, __ATOMIC_RELAXED);
}

static uint64_t next_rand(struct idgen_client *c)
{
	/* xorshift64: the balancing only needs it to spread. */
	c->rng ^= c->rng << 13;
	c->rng ^= c->rng >> 7;
	c->rng ^= c->rng << 17;
	return c->rng;
}

/*
 * The host for a request's next try: of the hosts not tried this round,
 * the healthy ones by the power of two choices on in-flight tries; an
 * unhealthy one only when no healthy one is left, and only while nothing
 * runs on it (no try, no probe): a frozen host gets one connection at a
 * time, not one per call.  -1 when there is no such host.
 */
int idgen_client__pick_host(struct idgen_client *c, struct request *r)
{
	unsigned int cand[IDGEN_CLIENT_MAX_HOSTS], ncand = 0, nsick = 0, nbusy = 0;
	unsigned int sick[IDGEN_CLIENT_MAX_HOSTS], busy[IDGEN_CLIENT_MAX_HOSTS], i, a, b;

	for (i = 0; i < c->nhosts; i++) {
		if (r->tried & (1ULL << i))
			continue;
		if (host_usable(&c->hosts[i]))
			cand[ncand++] = i;
		else if (c->hosts[i].probe || c->hosts[i].in_flight)
			busy[nbusy++] = i;
		else
			sick[nsick++] = i;
	}
	for (i = 0; !ncand && !nsick && i < nbusy; i++) {
		struct reason *re = &r->reasons[busy[i]];
		struct host *h = &c->hosts[busy[i]];

		BUMP(c, hosts_skipped);
		if (!re->text[0])
			snprintf(re->text, sizeof(re->text), "skipped: %s (%s)", h->why,
				 h->probe ? "its probe has not answered" : "a try runs on it");
	}
	if (ncand) {
		/* Each unhealthy host passed over, and why, for the error. */
		for (i = 0; i < nsick + nbusy; i++) {
			unsigned int hi = i < nsick ? sick[i] : busy[i - nsick];
			struct reason *re = &r->reasons[hi];

			BUMP(c, hosts_skipped);
			if (!re->text[0])
				snprintf(re->text, sizeof(re->text), "skipped: %s",
					 c->hosts[hi].why);
		}
		a = cand[next_rand(c) % ncand];
		if (ncand == 1)
			return a;
		do
			b = cand[next_rand(c) % ncand];
		while (b == a);
		return c->hosts[b].in_flight < c->hosts[a].in_flight ? b : a;
	}
	if (nsick)
		return sick[next_rand(c) % nsick];
	return -1;
}
