/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The coordination store as the lease logic sees it: one record per worker
 * number of a region, each written only by a compare-and-swap on the
 * record's revision.  etcd.c implements it over etcd's v3 JSON gateway; the
 * lease tests implement it in memory.
 *
 * A record's value is {"owner": "<name>", "valid_until_ms": N} (more fields
 * are allowed and ignored).  A record that was never written counts as
 * free with valid_until_ms 0.
 */
#ifndef IDGEND_STORE_H
#define IDGEND_STORE_H

#include <stdbool.h>
#include <stdint.h>

#define STORE_OWNER_MAX		128	/* bytes, with the NUL */

struct store_record {
	uint32_t worker;
	bool exists;			/* the key was ever written */
	bool valid;			/* its value parsed; else the fields below are 0 */
	int64_t mod_revision;		/* 0 when !exists */
	char owner[STORE_OWNER_MAX];	/* "" when free or unparsable */
	uint64_t valid_until_ms;	/* ms since IDGEN_EPOCH_UNIX_MS */
};

/*
 * Errors every operation may return (negative errno):
 *   -ECANCELED     cas only: the record's revision was not the expected one;
 *                  nothing was written.  *now holds the record as it is.
 *   -ETIMEDOUT     a write whose outcome is unknown (timed out, a server
 *                  error or a garbled answer after the request was sent):
 *                  re-read before deciding; the re-read does not start at
 *                  the endpoint that failed.  For reads: no endpoint
 *                  answered in time; for list also: its revision was
 *                  compacted away before its last page, every time it
 *                  started over.
 *   -ECONNREFUSED  no endpoint could be reached; nothing was sent.
 *   -EPROTO        reads only: no endpoint gave a usable answer, and one
 *                  gave a response that is not what the protocol says
 *                  (garbage, truncated, wrong types); nothing is known to
 *                  have changed.  A garbled answer counts as that
 *                  endpoint's failure, so the others were tried first.
 *   -ENOMEM
 * Each failure is also described in store_error(), for the log.
 */
struct store_ops {
	/*
	 * Read the records of workers 0..n-1 of a region in one consistent
	 * read (all at one revision, however many requests it takes);
	 * rec[i].worker = i.  Keys outside 0..n-1 are ignored.
	 */
	int (*list)(void *ctx, uint32_t region, struct store_record *rec,
		    uint32_t n);
	/* Read one record. */
	int (*get)(void *ctx, uint32_t region, uint32_t worker,
		   struct store_record *out);
	/*
	 * Write {owner, valid_until_ms} if the record's mod_revision is still
	 * expect_rev (0: the key must not exist yet).  On success *new_rev is
	 * the record's new mod_revision.  On -ECANCELED *now (if not NULL) is
	 * the record as it is.
	 */
	int (*cas)(void *ctx, uint32_t region, uint32_t worker,
		   int64_t expect_rev, const char *owner,
		   uint64_t valid_until_ms, int64_t *new_rev,
		   struct store_record *now);
	/* What the last failure was, for a log line ("" if none). */
	const char *(*error)(void *ctx);
};

#endif /* IDGEND_STORE_H */
