/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The layout protocol of idgend (Documentation/design.md section 7.1,
 * R3): the prefix's region width record, the one region width of every
 * region under the prefix, and each region's layout record, whose from_ms
 * is above every fence of the layouts before it.  The lease protocol
 * (lease_protocol.h) checks both before every claim and adoption, and
 * again when a renewal finds the layout record changed; an operator
 * changes a region's layout with the explicit cut-over.
 *
 * Like the lease protocol it does no I/O of its own: the store and the
 * clock are the interfaces it is handed (store.h, wall_clock.h), so the
 * tests drive it with fakes.  cfg gives the region, lease_ms and this
 * host's layout.
 */
#ifndef IDGEND_LAYOUT_PROTOCOL_H
#define IDGEND_LAYOUT_PROTOCOL_H

#include <stdbool.h>
#include <stdint.h>

#include "layout.h"
#include "store.h"
#include "wall_clock.h"

struct lease_config;

/*
 * Check that the prefix's region width record and the region's layout
 * record are this host's (cfg->layout), creating either when there is
 * none (the layout record's from_ms from every worker record of the
 * region, as a cut-over writes it).  0 with *layout_rev and *from_ms, the
 * layout record's; -EMEDIUMTYPE when a record holds another layout or
 * width, is unreadable, or would be created more than lease_ms ahead of
 * the clock (logged: a configuration error, for the operator; nothing is
 * claimed); -EAGAIN when the layout record is still missing after
 * writing it; or a store error (logged).
 */
int layout_check(const struct lease_config *cfg, const struct store_ops *store,
		 void *store_ctx, const struct clock_ops *clock, void *clock_ctx,
		 int64_t *layout_rev, uint64_t *from_ms);

/*
 * Change the region's layout to *want: the explicit cut-over of
 * idgend(8).  Every worker record of the region is read in one listing;
 * the new layout's from_ms is the highest valid_until among them; the
 * layout record is written only if neither it, nor any worker record,
 * nor the prefix's region width record changed since that listing.  0
 * (also when the region has that layout already, unless its from_ms is
 * more than lease_ms ahead: then it is written again from the listing),
 * -EINVAL for a change of region_bits or one the prefix's region width
 * record does not allow (logged), -ERANGE for a from_ms more than
 * lease_ms ahead of the clock without force (logged, naming the records
 * responsible), or a store error (logged).
 */
int layout_cut_over(const struct lease_config *cfg,
		    const struct store_ops *store, void *store_ctx,
		    const struct clock_ops *clock, void *clock_ctx,
		    const struct lease_layout *want, bool force);

#endif /* IDGEND_LAYOUT_PROTOCOL_H */
