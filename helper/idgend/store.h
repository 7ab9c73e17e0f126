/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The coordination store as the lease logic sees it: one record per worker
 * number of a region, each written only by a compare-and-swap on the
 * record's revision.  etcd.c implements it over etcd's v3 JSON gateway; the
 * lease tests implement it in memory.
 *
 * A record's value is {"owner": "<name>", "token": "<32 hex digits>",
 * "write": "<16 hex digits>", "valid_until_ms": N} (more fields are
 * allowed and ignored; a value without a token, as older idgend wrote it,
 * reads with token "" and is nobody's to take back).  "write" is a nonce
 * made afresh for each write: it tells this instance's own writes from
 * those of another instance that shares its owner and token (R1,
 * Documentation/design.md section 7.1).
 * A record that was never written counts as free with valid_until_ms 0.
 *
 * Each region also has a layout record (struct store_layout), and every
 * write of a worker record compares the layout record's revision in the
 * same transaction: a cut-over to another layout fails every write made
 * under the old one.
 *
 * The whole prefix has one region width record (struct store_width): every
 * region's layout has its region bits, since regions of different widths
 * put different bits of an ID in the region field, and their IDs collide
 * (r0 of 2/8/12 worker 133 and r1 of 3/7/12 worker 5 share node bits
 * 0x85000).  It is created once, if absent, and compared by mod_revision
 * in every transaction that writes a layout record.
 */
#ifndef IDGEND_STORE_H
#define IDGEND_STORE_H

#include <stdbool.h>
#include <stdint.h>

#define STORE_OWNER_MAX		128	/* bytes, with the NUL */
#define STORE_TOKEN_MAX		65	/* bytes, with the NUL */
#define STORE_NONCE_LEN		16	/* hex digits of a write nonce */
#define STORE_ANY_LAYOUT	(-1)	/* cas: no compare on the layout */

struct store_record {
	uint32_t worker;
	bool exists;			/* the key was ever written */
	bool valid;			/* its value parsed; else the fields below are 0 */
	int64_t mod_revision;		/* 0 when !exists */
	char owner[STORE_OWNER_MAX];	/* "" when free or unparsable */
	char token[STORE_TOKEN_MAX];	/* "" likewise, or from an old writer */
	char nonce[STORE_NONCE_LEN + 1];	/* the write's; "" if none */
	uint64_t valid_until_ms;	/* ms since IDGEN_EPOCH_UNIX_MS */
	int64_t layout_rev;		/* cas's -ECANCELED only: the layout
					 * record's mod_revision then (0: absent) */
};

/* What a worker record's write puts in its value. */
struct store_value {
	const char *owner;
	const char *token;
	const char *nonce;		/* STORE_NONCE_LEN hex digits, or NULL */
	uint64_t valid_until_ms;
};

/*
 * The region's layout record: {"region_bits": R, "worker_bits": W,
 * "seq_bits": S, "from_ms": N}.  No ID under this layout may carry a
 * millisecond at or below from_ms (the last fence of the layout before).
 */
struct store_layout {
	bool exists;
	bool valid;			/* its value parsed; else the fields are 0 */
	int64_t mod_revision;		/* 0 when !exists */
	uint8_t region_bits, worker_bits, seq_bits;
	uint64_t from_ms;
};

/* The prefix's region width record: {"region_bits": R}. */
struct store_width {
	bool exists;
	bool valid;			/* its value parsed; else region_bits is 0 */
	int64_t mod_revision;		/* 0 when !exists */
	uint8_t region_bits;
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
 *   -EACCES        the store refused this host: a TLS handshake that failed,
 *                  a wrong password, no permission on the prefix; nothing
 *                  was applied.  The operator has to act; a held lease
 *                  treats it as a failed renewal (its fence stays).
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
	 * Write *val if the record's mod_revision is still expect_rev (0: the
	 * key must not exist yet) and the region's layout record's is still
	 * layout_rev (0: absent; STORE_ANY_LAYOUT: not compared).  On success
	 * *new_rev is the record's new mod_revision.  On -ECANCELED *now (if
	 * not NULL) is the record as it is, with now->layout_rev.
	 */
	int (*cas)(void *ctx, uint32_t region, uint32_t worker,
		   int64_t expect_rev, int64_t layout_rev,
		   const struct store_value *val, int64_t *new_rev,
		   struct store_record *now);
	/* Read the region's layout record. */
	int (*layout_get)(void *ctx, uint32_t region, struct store_layout *out);
	/*
	 * Write the layout record if its mod_revision is still expect_rev
	 * (0: create it), when workers_rev is not 0 no worker record of the
	 * region was written after revision workers_rev, and when width_rev
	 * is not 0 the region width record's mod_revision is still width_rev.
	 * -ECANCELED when a compare failed; nothing was written.
	 */
	int (*layout_cas)(void *ctx, uint32_t region, int64_t expect_rev,
			  int64_t workers_rev, int64_t width_rev,
			  const struct store_layout *l, int64_t *new_rev);
	/* Read the prefix's region width record. */
	int (*width_get)(void *ctx, struct store_width *out);
	/* Create it with region_bits if it does not exist (-ECANCELED if it does). */
	int (*width_create)(void *ctx, uint8_t region_bits, int64_t *new_rev);
	/*
	 * Every worker record of the region, whatever the layout: the highest
	 * valid_until_ms among them (unreadable values are counted in
	 * *garbled), in one consistent read at the store revision *revision
	 * however many requests it takes: layout_cas's workers_rev compare
	 * is only sound against such a read.
	 */
	int (*region_scan)(void *ctx, uint32_t region, uint64_t *max_until,
			   uint32_t *garbled, int64_t *revision);
	/* What the last failure was, for a log line ("" if none). */
	const char *(*error)(void *ctx);
};

#endif /* IDGEND_STORE_H */
