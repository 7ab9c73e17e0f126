// SPDX-License-Identifier: GPL-2.0
/*
 * pg_premint: a library preloaded after idgen (shared_preload_libraries =
 * 'idgen, pg_premint') whose _PG_init() mints one ID through the
 * extension's idgen_next() in the postmaster, before any backend is
 * forked, and logs it.  tests/vm/pg-suite.sh then checks that no backend
 * hands out an ID the postmaster buffered: the extension's own _PG_init()
 * opens nothing, so without this nothing in a preloading postmaster would
 * ever hold IDs for its children to inherit, and the suite could not
 * catch the extension dropping a parent's buffer no more.
 */
#include "postgres.h"

#include "fmgr.h"
#include "miscadmin.h"

PG_MODULE_MAGIC;

void _PG_init(void);

void _PG_init(void)
{
	PGFunction next;
	LOCAL_FCINFO(fcinfo, 0);
	Datum id;

	if (!process_shared_preload_libraries_in_progress)
		return;
	next = load_external_function("idgen", "pg_idgen_next", true, NULL);
	InitFunctionCallInfoData(*fcinfo, NULL, 0, InvalidOid, NULL, NULL);
	id = next(fcinfo);
	elog(LOG, "pg_premint: the postmaster minted %lld", (long long) DatumGetInt64(id));
}
