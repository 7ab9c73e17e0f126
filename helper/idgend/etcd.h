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

#include "etcd_creds.h"
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

/*
 * TLS with s's files (etcd_creds.h), and authentication as s's user: 0,
 * or -1 with err naming the file and what is wrong with it.  Hostname and
 * IP verification are always on; with no ca_file, the system's CAs.
 */
int etcd_secure(struct etcd *e, const struct etcd_security *s, char *err,
		size_t errlen);

/*
 * SIGHUP: read every file again (a set that fails keeps the one in
 * force, logged), and open a new connection for the next request.
 */
void etcd_reload(struct etcd *e);

/* The store operations; ctx is the struct etcd. */
extern const struct store_ops etcd_store_ops;

/* The key of a worker number, for log lines: "/idgen/r0/w/17". */
const char *etcd_key(struct etcd *e, uint32_t region, uint32_t worker);

#endif /* IDGEND_ETCD_H */
