// SPDX-License-Identifier: GPL-2.0
/*
 * etcd_test: helper/idgend/etcd.c against a real etcd ("real <endpoint>
 * <fake base url> <etcd_fill.py>") or against tests/idgend/fake_etcd.py
 * ("fake <base url>"), printing TAP.  run.sh builds and runs it.
 *
 * Real mode writes under /etcdtest<pid> and puts foreign keys and values
 * with etcdctl, so that they come from somewhere other than the code under
 * test; it fills a large region with etcd_fill.py, and reaches the member
 * also through fake_etcd.py's proxy (<base url>/via/<port>/<mode>).  Fake
 * mode reaches each canned scenario of fake_etcd.py as the endpoint
 * <base url>/<scenario>.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>

#include "etcd.h"

static int tests, failures;

static bool ok(bool cond, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static bool ok(bool cond, const char *fmt, ...)
{
	va_list ap;

	printf("%s %d - ", cond ? "ok" : "not ok", ++tests);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
	if (!cond)
		failures++;
	return cond;
}

static void diag(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static void diag(const char *fmt, ...)
{
	va_list ap;

	printf("# ");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
}

static const char *errname(int ret)
{
	static char buf[32];

	switch (ret) {
	case 0: return "0";
	case -ECANCELED: return "-ECANCELED";
	case -ETIMEDOUT: return "-ETIMEDOUT";
	case -ECONNREFUSED: return "-ECONNREFUSED";
	case -EPROTO: return "-EPROTO";
	case -ENOMEM: return "-ENOMEM";
	case -EINVAL: return "-EINVAL";
	}
	snprintf(buf, sizeof(buf), "%d", ret);
	return buf;
}

static const char *err(struct etcd *e)
{
	return etcd_store_ops.error(e);
}

static struct etcd *client(unsigned int n, const char *const *eps,
			   const char *prefix, unsigned int timeout_ms)
{
	struct etcd *e = etcd_new(eps, n, prefix, timeout_ms);

	if (!e) {
		printf("Bail out! etcd_new failed\n");
		exit(1);
	}
	return e;
}

static struct etcd *client1(const char *ep, const char *prefix,
			    unsigned int timeout_ms)
{
	return client(1, &ep, prefix, timeout_ms);
}

/* A write without the layout compare, as another host's token. */
static int cas_(struct etcd *e, uint32_t region, uint32_t worker,
		int64_t expect_rev, const char *owner, uint64_t until,
		int64_t *new_rev, struct store_record *now)
{
	struct store_value v = {
		.owner = owner, .token = "0123456789abcdef0123456789abcdef",
		.valid_until_ms = until,
	};

	return etcd_store_ops.cas(e, region, worker, expect_rev,
				  STORE_ANY_LAYOUT, &v, new_rev, now);
}

static long long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

/* Output records as a successful call could leave them. */
static void junk(struct store_record *r, uint32_t n)
{
	uint32_t i;

	for (i = 0; i < n; i++) {
		memset(&r[i], 0, sizeof(r[i]));
		r[i].worker = 77;
		r[i].valid = true;
		r[i].mod_revision = 42;
		strcpy(r[i].owner, "junk");
		r[i].valid_until_ms = 42;
	}
}

/* After a failure: the record reads as held by someone unknown. */
static bool unknown(const struct store_record *r, uint32_t worker)
{
	return r->worker == worker && r->exists && !r->valid &&
	       !r->owner[0] && !r->valid_until_ms;
}

static bool all_unknown(const struct store_record *r, uint32_t n)
{
	uint32_t i;

	for (i = 0; i < n; i++)
		if (!unknown(&r[i], i))
			return false;
	return true;
}

static bool absent(const struct store_record *r, uint32_t worker)
{
	return r->worker == worker && !r->exists && !r->valid &&
	       !r->mod_revision && !r->owner[0] && !r->valid_until_ms;
}

static bool foreign(const struct store_record *r, uint32_t worker)
{
	return r->worker == worker && r->exists && !r->valid &&
	       !r->owner[0] && !r->valid_until_ms;
}

static bool ours(const struct store_record *r, uint32_t worker,
		 const char *owner, uint64_t until, int64_t rev)
{
	return r->worker == worker && r->exists && r->valid &&
	       !strcmp(r->owner, owner) && r->valid_until_ms == until &&
	       (rev < 0 || r->mod_revision == rev);
}

static void show(const struct store_record *r)
{
	diag("rec w=%" PRIu32 " exists=%d valid=%d rev=%" PRId64
	     " owner='%s' until=%" PRIu64, r->worker, r->exists, r->valid,
	     r->mod_revision, r->owner, r->valid_until_ms);
}

static bool has(struct etcd *e, const char *s)
{
	return strstr(err(e), s) != NULL;
}

/* --- against a real etcd ------------------------------------------------- */

static bool etcdctl(const char *ep, const char *cmd, const char *key,
		    const char *value)
{
	char arg[512];
	pid_t pid;
	int st;

	snprintf(arg, sizeof(arg), "--endpoints=%s", ep);
	fflush(stdout);
	pid = fork();
	if (pid < 0)
		return false;
	if (!pid) {
		if (!freopen("/dev/null", "w", stdout))
			_exit(126);
		setenv("ETCDCTL_API", "3", 1);
		if (value)
			execlp("etcdctl", "etcdctl", arg, cmd, "--", key, value,
			       (char *)NULL);
		else
			execlp("etcdctl", "etcdctl", arg, cmd, "--", key,
			       (char *)NULL);
		_exit(127);
	}
	return waitpid(pid, &st, 0) == pid && WIFEXITED(st) &&
	       !WEXITSTATUS(st);
}

/* The owner token and the layout record, against the real etcd. */
static void real_token_layout(const char *ep, const char *prefix)
{
	struct store_value v = {
		.owner = "tok", .token = "00112233445566778899aabbccddeeff",
		.nonce = "0123456789abcdef", .valid_until_ms = 77,
	};
	struct store_layout want = { .region_bits = 3, .worker_bits = 7,
				     .seq_bits = 12 }, got;
	struct store_record r, now;
	char key[128];
	int64_t lrev, lrev2, rev, rev2, at, wrev0 = 0, wrev;
	struct store_width w2;
	uint64_t max_until;
	uint32_t garbled;
	struct etcd *e = client1(ep, prefix, 3000);
	int ret;

	ret = etcd_store_ops.width_get(e, &w2);
	ok(!ret && !w2.exists, "width_get of a prefix without one: absent (%s)",
	   errname(ret));
	ret = etcd_store_ops.width_create(e, 3, &wrev0);
	ok(!ret && wrev0 > 0, "width_create makes it (%s)", errname(ret));
	wrev = wrev0;
	ret = etcd_store_ops.layout_get(e, 5, &got);
	ok(!ret && !got.exists, "layout_get of a region without one: absent (%s)",
	   errname(ret));
	ret = etcd_store_ops.layout_cas(e, 5, 0, 0, 0, &want, &lrev);
	ok(!ret && lrev > 0, "layout_cas expect 0 creates it (%s)", errname(ret));
	want.worker_bits = 10;
	want.seq_bits = 9;
	ret = etcd_store_ops.layout_cas(e, 5, 0, 0, 0, &want, &rev);
	ok(ret == -ECANCELED, "a second create-if-absent fails (%s)", errname(ret));
	ret = etcd_store_ops.layout_get(e, 5, &got);
	ok(!ret && got.exists && got.valid && got.mod_revision == lrev &&
	   got.region_bits == 3 && got.worker_bits == 7 && got.seq_bits == 12 &&
	   !got.from_ms, "layout_get reads back 3/7/12 from ms 0 (%s)",
	   errname(ret));

	ret = etcd_store_ops.cas(e, 5, 1, 0, lrev, &v, &rev, NULL);
	ok(!ret, "cas with the layout's revision writes (%s)", errname(ret));
	ret = etcd_store_ops.get(e, 5, 1, &r);
	ok(!ret && r.valid && !strcmp(r.owner, "tok") &&
	   !strcmp(r.token, v.token) && !strcmp(r.nonce, v.nonce) &&
	   r.valid_until_ms == 77,
	   "the record carries owner, token and write nonce (%s '%s' '%s')",
	   errname(ret), r.token, r.nonce);

	/* The cut-over's write: fenced by the worker records. */
	ret = etcd_store_ops.region_scan(e, 5, &max_until, &garbled, &at);
	ok(!ret && max_until == 77 && !garbled && at >= rev,
	   "region_scan: the highest valid_until, at a revision (%s)",
	   errname(ret));
	v.valid_until_ms = 99;
	ret = etcd_store_ops.cas(e, 5, 1, rev, lrev, &v, &rev2, NULL);
	want.from_ms = 77;
	ret = ret ?: etcd_store_ops.layout_cas(e, 5, lrev, at, wrev, &want, &lrev2);
	ok(ret == -ECANCELED, "layout_cas fails when a worker record moved after "
	   "the listing (%s)", errname(ret));
	ret = etcd_store_ops.region_scan(e, 5, &max_until, &garbled, &at);
	want.from_ms = max_until;
	ret = ret ?: etcd_store_ops.layout_cas(e, 5, lrev, at, wrev, &want, &lrev2);
	ok(!ret && lrev2 > lrev && max_until == 99,
	   "... and succeeds on a fresh listing (%s)", errname(ret));

	/* A write under the old layout's revision fails, and says so. */
	memset(&now, 0, sizeof(now));
	ret = etcd_store_ops.cas(e, 5, 1, rev2, lrev, &v, &rev, &now);
	ok(ret == -ECANCELED && now.mod_revision == rev2 &&
	   now.layout_rev == lrev2 && strstr(err(e), "layout"),
	   "cas under the old layout: -ECANCELED with the layout's new revision "
	   "(%s: %s)", errname(ret), err(e));
	ret = etcd_store_ops.cas(e, 5, 1, rev2, lrev2, &v, &rev, NULL);
	ok(!ret, "cas under the new layout's revision writes (%s)", errname(ret));

	/* The region width record: compared by the layout write. */
	ok(!etcd_store_ops.width_get(e, &w2) && w2.exists && w2.valid &&
	   w2.region_bits == 3 && w2.mod_revision == wrev0,
	   "width_get reads back 3 region bits at its revision");
	ret = etcd_store_ops.width_create(e, 2, &rev);
	ok(ret == -ECANCELED, "a second width_create fails (%s)", errname(ret));
	ret = etcd_store_ops.layout_cas(e, 5, lrev2, 0, wrev0 + 1000, &want,
					&rev);
	ok(ret == -ECANCELED, "layout_cas fails when the width record is not at "
	   "the revision given (%s)", errname(ret));

	/* Values we cannot read are not layouts. */
	snprintf(key, sizeof(key), "%s/r6/layout", prefix);
	etcdctl(ep, "put", key, "{\"region_bits\":3,\"worker_bits\":\"7\","
		"\"seq_bits\":12,\"from_ms\":0}");
	ret = etcd_store_ops.layout_get(e, 6, &got);
	ok(!ret && got.exists && !got.valid,
	   "a layout with a string for a number is unreadable (%s)", errname(ret));
	snprintf(key, sizeof(key), "%s/r6/w/2", prefix);
	etcdctl(ep, "put", key, "{\"owner\":\"o\",\"token\":7,\"valid_until_ms\":1}");
	ret = etcd_store_ops.get(e, 6, 2, &r);
	ok(!ret && r.exists && !r.valid,
	   "a record whose token is not a string is unreadable (%s)", errname(ret));
	etcdctl(ep, "put", key, "{\"owner\":\"o\",\"token\":\"t\",\"write\":"
		"\"0123456789ABCDEF\",\"valid_until_ms\":1}");
	ret = etcd_store_ops.get(e, 6, 2, &r);
	ok(!ret && r.exists && !r.valid,
	   "a record whose write nonce is not 16 lowercase hex digits is "
	   "unreadable (%s)", errname(ret));
	etcd_free(e);
}

/* --- a large region, and a proxy in front of the member ------------------ */

#define BIG_COUNT	25000u		/* records etcd_fill.py writes */
#define BIG_WORKERS	32768u		/* a layout of 2^15 numbers */
#define BIG_FREE	99u		/* the expired one; sorts near the end */
#define BIG_LAST	9999u		/* the last key in etcd's order */
#define BIG_OWNER	"idgen-host-0123456789.rack-17.dc-west.example.internal"

/*
 * etcd_fill.py: BIG_COUNT records as described there, or with foreign
 * set, that many records of foreign bytes each.
 */
static bool run_fill(const char *fill, const char *ep, const char *prefix,
		     uint32_t region, unsigned int foreign, unsigned int count)
{
	char reg[16], n[16], free_w[16], bytes[16];
	pid_t pid;
	int st;

	snprintf(reg, sizeof(reg), "%" PRIu32, region);
	snprintf(n, sizeof(n), "%u", count);
	snprintf(free_w, sizeof(free_w), "%u", BIG_FREE);
	snprintf(bytes, sizeof(bytes), "%u", foreign);
	fflush(stdout);
	pid = fork();
	if (pid < 0)
		return false;
	if (!pid) {
		if (foreign)
			execl("/usr/bin/python3", "python3", fill,
			      "--foreign-bytes", bytes, ep, prefix, reg, n,
			      (char *)NULL);
		else
			execl("/usr/bin/python3", "python3", fill, ep, prefix,
			      reg, n, free_w, (char *)NULL);
		_exit(127);
	}
	return waitpid(pid, &st, 0) == pid && WIFEXITED(st) &&
	       !WEXITSTATUS(st);
}

/* What etcd_fill.py wrote for worker w. */
static bool filled(const struct store_record *r, uint32_t w)
{
	char owner[STORE_OWNER_MAX];

	snprintf(owner, sizeof(owner), "%s-%" PRIu32, BIG_OWNER, w);
	return ours(r, w, owner, w == BIG_FREE ? 1000 : 1000000000000ULL + w,
		    -1) && r->mod_revision > 0;
}

/*
 * Every record of the large region as filled, except those in skip (a
 * worker number, or -1); the rest of rec absent.  Diagnoses the first
 * difference.
 */
static bool big_as_filled(const struct store_record *rec, int64_t skip)
{
	uint32_t w;

	for (w = 0; w < BIG_WORKERS; w++) {
		if ((int64_t)w == skip)
			continue;
		if (w < BIG_COUNT ? filled(&rec[w], w) : absent(&rec[w], w))
			continue;
		diag("first difference at w%" PRIu32 ":", w);
		show(&rec[w]);
		return false;
	}
	return true;
}

static bool between(const struct store_record *r, uint32_t w)
{
	return ours(r, w, "between", 7, -1);
}

/*
 * The cut-over's reads of a large region: region_scan lists it at one
 * revision H, and layout_cas's compare "no worker record written after H"
 * holds only if every page was read at H.
 */
static void big_region_scan(const char *ep, const char *base,
			    const char *prefix, uint32_t region)
{
	const char *port = strrchr(ep, ':') + 1;
	struct store_layout want = { .region_bits = 3, .worker_bits = 15,
				     .seq_bits = 4 };
	uint64_t max_until;
	uint32_t garbled;
	int64_t at, lrev = 0, rev;
	char via[256];
	struct etcd *e;
	int ret;

	e = client1(ep, prefix, 5000);
	ret = etcd_store_ops.region_scan(e, region, &max_until, &garbled, &at);
	ok(!ret && max_until == 1000000000000ULL + BIG_COUNT - 1 &&
	   !garbled && at > 0,
	   "region_scan of %u records: the highest valid_until of all, none "
	   "garbled (%s %s; %" PRIu64 ", %" PRIu32 ")", BIG_COUNT,
	   errname(ret), err(e), max_until, garbled);
	want.from_ms = max_until;
	ret = ret ?: etcd_store_ops.layout_cas(e, region, 0, at, 0, &want, &lrev);
	ok(!ret && lrev > at,
	   "... and the cut-over's layout_cas at its revision writes (%s %s)",
	   errname(ret), err(e));
	etcd_free(e);

	/* A write between two pages is after H: the cut-over must fail. */
	snprintf(via, sizeof(via), "%s/via/%s/between-scan-%d", base, port,
		 (int)getpid());
	e = client1(via, prefix, 10000);
	ret = etcd_store_ops.region_scan(e, region, &max_until, &garbled, &at);
	ok(!ret && at >= lrev,
	   "region_scan with a write between its pages (%s %s)",
	   errname(ret), err(e));
	want.worker_bits = 14;
	want.seq_bits = 5;
	ret = ret ?: etcd_store_ops.layout_cas(e, region, lrev, at, 0, &want,
					       &rev);
	ok(ret == -ECANCELED,
	   "... its revision is the first page's: layout_cas at it fails, the "
	   "write is after it (%s %s)", errname(ret), err(e));
	etcd_free(e);

	/* Compacted between two pages: it starts over, at a newer H. */
	snprintf(via, sizeof(via), "%s/via/%s/compact-scan-%d", base, port,
		 (int)getpid());
	e = client1(via, prefix, 10000);
	ret = etcd_store_ops.region_scan(e, region, &max_until, &garbled, &at);
	ok(!ret && max_until == 1000000000000ULL + BIG_COUNT - 1 &&
	   !garbled && has(e, "compacted"),
	   "region_scan compacted between two pages starts over (%s; last "
	   "failure: %s)", errname(ret), err(e));
	ret = ret ?: etcd_store_ops.layout_cas(e, region, lrev, at, 0, &want,
					       &rev);
	ok(!ret && rev > lrev,
	   "... and layout_cas at the revision it started over at writes "
	   "(%s %s)", errname(ret), err(e));
	etcd_free(e);
}

static void big_region(const char *ep, const char *base, const char *fill,
		       const char *prefix)
{
	/* Regions 5 and 6 are real_token_layout()'s. */
	const uint32_t region = 7;
	struct store_record *rec = calloc(BIG_WORKERS, sizeof(*rec)), r;
	const char *port = strrchr(ep, ':') + 1;
	char via[256];
	struct etcd *e;
	int64_t rev;
	uint32_t w;
	bool good;
	int ret;

	if (!rec) {
		printf("Bail out! out of memory\n");
		exit(1);
	}
	ok(run_fill(fill, ep, prefix, region, 0, BIG_COUNT),
	   "etcd_fill.py wrote %u records of about 200 bytes", BIG_COUNT);

	/* More than one answer of etcd's (or our client's) would hold. */
	e = client1(ep, prefix, 5000);
	junk(rec, BIG_WORKERS);
	ret = etcd_store_ops.list(e, region, rec, BIG_WORKERS);
	ok(!ret && big_as_filled(rec, -1),
	   "list of %u records (2^15 numbers): every record where it "
	   "belongs, w/10 after w/1 and before w/2 (%s %s)", BIG_COUNT,
	   errname(ret), err(e));
	junk(rec, BIG_WORKERS);
	ret = etcd_store_ops.list(e, region, rec, 128);
	good = !ret;
	for (w = 0; w < 128; w++)
		good &= filled(&rec[w], w);
	ok(good && rec[128].worker == 77,
	   "list of 128 numbers of that region: those 128, keys beyond them "
	   "skipped (%s %s)", errname(ret), err(e));
	etcd_free(e);

	/* A write between two pages is not seen: one revision. */
	snprintf(via, sizeof(via), "%s/via/%s/between-%d", base, port,
		 (int)getpid());
	e = client1(via, prefix, 10000);
	junk(rec, BIG_WORKERS);
	ret = etcd_store_ops.list(e, region, rec, BIG_WORKERS);
	ok(!ret && big_as_filled(rec, -1),
	   "list with a write to w/%u between its pages: all pages at the "
	   "first one's revision, the old value (%s %s)", BIG_LAST,
	   errname(ret), err(e));
	etcd_free(e);
	e = client1(ep, prefix, 5000);
	junk(&r, 1);
	ret = etcd_store_ops.get(e, region, BIG_LAST, &r);
	ok(!ret && between(&r, BIG_LAST),
	   "... while the write did land (%s)", errname(ret));
	rev = r.mod_revision;
	etcd_free(e);

	/* That revision compacted away between two pages: start over. */
	snprintf(via, sizeof(via), "%s/via/%s/compact-%d", base, port,
		 (int)getpid());
	e = client1(via, prefix, 10000);
	junk(rec, BIG_WORKERS);
	ret = etcd_store_ops.list(e, region, rec, BIG_WORKERS);
	ok(!ret && big_as_filled(rec, BIG_LAST) &&
	   between(&rec[BIG_LAST], BIG_LAST) &&
	   rec[BIG_LAST].mod_revision > rev && has(e, "compacted"),
	   "list whose revision is compacted between two pages starts over "
	   "and reads the new revision (%s; last failure: %s)",
	   errname(ret), err(e));
	etcd_free(e);

	snprintf(via, sizeof(via), "%s/via/%s/compact-always", base, port);
	e = client1(via, prefix, 10000);
	junk(rec, BIG_WORKERS);
	ret = etcd_store_ops.list(e, region, rec, BIG_WORKERS);
	ok(ret == -ETIMEDOUT && all_unknown(rec, BIG_WORKERS) &&
	   has(e, "compacted away before its last page, 4 times in a row"),
	   "list compacted under it every time: gives up, -ETIMEDOUT, "
	   "records unknown (%s: %s)", errname(ret), err(e));
	etcd_free(e);

	big_region_scan(ep, base, prefix, region);

	/*
	 * Foreign values of 1.2 MB: 8 make a 13 MB range, and a page of 3
	 * is over the client's 4 MiB.  Pages are asked for in halves.
	 */
	ok(run_fill(fill, ep, prefix, 8, 1200000, 8),
	   "etcd_fill.py wrote 8 foreign values of 1.2 MB");
	e = client1(ep, prefix, 5000);
	ret = cas_(e, 8, 9, 0, "small", 3, &rev, NULL);
	junk(rec, 16);
	ret = ret ?: etcd_store_ops.list(e, 8, rec, 16);
	good = !ret && ours(&rec[9], 9, "small", 3, rev);
	for (w = 0; w < 8; w++)
		good &= foreign(&rec[w], w) && rec[w].mod_revision > 0;
	for (w = 10; w < 16; w++)
		good &= absent(&rec[w], w);
	ok(good, "list of a range of 13 MB in pages under 4 MiB: the 8 "
	   "foreign values held by someone unknown, the small one ours "
	   "(%s %s)", errname(ret), err(e));
	{
		uint64_t max_until;
		uint32_t garbled;

		ret = etcd_store_ops.region_scan(e, 8, &max_until, &garbled,
						 &rev);
		ok(!ret && max_until == 3 && garbled == 8,
		   "region_scan of that range: the 8 foreign values garbled, "
		   "the small one's valid_until (%s %s; %" PRIu64 ", %"
		   PRIu32 ")", errname(ret), err(e), max_until, garbled);
	}
	etcd_free(e);
	free(rec);
}

/*
 * The member behind an endpoint that answers 200 with garbage: reads go on
 * to the member, a write through the garbler is of unknown outcome and the
 * re-read, elsewhere, settles it.
 */
static void garbling_endpoint(const char *ep, const char *base,
			      const char *prefix)
{
	const char *port = strrchr(ep, ':') + 1;
	struct store_record rec[8], r, now;
	char garble[256], fwd[256];
	const char *eps[2] = { garble, ep };
	struct etcd *e;
	int64_t rev, rev2;
	uint32_t w = 0;
	int ret;

	snprintf(garble, sizeof(garble), "%s/via/%s/garble", base, port);
	snprintf(fwd, sizeof(fwd), "%s/via/%s/fwd-garble", base, port);

	e = client1(ep, prefix, 3000);
	ret = cas_(e, 1, 2, 0, "held", 5, &rev, NULL);
	ok(!ret, "put a record to read back (%s)", errname(ret));
	etcd_free(e);

	e = client(2, eps, prefix, 3000);
	junk(&r, 1);
	ret = etcd_store_ops.get(e, 1, 2, &r);
	ok(!ret && ours(&r, 2, "held", 5, rev),
	   "get goes on past an endpoint answering 200 with garbage (%s %s)",
	   errname(ret), err(e));
	etcd_free(e);

	/* A claim: list, then cas on a free number. */
	e = client(2, eps, prefix, 3000);
	junk(rec, 8);
	ret = etcd_store_ops.list(e, 1, rec, 8);
	ok(!ret && ours(&rec[2], 2, "held", 5, rev) && absent(&rec[3], 3),
	   "list goes on past it (%s %s)", errname(ret), err(e));
	while (w < 8 && rec[w].exists)
		w++;
	ret = ret ?: cas_(e, 1, w, rec[w].mod_revision, "claimer", 9, &rev,
			  NULL);
	junk(&r, 1);
	ret = ret ?: etcd_store_ops.get(e, 1, w, &r);
	ok(!ret && ours(&r, w, "claimer", 9, rev),
	   "... and the claim's write goes to the member that answered "
	   "(%s %s)", errname(ret), err(e));
	etcd_free(e);

	/* A write the garbler never forwarded. */
	e = client(2, eps, prefix, 3000);
	junk(&now, 1);
	ret = cas_(e, 1, 4, 0, "lost", 9, &rev, &now);
	ok(ret == -ETIMEDOUT && rev == 0 && unknown(&now, 4) &&
	   has(e, "garble: response is not JSON"),
	   "cas through a garbling endpoint: -ETIMEDOUT, outcome unknown "
	   "(%s: %s)", errname(ret), err(e));
	junk(&r, 1);
	ret = etcd_store_ops.get(e, 1, 4, &r);
	ok(!ret && absent(&r, 4),
	   "... the re-read goes to the member: the write did not land (%s %s)",
	   errname(ret), err(e));
	etcd_free(e);

	/* A write applied, and its answer garbled. */
	eps[0] = fwd;
	e = client(2, eps, prefix, 3000);
	ret = cas_(e, 1, 4, 0, "landed", 9, &rev, NULL);
	ok(ret == -ETIMEDOUT && rev == 0,
	   "cas applied behind a garbled answer: -ETIMEDOUT (%s: %s)",
	   errname(ret), err(e));
	junk(&r, 1);
	ret = etcd_store_ops.get(e, 1, 4, &r);
	ok(!ret && ours(&r, 4, "landed", 9, -1) && r.mod_revision > 0,
	   "... the re-read goes to the member: the write landed (%s %s)",
	   errname(ret), err(e));
	rev = r.mod_revision;
	ret = cas_(e, 1, 4, rev, "landed", 10, &rev2, NULL);
	ok(!ret && rev2 > rev, "... and the next write goes there too (%s)",
	   errname(ret));
	etcd_free(e);
}

static void real(const char *ep, const char *base, const char *fill)
{
	struct store_record rec[8], r, now;
	char prefix[64], key[128], val[512], big[200];
	int64_t rev1, rev2, rev;
	struct etcd *e;
	uint32_t i;
	bool good;
	int ret;

	snprintf(prefix, sizeof(prefix), "/etcdtest%d", (int)getpid());
	e = client1(ep, prefix, 3000);

	ok(!strcmp(etcd_key(e, 2, 17), strcat(strcpy(key, prefix),
						  "/r2/w/17")),
	   "etcd_key is <prefix>/r2/w/17: %s", etcd_key(e, 2, 17));

	junk(rec, 8);
	ret = etcd_store_ops.list(e, 0, rec, 8);
	good = !ret;
	for (i = 0; i < 8; i++)
		good &= absent(&rec[i], i);
	ok(good, "list of an empty region: all absent (%s %s)",
	   errname(ret), err(e));

	ret = cas_(e, 0, 3, 0, "alice", 1000, &rev1, NULL);
	ok(!ret && rev1 > 0, "cas expect 0 creates (%s, rev %" PRId64 ")",
	   errname(ret), rev1);

	junk(&now, 1);
	ret = cas_(e, 0, 3, 0, "bob", 5000, &rev, &now);
	ok(ret == -ECANCELED && ours(&now, 3, "alice", 1000, rev1) &&
	   rev == 0 && *err(e),
	   "second cas expect 0: -ECANCELED, *now is alice's (%s: %s)",
	   errname(ret), err(e));
	if (!ours(&now, 3, "alice", 1000, rev1))
		show(&now);

	ret = cas_(e, 0, 3, rev1, "alice", 2000, &rev2, NULL);
	ok(!ret && rev2 > rev1, "cas on the right revision: %s, rev %" PRId64
	   " > %" PRId64, errname(ret), rev2, rev1);

	junk(&now, 1);
	ret = cas_(e, 0, 3, rev1, "bob", 3000, &rev, &now);
	ok(ret == -ECANCELED && ours(&now, 3, "alice", 2000, rev2),
	   "cas on a stale revision: -ECANCELED with the current record (%s)",
	   errname(ret));

	junk(&r, 1);
	ret = etcd_store_ops.get(e, 0, 3, &r);
	ok(!ret && ours(&r, 3, "alice", 2000, rev2),
	   "get returns what was written (%s)", errname(ret));
	if (ret || !ours(&r, 3, "alice", 2000, rev2))
		show(&r);

	junk(&r, 1);
	ret = etcd_store_ops.get(e, 0, 5, &r);
	ok(!ret && absent(&r, 5), "get of a never-written key: absent (%s)",
	   errname(ret));

	/* Foreign keys and values, from etcdctl. */
	good = true;
	snprintf(key, sizeof(key), "%s/r0/w/abc", prefix);
	good &= etcdctl(ep, "put", key, "{\"owner\":\"x\",\"valid_until_ms\":1}");
	snprintf(key, sizeof(key), "%s/r0/w/999", prefix);
	good &= etcdctl(ep, "put", key, "{\"owner\":\"x\",\"valid_until_ms\":1}");
	snprintf(key, sizeof(key), "%s/r0/w/05", prefix);
	good &= etcdctl(ep, "put", key, "{\"owner\":\"x\",\"valid_until_ms\":1}");
	snprintf(key, sizeof(key), "%s/r0/w/4/x", prefix);
	good &= etcdctl(ep, "put", key, "{\"owner\":\"x\",\"valid_until_ms\":1}");
	snprintf(key, sizeof(key), "%s/r0/w", prefix);
	good &= etcdctl(ep, "put", key, "{\"owner\":\"x\",\"valid_until_ms\":1}");
	snprintf(key, sizeof(key), "%s/r1/w/6", prefix);
	good &= etcdctl(ep, "put", key, "{\"owner\":\"r1\",\"valid_until_ms\":1}");
	snprintf(key, sizeof(key), "%s/r0/w/5", prefix);
	good &= etcdctl(ep, "put", key, "not json at all");
	snprintf(key, sizeof(key), "%s/r0/w/6", prefix);
	good &= etcdctl(ep, "put", key,
			"{\"owner\":\"carol\",\"valid_until_ms\":\"123\","
			"\"extra\":[1,{}]}");
	snprintf(key, sizeof(key), "%s/r0/w/7", prefix);
	good &= etcdctl(ep, "put", key,
			"{\"owner\":\"dave\",\"valid_until_ms\":-1}");
	ok(good, "etcdctl put the foreign keys");

	junk(rec, 8);
	ret = etcd_store_ops.list(e, 0, rec, 8);
	good = !ret && ours(&rec[3], 3, "alice", 2000, rev2) &&
	       foreign(&rec[5], 5) && rec[5].mod_revision > rev2 &&
	       ours(&rec[6], 6, "carol", 123, -1) && foreign(&rec[7], 7);
	for (i = 0; i < 8; i++)
		if (i != 3 && i != 5 && i != 6 && i != 7)
			good &= absent(&rec[i], i);
	ok(good, "list: ours at 3, 'not json' at 5 exists && !valid, a string "
	   "valid_until_ms at 6, a negative one at 7; abc, 999, 05, 4/x, "
	   "r0/w and r1 ignored (%s)", errname(ret));
	if (!good)
		for (i = 0; i < 8; i++)
			show(&rec[i]);
	rev = rec[5].mod_revision;

	junk(rec, 7);
	ret = etcd_store_ops.list(e, 1, rec, 7);
	ok(!ret && ours(&rec[6], 6, "r1", 1, -1) && absent(&rec[0], 0),
	   "list of region 1 sees only its own key (%s)", errname(ret));

	junk(&r, 1);
	ret = etcd_store_ops.get(e, 0, 5, &r);
	ok(!ret && foreign(&r, 5) && r.mod_revision == rev,
	   "get of a non-JSON value: exists && !valid (%s)", errname(ret));

	ret = etcd_store_ops.list(e, 0, rec, 8);
	ret = ret ?: cas_(e, 0, 5, rec[5].mod_revision, "eve",
					UINT64_MAX - 1, &rev, NULL);
	junk(&r, 1);
	ret = ret ?: etcd_store_ops.get(e, 0, 5, &r);
	ok(!ret && ours(&r, 5, "eve", UINT64_MAX - 1, rev),
	   "cas over a foreign value; valid_until_ms 2^64-2 round-trips (%s)",
	   errname(ret));

	memset(big, 'o', STORE_OWNER_MAX - 1);
	big[STORE_OWNER_MAX - 1] = '\0';
	ret = cas_(e, 0, 1, 0, big, 7, &rev, NULL);
	junk(&r, 1);
	ret = ret ?: etcd_store_ops.get(e, 0, 1, &r);
	ok(!ret && ours(&r, 1, big, 7, rev),
	   "an owner of STORE_OWNER_MAX-1 bytes round-trips (%s)",
	   errname(ret));

	snprintf(val, sizeof(val), "{\"owner\":\"%so\",\"valid_until_ms\":1}",
		 big);
	snprintf(key, sizeof(key), "%s/r0/w/2", prefix);
	good = etcdctl(ep, "put", key, val);
	junk(&r, 1);
	ret = etcd_store_ops.get(e, 0, 2, &r);
	ok(good && !ret && foreign(&r, 2),
	   "an owner of STORE_OWNER_MAX bytes reads as !valid (%s)",
	   errname(ret));

	ret = cas_(e, 0, 2, 0, "x\"y\\z/\xc3\xbc", 9, &rev, NULL);
	ok(ret == -ECANCELED, "cas expect 0 on an existing key (%s)",
	   errname(ret));
	ret = cas_(e, 0, 2, r.mod_revision, "x\"y\\z/\xc3\xbc", 9,
				 &rev, NULL);
	junk(&r, 1);
	ret = ret ?: etcd_store_ops.get(e, 0, 2, &r);
	ok(!ret && ours(&r, 2, "x\"y\\z/\xc3\xbc", 9, rev),
	   "an owner with quotes, backslash and UTF-8 round-trips (%s)",
	   errname(ret));

	memset(big, 'o', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	junk(&now, 1);
	ret = cas_(e, 0, 2, 0, big, 9, &rev, &now);
	ok(ret == -EINVAL && rev == 0 && unknown(&now, 2) && *err(e),
	   "cas with a too-long owner: -EINVAL, nothing written (%s: %s)",
	   errname(ret), err(e));

	snprintf(key, sizeof(key), "%s/r0/w/3", prefix);
	good = etcdctl(ep, "del", key, NULL);
	ret = cas_(e, 0, 3, 0, "frank", 1, &rev, NULL);
	ok(good && !ret && rev > rev2,
	   "cas expect 0 after the key was deleted creates it again (%s)",
	   errname(ret));
	etcd_free(e);

	/* Failover from a refused endpoint, and back. */
	{
		const char *eps[] = { "http://127.0.0.1:1", ep };
		const char *none[] = { "http://127.0.0.1:1",
				       "http://127.0.0.1:2/" };

		e = client(2, eps, prefix, 3000);
		junk(rec, 8);
		ret = etcd_store_ops.list(e, 0, rec, 8);
		ok(!ret && ours(&rec[3], 3, "frank", 1, -1),
		   "list with a refused first endpoint fails over (%s)",
		   errname(ret));
		ret = cas_(e, 0, 4, 0, "grace", 4, &rev, NULL);
		ok(!ret && rev > 0,
		   "cas with a refused first endpoint fails over (%s: %s)",
		   errname(ret), err(e));
		etcd_free(e);

		e = client(2, eps, prefix, 3000);
		ret = cas_(e, 0, 4, rev, "grace", 5, &rev, NULL);
		ok(!ret, "cas as the first call of a client fails over (%s)",
		   errname(ret));
		etcd_free(e);

		e = client(2, none, prefix, 3000);
		junk(rec, 8);
		ret = etcd_store_ops.list(e, 0, rec, 8);
		ok(ret == -ECONNREFUSED && all_unknown(rec, 8) &&
		   has(e, "all 2 endpoints unreachable") &&
		   has(e, "127.0.0.1:2"),
		   "list, all endpoints refused: -ECONNREFUSED, records "
		   "unknown (%s: %s)", errname(ret), err(e));
		junk(&now, 1);
		ret = cas_(e, 0, 4, 0, "x", 1, &rev, &now);
		ok(ret == -ECONNREFUSED && rev == 0 && unknown(&now, 4) &&
		   *err(e), "cas, all endpoints refused: -ECONNREFUSED (%s)",
		   errname(ret));
		junk(&r, 1);
		ret = etcd_store_ops.get(e, 0, 4, &r);
		ok(ret == -ECONNREFUSED && unknown(&r, 4),
		   "get, all endpoints refused: -ECONNREFUSED (%s)",
		   errname(ret));
		etcd_free(e);
	}

	real_token_layout(ep, prefix);
	garbling_endpoint(ep, base, prefix);
	big_region(ep, base, fill, prefix);

	snprintf(key, sizeof(key), "%s/", prefix);
	etcdctl(ep, "del", key, "--prefix");
}

/* --- against fake_etcd.py ----------------------------------------------- */

enum { L = 1, G = 2, C = 4 };

static const struct {
	const char *scenario;
	int ops;
	const char *msg;	/* in error() */
} proto_cases[] = {
	{ "garbage", L | G | C, "response is not JSON (unexpected character" },
	{ "truncated", L | G | C, "response is not JSON (truncated at byte" },
	{ "empty", L | G | C, "response is not JSON (empty)" },
	{ "array", L | G | C, "not a JSON object" },
	{ "trailing", L | G | C, "response is not JSON (unexpected char" },
	{ "two_objects", L | G | C, "not JSON (unexpected character at byte 84)" },
	{ "noheader", L | G | C, "no header" },
	{ "header_str", L | G | C, "no header" },
	{ "kvs_string", L | G | C, "kvs is not an array" },
	{ "kv_not_object", L | G, "kv is not an object" },
	{ "key_not_b64", L | G | C, "key is not base64" },
	{ "key_bad_pad", L | G, "key is not base64" },
	{ "value_not_b64", L | G, "value is not base64" },
	{ "rev_not_number", L | G | C, "revision is not an int64" },
	{ "rev_number", L | G | C, "revision is not an int64" },
	{ "rev_negative", L | G | C, "revision is not an int64" },
	{ "rev_overflow", L | G | C, "revision is not an int64" },
	{ "modrev_bad", L | G | C, "mod_revision is not an int64" },
	{ "succeeded_str", C, "succeeded is not a boolean" },
	{ "txn_no_responses", C, "without its response_range" },
	{ "other_key", G | C, "got another key" },
	{ "outside_range", L, "outside the range" },
	{ "big", L | G | C, "response larger than" },
};

/*
 * Runs the ops of mask against one endpoint, each expecting want; a write
 * whose answer is garbled expects -ETIMEDOUT instead of -EPROTO: it was
 * sent, so its outcome is unknown.
 */
static void expect_fail(const char *ep, const char *what, int mask, int want,
			const char *msg, unsigned int timeout_ms)
{
	int want_cas = want == -EPROTO ? -ETIMEDOUT : want;
	struct store_record rec[4], r, now;
	struct etcd *e = client1(ep, "/f", timeout_ms);
	long long t0;
	int64_t rev;
	int ret;

	if (mask & L) {
		junk(rec, 4);
		ret = etcd_store_ops.list(e, 0, rec, 4);
		ok(ret == want && all_unknown(rec, 4) && has(e, msg) &&
		   has(e, ep), "%s: list gives %s, records unknown (%s: %s)",
		   what, errname(want), errname(ret), err(e));
	}
	if (mask & G) {
		junk(&r, 1);
		ret = etcd_store_ops.get(e, 0, 3, &r);
		ok(ret == want && unknown(&r, 3) && has(e, msg) && has(e, ep),
		   "%s: get gives %s, record unknown (%s: %s)", what,
		   errname(want), errname(ret), err(e));
	}
	if (mask & C) {
		junk(&now, 1);
		rev = 42;
		t0 = now_ms();
		ret = cas_(e, 0, 3, 5, "me", 10, &rev, &now);
		t0 = now_ms() - t0;
		ok(ret == want_cas && rev == 0 && unknown(&now, 3) &&
		   has(e, msg) && has(e, ep) && t0 < timeout_ms + 1000,
		   "%s: cas gives %s, new_rev 0, *now unknown, %lld ms (%s: %s)",
		   what, errname(want_cas), t0, errname(ret), err(e));
	}
	etcd_free(e);
}

/*
 * A port whose SYNs go unanswered: a listener with a full backlog that
 * never accepts, so that a connect times out with nothing sent.
 */
static int blackhole(int *fds, int nfds)
{
	struct sockaddr_in a = { .sin_family = AF_INET };
	socklen_t len = sizeof(a);
	int i;

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	fds[0] = socket(AF_INET, SOCK_STREAM, 0);
	if (fds[0] < 0 || bind(fds[0], (struct sockaddr *)&a, sizeof(a)) ||
	    listen(fds[0], 0) ||
	    getsockname(fds[0], (struct sockaddr *)&a, &len))
		return -1;
	for (i = 1; i < nfds; i++) {
		fds[i] = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
		connect(fds[i], (struct sockaddr *)&a, sizeof(a));
	}
	usleep(100 * 1000);
	return ntohs(a.sin_port);
}

static void fake(const char *base)
{
	struct store_record rec[4], r, now;
	char ep[16][256];
	struct etcd *e;
	unsigned int i;
	int64_t rev;
	int ret, fds[6], port;
	long long t0;

#define EP(n, s) (snprintf(ep[n], sizeof(ep[n]), "%s/%s", base, s), ep[n])

	for (i = 0; i < sizeof(proto_cases) / sizeof(proto_cases[0]); i++)
		expect_fail(EP(0, proto_cases[i].scenario),
			    proto_cases[i].scenario, proto_cases[i].ops,
			    -EPROTO, proto_cases[i].msg, 3000);

	/* Defaults omitted: an empty range, a failed txn with no kvs. */
	e = client1(EP(0, "minimal"), "/f", 3000);
	junk(rec, 4);
	ret = etcd_store_ops.list(e, 0, rec, 4);
	ok(!ret && absent(&rec[0], 0) && absent(&rec[3], 3),
	   "minimal: range without kvs or count lists all absent (%s %s)",
	   errname(ret), err(e));
	junk(&r, 1);
	ret = etcd_store_ops.get(e, 0, 3, &r);
	ok(!ret && absent(&r, 3), "minimal: get is absent (%s)",
	   errname(ret));
	junk(&now, 1);
	ret = cas_(e, 0, 3, 5, "me", 10, &rev, &now);
	ok(ret == -ECANCELED && absent(&now, 3) && rev == 0,
	   "minimal: txn without succeeded, range without kvs: -ECANCELED, "
	   "*now absent (%s)", errname(ret));
	etcd_free(e);

	e = client1(EP(0, "bare_header"), "/f", 3000);
	junk(rec, 4);
	ret = etcd_store_ops.list(e, 0, rec, 4);
	ok(!ret && absent(&rec[1], 1), "header {}: list works (%s)",
	   errname(ret));
	junk(&now, 1);
	ret = cas_(e, 0, 3, 5, "me", 10, &rev, &now);
	ok(ret == -ECANCELED && absent(&now, 3),
	   "header {}, response_range {}: -ECANCELED, *now absent (%s)",
	   errname(ret));
	etcd_free(e);

	e = client1(EP(0, "kv_defaults"), "/f", 3000);
	junk(rec, 4);
	ret = etcd_store_ops.list(e, 0, rec, 4);
	ok(!ret && foreign(&rec[3], 3) && !rec[3].mod_revision &&
	   absent(&rec[2], 2),
	   "a kv with only a key lists as exists && !valid (%s)",
	   errname(ret));
	junk(&now, 1);
	ret = cas_(e, 0, 3, 5, "me", 10, &rev, &now);
	ok(ret == -ECANCELED && foreign(&now, 3),
	   "a failed txn's kv with only a key: *now exists && !valid (%s)",
	   errname(ret));
	etcd_free(e);

	e = client1(EP(0, "held"), "/f", 3000);
	junk(rec, 4);
	ret = etcd_store_ops.list(e, 0, rec, 4);
	ok(!ret && ours(&rec[3], 3, "fake", 1234, 5),
	   "held: list parses the record (%s)", errname(ret));
	junk(&now, 1);
	ret = cas_(e, 0, 3, 4, "me", 10, &rev, &now);
	ok(ret == -ECANCELED && ours(&now, 3, "fake", 1234, 5) &&
	   has(e, "revision is 5, not 4"),
	   "held: -ECANCELED with *now (%s: %s)", errname(ret), err(e));
	etcd_free(e);

	e = client1(EP(0, "txn_ok"), "/f", 3000);
	ret = cas_(e, 0, 3, 5, "me", 10, &rev, NULL);
	ok(!ret && rev == 9, "txn_ok: new_rev is the header's revision (%s)",
	   errname(ret));
	ret = cas_(e, 0, 3, 9, "me", 10, &rev, NULL);
	ok(ret == -ETIMEDOUT && rev == 0 && has(e, "succeeded at revision 9"),
	   "txn_ok: a success at no newer revision is garbled: -ETIMEDOUT "
	   "(%s: %s)", errname(ret), err(e));
	etcd_free(e);

	/* Errors after the request was sent. */
	expect_fail(EP(0, "e503"), "HTTP 503", L | G | C, -ETIMEDOUT,
		    "HTTP 503: etcdserver: request timed out", 3000);
	expect_fail(EP(0, "e404"), "HTTP 404", L | G | C, -ETIMEDOUT,
		    "HTTP 404: 404 page not found", 3000);
	expect_fail(EP(0, "close"), "connection closed", L | C, -ETIMEDOUT,
		    "Empty reply", 3000);
	expect_fail(EP(0, "hang"), "no answer", L | C, -ETIMEDOUT,
		    "timed out", 500);

	/* A garbled answer is that endpoint's failure: reads go on. */
	for (i = 0; i < sizeof(proto_cases) / sizeof(proto_cases[0]); i++) {
		const char *eps[] = { EP(0, proto_cases[i].scenario),
				      EP(1, "held") };
		const char *sc = proto_cases[i].scenario;

		if (proto_cases[i].ops & L) {
			e = client(2, eps, "/f", 3000);
			junk(rec, 4);
			ret = etcd_store_ops.list(e, 0, rec, 4);
			ok(!ret && ours(&rec[3], 3, "fake", 1234, 5),
			   "list goes on past %s (%s %s)", sc, errname(ret),
			   err(e));
			etcd_free(e);
		}
		if (proto_cases[i].ops & G) {
			e = client(2, eps, "/f", 3000);
			junk(&r, 1);
			ret = etcd_store_ops.get(e, 0, 3, &r);
			ok(!ret && ours(&r, 3, "fake", 1234, 5),
			   "get goes on past %s (%s %s)", sc, errname(ret),
			   err(e));
			etcd_free(e);
		}
	}
	{
		const char *eps[] = { EP(0, "garbage"), EP(1, "truncated") };

		e = client(2, eps, "/f", 3000);
		junk(rec, 4);
		ret = etcd_store_ops.list(e, 0, rec, 4);
		ok(ret == -EPROTO && all_unknown(rec, 4) &&
		   has(e, "all 2 endpoints failed (last: ") &&
		   has(e, "truncated at byte"),
		   "list, every endpoint garbled: -EPROTO naming the last "
		   "(%s: %s)", errname(ret), err(e));
		etcd_free(e);
	}
	{
		/*
		 * garble_txn garbles writes and answers reads with a record
		 * of its own, "garbler": a read that finds "fake" went to
		 * the second endpoint first.
		 */
		const char *eps[] = { EP(0, "garble_txn"), EP(1, "held") };

		e = client(2, eps, "/f", 3000);
		junk(&now, 1);
		ret = cas_(e, 0, 3, 5, "me", 10, &rev, &now);
		ok(ret == -ETIMEDOUT && rev == 0 && unknown(&now, 3) &&
		   has(e, "garble_txn: response is not JSON"),
		   "cas with a garbled answer stops there: -ETIMEDOUT, "
		   "outcome unknown (%s: %s)", errname(ret), err(e));
		junk(&r, 1);
		ret = etcd_store_ops.get(e, 0, 3, &r);
		ok(!ret && ours(&r, 3, "fake", 1234, 5),
		   "... and the re-read starts at the next endpoint (%s, "
		   "owner '%s')", errname(ret), r.owner);
		etcd_free(e);
	}

	/* Failover. */
	{
		const char *e503_held[] = { EP(1, "e503"), EP(2, "held") };
		const char *hang_held[] = { EP(3, "hang"), EP(4, "held") };
		const char *refused_ok[] = { "http://127.0.0.1:1",
					     EP(5, "txn_ok") };
		const char *e503_ok[] = { EP(6, "e503"), EP(7, "txn_ok") };
		const char *none[] = { "http://127.0.0.1:1",
				       "http://127.0.0.1:2" };
		char hole[64];
		const char *hole_ok[] = { hole, EP(8, "txn_ok") };

		e = client(2, e503_held, "/f", 3000);
		junk(rec, 4);
		ret = etcd_store_ops.list(e, 0, rec, 4);
		ok(!ret && ours(&rec[3], 3, "fake", 1234, 5),
		   "list goes on after an HTTP 503 (%s)", errname(ret));
		ret = cas_(e, 0, 3, 4, "me", 10, &rev, NULL);
		ok(ret == -ECANCELED,
		   "the next call starts at the endpoint that answered (%s)",
		   errname(ret));
		etcd_free(e);

		e = client(2, e503_ok, "/f", 3000);
		ret = cas_(e, 0, 3, 5, "me", 10, &rev, NULL);
		ok(ret == -ETIMEDOUT && rev == 0 && has(e, "e503: HTTP 503"),
		   "cas stops at an HTTP 503 (%s: %s)", errname(ret), err(e));
		etcd_free(e);

		e = client(2, hang_held, "/f", 500);
		junk(&r, 1);
		t0 = now_ms();
		ret = etcd_store_ops.get(e, 0, 3, &r);
		t0 = now_ms() - t0;
		ok(!ret && ours(&r, 3, "fake", 1234, 5) && t0 < 1500,
		   "get goes on after a timeout (%s, %lld ms)", errname(ret),
		   t0);
		etcd_free(e);

		e = client(2, hang_held, "/f", 500);
		junk(&now, 1);
		ret = cas_(e, 0, 3, 4, "me", 10, &rev, &now);
		ok(ret == -ETIMEDOUT && unknown(&now, 3) && has(e, "hang"),
		   "cas stops at a timeout (%s: %s)", errname(ret), err(e));
		etcd_free(e);

		e = client(2, refused_ok, "/f", 3000);
		ret = cas_(e, 0, 3, 5, "me", 10, &rev, NULL);
		ok(!ret && rev == 9, "cas goes on after connection refused (%s)",
		   errname(ret));
		etcd_free(e);

		port = blackhole(fds, 6);
		snprintf(hole, sizeof(hole), "http://127.0.0.1:%d", port);
		e = client(2, hole_ok, "/f", 3000);
		t0 = now_ms();
		ret = cas_(e, 0, 3, 5, "me", 10, &rev, NULL);
		t0 = now_ms() - t0;
		ok(port > 0 && !ret && rev == 9 && t0 >= 900 && t0 < 2500,
		   "cas goes on after a connect timeout, nothing sent "
		   "(%s, %lld ms)", errname(ret), t0);
		etcd_free(e);
		for (i = 0; i < 6; i++)
			close(fds[i]);

		e = client(2, none, "/f", 3000);
		junk(&now, 1);
		ret = cas_(e, 0, 3, 5, "me", 10, &rev, &now);
		ok(ret == -ECONNREFUSED && rev == 0 &&
		   has(e, "all 2 endpoints unreachable (last: "
		       "http://127.0.0.1:2: ") &&
		   has(e, "Connection refused"),
		   "all refused: -ECONNREFUSED (%s: %s)", errname(ret),
		   err(e));
		etcd_free(e);

		e = client(0, none, "/f", 3000);
		ret = etcd_store_ops.list(e, 0, rec, 4);
		ok(ret == -ECONNREFUSED && all_unknown(rec, 4) && *err(e),
		   "no endpoints at all: -ECONNREFUSED (%s)", errname(ret));
		etcd_free(e);
	}
#undef EP
}

int main(int argc, char **argv)
{
	if (!(argc == 5 && !strcmp(argv[1], "real")) &&
	    !(argc == 3 && !strcmp(argv[1], "fake"))) {
		fprintf(stderr, "usage: %s real <endpoint> <fake_etcd.py base "
			"url> <etcd_fill.py> | fake <base url>\n", argv[0]);
		return 2;
	}
	curl_global_init(CURL_GLOBAL_DEFAULT);
	if (!strcmp(argv[1], "real"))
		real(argv[2], argv[3], argv[4]);
	else
		fake(argv[2]);
	curl_global_cleanup();
	printf("1..%d\n", tests);
	return failures ? 1 : 0;
}
