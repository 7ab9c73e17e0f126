/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The store (store.h) on etcd v3, through its JSON gateway (POST
 * /v3/kv/range and /v3/kv/txn; keys and values base64, int64 as strings,
 * fields at their default value omitted), with libcurl and json-c.
 *
 * Keys: <prefix>/r<region>/w/<worker>, e.g. /idgen/r0/w/17.
 *
 * Endpoints are tried in turn, starting from the last one that answered:
 * a read goes on to the next endpoint after any failure, an answer that is
 * not etcd's (garbage, wrong types, another key) included; a write goes on
 * only when nothing was sent (connection refused or failed), and otherwise
 * reports -ETIMEDOUT (unknown outcome) for the caller to re-read, which
 * then starts at the next endpoint.
 *
 * A region is listed (list, and region_scan for the cut-over) in pages of
 * at most 512 keys, every page at the first one's revision (one consistent
 * read); if that revision is compacted away meanwhile, the listing starts
 * over.  Memory stays bounded by one page's answer (at most 4 MiB, smaller
 * pages asked for when an answer is bigger) and the caller's records.
 */
#ifndef IDGEND_ETCD_H
#define IDGEND_ETCD_H

#include <stdint.h>

#include "store.h"

struct etcd;

/*
 * endpoints: "http://127.0.0.1:2379" ..., n of them (copied).
 * prefix: the key prefix, e.g. "/idgen" (copied; no trailing '/').
 * timeout_ms: the whole of one request to one endpoint.
 * Returns NULL on allocation failure (curl_global_init is the caller's).
 */
struct etcd *etcd_new(const char *const *endpoints, unsigned int n,
		      const char *prefix, unsigned int timeout_ms);
void etcd_free(struct etcd *e);

/* The store operations; ctx is the struct etcd. */
extern const struct store_ops etcd_store_ops;

/* The key of a worker number, for log lines: "/idgen/r0/w/17". */
const char *etcd_key(struct etcd *e, uint32_t region, uint32_t worker);

#endif /* IDGEND_ETCD_H */
