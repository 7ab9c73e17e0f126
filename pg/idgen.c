// SPDX-License-Identifier: GPL-2.0
/*
 * idgen in PostgreSQL: IDs minted from /dev/idgen through libidgen, and
 * the functions that turn times into ID bounds and IDs back into times.
 *
 * Minting: each backend opens the device and makes its buffer on its first
 * idgen_next() or idgen_next_n(), never earlier.  _PG_init() only defines
 * settings, so a postmaster that loads the library (shared_preload_libraries)
 * holds no descriptor and no buffered ID for its children to inherit; and
 * were a process ever to fork after opening, the PID check below and the
 * buffer's own fork guard both drop what the parent held.
 *
 * idgen.device must prove it is idgen's device (libidgen's LIBIDGEN_VERIFY,
 * by what it is and not by its path) before a single ID is read from it: a
 * regular file would hand every session the same IDs, /dev/zero ID 0 for
 * ever; anything else is refused naming the setting.
 *
 * For benchmarks and tests on a host without the module, idgen.device may
 * name libidgen's simulated generator, "sim:WORKER": each backend then
 * opens its own, and the simulation's lock lets only one process of the
 * host hold a worker at a time.  Either is behind libidgen's one handle
 * (idgen_generator_open()), which the extension mints through.
 *
 * Errors: the device's refusals are SQLSTATEs of class IG (README.md,
 * "Errors"); bad input is the standard 22xxx data exception.
 */
#include "postgres.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "access/htup_details.h"
#include "access/xact.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/timestamp.h"

#include "idgen.h"

PG_MODULE_MAGIC;

/* The refusals of the device, class IG: README.md lists them. */
#define ERRCODE_IDGEN_DEVICE_ERROR	MAKE_SQLSTATE('I', 'G', '0', '0', '0')
#define ERRCODE_IDGEN_NO_DEVICE		MAKE_SQLSTATE('I', 'G', '0', '0', '1')
#define ERRCODE_IDGEN_NO_LEASE		MAKE_SQLSTATE('I', 'G', '0', '0', '2')
#define ERRCODE_IDGEN_FENCE_REACHED	MAKE_SQLSTATE('I', 'G', '0', '0', '3')
#define ERRCODE_IDGEN_CLOCK_BEHIND	MAKE_SQLSTATE('I', 'G', '0', '0', '4')
#define ERRCODE_IDGEN_TIME_EXHAUSTED	MAKE_SQLSTATE('I', 'G', '0', '0', '5')

/* The idgen epoch and its last millisecond, in PostgreSQL's microseconds. */
#define UNIX_TO_PG_US	((int64) (POSTGRES_EPOCH_JDATE - UNIX_EPOCH_JDATE) * USECS_PER_DAY)
#define EPOCH_PG_US	((int64) LIBIDGEN_EPOCH_UNIX_MS * 1000 - UNIX_TO_PG_US)
#define END_PG_US	(EPOCH_PG_US + ((int64) LIBIDGEN_MS_MAX + 1) * 1000)

/* Settings (README.md, "Settings"). */
static char *device_path;
static int buffer_size;
static int buffer_max_age_ms;
static char *layouts_file;

/* This backend's generator and buffer, and what they were made with. */
static struct {
	pid_t pid;		/* the process that opened gen; 0: none */
	struct idgen_generator *gen;	/* the device, or 'sim:WORKER' */
	struct idgen_buffer *buf;
	int size, max_age_ms;
} dev;

/* The decoders' layouts table, and the file it came from. */
static struct {
	struct idgen_layouts *table;	/* NULL: version 1 alone */
	char *path;			/* malloc'd; NULL: none loaded */
	struct stat st;
	bool checked;			/* in this transaction */
} lay;

void _PG_init(void);

PG_FUNCTION_INFO_V1(pg_idgen_next);
PG_FUNCTION_INFO_V1(pg_idgen_next_n);
PG_FUNCTION_INFO_V1(pg_idgen_min_id_at);
PG_FUNCTION_INFO_V1(pg_idgen_time);
PG_FUNCTION_INFO_V1(pg_idgen_decode);

/*
 * idgen.device names something other than idgen's device (libidgen's
 * -ENOTTY, told by what it is and how it answers, never by its path): the
 * setting is wrong, and the detail says what it names.
 */
static void pg_attribute_noreturn()
report_not_idgen(void)
{
	struct stat st;
	const char *what = "not idgen's device";
	bool link = !lstat(device_path, &st) && S_ISLNK(st.st_mode);

	if (!stat(device_path, &st)) {
		if (S_ISREG(st.st_mode))
			what = "a regular file, which every session would read from its start, getting the same IDs";
		else if (S_ISFIFO(st.st_mode))
			what = "a FIFO";
		else if (S_ISDIR(st.st_mode))
			what = "a directory";
		else if (S_ISSOCK(st.st_mode))
			what = "a socket";
		else if (S_ISBLK(st.st_mode))
			what = "a block device";
		else if (S_ISCHR(st.st_mode))
			what = "a character device other than idgen's";
	}
	ereport(ERROR,
		(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
		 errmsg("idgen.device \"%s\" is not an idgen device", device_path),
		 errdetail("It is %s%s.", link ? "a symbolic link to " : "", what),
		 errhint("Set idgen.device to the device of idgen.ko, /dev/idgen, or to sim:WORKER for tests and benchmarks.")));
	pg_unreachable();
}

/* A refusal of the device (a negative errno from libidgen) as an ERROR. */
static void pg_attribute_noreturn()
report_device(int err)
{
	const char *what = idgen_strerror(err);

	err = -err;
	switch (err) {
	case ENOENT:
	case ENODEV:
	case ENXIO:
		ereport(ERROR,
			(errcode(ERRCODE_IDGEN_NO_DEVICE),
			 errmsg("no idgen device at \"%s\"", device_path),
			 errdetail("open: %s.", strerror(err)),
			 errhint("Load the kernel module (modprobe idgen), or set idgen.device to the device's path.")));
		break;
	case ENOTTY:
		report_not_idgen();
		break;
	case ENOKEY:
		ereport(ERROR,
			(errcode(ERRCODE_IDGEN_NO_LEASE),
			 errmsg("idgen cannot mint: this host holds no lease for a worker number"),
			 errdetail("%s", what),
			 errhint("Start idgend, or see why it holds no lease in its log and in \"idgenctl status\".")));
		break;
	case EKEYEXPIRED:
		ereport(ERROR,
			(errcode(ERRCODE_IDGEN_FENCE_REACHED),
			 errmsg("idgen cannot mint: the lease's time fence is reached"),
			 errdetail("%s", what),
			 errhint("idgend has not renewed the lease in time (etcd unreachable, or idgend stopped): see its log and \"idgenctl status\".")));
		break;
	case ETIME:
	case EAGAIN:
		/* The simulation's lead is not the module's max_lead_ms. */
		if (dev.gen && idgen_generator_simulated(dev.gen))
			ereport(ERROR,
				(errcode(ERRCODE_IDGEN_CLOCK_BEHIND),
				 errmsg("idgen cannot mint yet: the wall clock is behind the simulated generator"),
				 errdetail("%s", what),
				 errhint("Retry: the refusal ends when the wall clock has caught up with the simulated worker's last ID, less its %d ms lead: after a step back of the clock, about as long as the step.",
					 LIBIDGEN_SIM_MAX_LEAD_MS)));
		ereport(ERROR,
			(errcode(ERRCODE_IDGEN_CLOCK_BEHIND),
			 errmsg("idgen cannot mint yet: the wall clock is behind the generator"),
			 errdetail("%s", what),
			 errhint("Retry: the refusal ends when the wall clock catches up (at most max_lead_ms, 1 s by default, after a step back).")));
		break;
	case EOVERFLOW:
		ereport(ERROR,
			(errcode(ERRCODE_IDGEN_TIME_EXHAUSTED),
			 errmsg("idgen cannot mint: its time range is exhausted"),
			 errdetail("%s", what)));
		break;
	case EIO:
		ereport(ERROR,
			(errcode(ERRCODE_IDGEN_DEVICE_ERROR),
			 errmsg("idgen device \"%s\" returned no ID", device_path),
			 errdetail("A read gave nothing, or not whole 8-byte IDs.")));
		break;
	default:
		errno = err;
		ereport(ERROR,
			(errcode(ERRCODE_IDGEN_DEVICE_ERROR),
			 errmsg("idgen device \"%s\" failed: %m", device_path),
			 what ? errdetail("%s", what) : 0));
		break;
	}
	pg_unreachable();
}

/* Let go of the device and the IDs buffered from it (holes, never reissued). */
static void device_release(void)
{
	idgen_buffer_free(dev.buf);
	dev.buf = NULL;
	/* Ours, or a copy inherited in a fork: closing it closes only ours. */
	idgen_generator_close(dev.gen);
	dev.gen = NULL;
	dev.pid = 0;
}

/*
 * This process's generator for idgen.device, opened now if need be: only
 * idgen's device, by an open that cannot block (a FIFO's would wait for a
 * writer, beyond any cancel), or this backend's own simulated generator,
 * 'sim:WORKER'.  Only that form: libidgen's "sim:FILE" has no lock, and
 * two sessions minting from one file would repeat IDs; and a value that
 * is neither (a space, a sign) would be taken for a file name and fail
 * later as a missing lease.  WORKER is a plain decimal, 0 to 127, without
 * leading zeros.
 */
static void device_open(void)
{
	char why[512];
	int ret;

	if (dev.pid && (dev.pid != getpid() ||
			strcmp(idgen_generator_name(dev.gen), device_path)))
		device_release();
	if (dev.pid)
		return;
	ret = idgen_generator_open(device_path, LIBIDGEN_GENERATOR_SIM_WORKER, 0,
				   &dev.gen, why, sizeof(why));
	if (!ret) {
		dev.pid = getpid();
		return;
	}
	dev.gen = NULL;
	if (ret == -EPROTONOSUPPORT || (ret == -EINVAL && idgen_sim_is_spec(device_path)))
		ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("idgen.device \"%s\" is not a simulated worker", device_path),
			 errdetail("In PostgreSQL a simulated generator is sim:WORKER, WORKER a decimal from 0 to 127 without sign, spaces or leading zeros; the file form sim:FILE has no lock, and sessions minting from one file would repeat IDs."),
			 errhint("Set idgen.device to /dev/idgen, or to sim:WORKER for tests and benchmarks.")));
	if (idgen_sim_is_spec(device_path))
		ereport(ERROR,
			(errcode(ERRCODE_IDGEN_NO_DEVICE),
			 errmsg("cannot open the simulated generator \"%s\"", device_path),
			 errdetail("%s", why),
			 errhint("A simulated worker mints in one process at a time: give each session its own worker, or use /dev/idgen.")));
	if (ret == -EIO)
		ereport(ERROR,
			(errcode(ERRCODE_IDGEN_DEVICE_ERROR),
			 errmsg("idgen device \"%s\" reports an impossible state", device_path),
			 errdetail("Its answer to the state request (IDGEN_IOC_GET_STATE) holds layout widths, a lease or a held clock step that the module never reports."),
			 errhint("Check that idgen.device is the device of idgen.ko, and that the module and this extension come from the same idgen release.")));
	report_device(ret);
}

/* The buffer, made now for the current settings if need be. */
static struct idgen_buffer *buffer_get(void)
{
	int ret;

	device_open();
	if (dev.buf && (dev.size != buffer_size || dev.max_age_ms != buffer_max_age_ms)) {
		idgen_buffer_free(dev.buf);
		dev.buf = NULL;
	}
	if (!dev.buf) {
		ret = idgen_buffer_new_generator(dev.gen, buffer_size, buffer_max_age_ms,
						 &dev.buf);
		if (ret)
			report_device(ret);
		dev.size = buffer_size;
		dev.max_age_ms = buffer_max_age_ms;
	}
	return dev.buf;
}

Datum
pg_idgen_next(PG_FUNCTION_ARGS)
{
	uint64_t id;
	int ret = idgen_buffer_take(buffer_get(), &id);

	if (ret)
		report_device(ret);
	PG_RETURN_INT64((int64) id);
}

/* idgen_next_n()'s state across calls: a batch and how much is left. */
#define NEXT_N_BATCH	4096
struct next_n {
	int64 left;		/* still to return */
	uint32 pos, count;	/* ids[pos..count) not returned yet */
	uint64_t ids[NEXT_N_BATCH];
};

Datum
pg_idgen_next_n(PG_FUNCTION_ARGS)
{
	FuncCallContext *fc;
	struct next_n *st;

	if (SRF_IS_FIRSTCALL()) {
		int32 n = PG_GETARG_INT32(0);
		MemoryContext old;

		if (n < 0)
			ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("idgen_next_n(%d): the count must not be negative", n)));
		fc = SRF_FIRSTCALL_INIT();
		old = MemoryContextSwitchTo(fc->multi_call_memory_ctx);
		st = palloc0(sizeof(*st));
		MemoryContextSwitchTo(old);
		st->left = n;
		fc->user_fctx = st;
		/*
		 * These IDs come straight from the device, newer than any this
		 * backend buffered: drop the buffered ones, so that the IDs one
		 * session gets keep increasing, whichever function it calls.
		 */
		if (n) {
			device_open();
			idgen_buffer_free(dev.buf);
			dev.buf = NULL;
		}
	}
	fc = SRF_PERCALL_SETUP();
	st = fc->user_fctx;
	if (!st->left)
		SRF_RETURN_DONE(fc);
	if (st->pos == st->count) {
		ssize_t r;

		/* A load of millions can be cancelled between batches. */
		CHECK_FOR_INTERRUPTS();
		device_open();
		r = idgen_generator_mint(dev.gen, st->ids, Min(st->left, NEXT_N_BATCH));
		if (r < 0)
			report_device((int) r);
		st->pos = 0;
		st->count = r;
	}
	st->left--;
	SRF_RETURN_NEXT(fc, Int64GetDatum((int64) st->ids[st->pos++]));
}

/* An ID from SQL, refused when negative (never an idgen ID). */
static uint64_t id_arg(FunctionCallInfo fcinfo)
{
	int64 id = PG_GETARG_INT64(0);

	if (id < 0)
		ereport(ERROR,
			(errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
			 errmsg("%lld is not an idgen ID: IDs are never negative", (long long) id)));
	return (uint64_t) id;
}

/* Unix milliseconds as a timestamptz. */
static TimestampTz unix_ms_to_ts(uint64_t unix_ms)
{
	return (TimestampTz) unix_ms * 1000 - UNIX_TO_PG_US;
}

Datum
pg_idgen_min_id_at(PG_FUNCTION_ARGS)
{
	TimestampTz t = PG_GETARG_TIMESTAMPTZ(0);
	uint64_t id;
	int64 unix_ms;

	/*
	 * libidgen gives 0 for a moment before the epoch; SQL gets an error
	 * instead, as idgen-httpd's callers do: a bound of 0 there is more
	 * likely a mistaken time zone or year than a wish for "from the start".
	 */
	if (TIMESTAMP_NOT_FINITE(t) || t < EPOCH_PG_US || t >= END_PG_US)
		ereport(ERROR,
			(errcode(ERRCODE_DATETIME_VALUE_OUT_OF_RANGE),
			 errmsg("timestamp out of idgen's range"),
			 errdetail("IDs hold times from 2026-01-01 00:00:00+00 to 2095-09-07 15:47:35.551+00."),
			 t < EPOCH_PG_US ?
			 errhint("A range that starts before 2026-01-01 starts at ID 0.") : 0));
	/* Within a millisecond: floor; t is past the epoch, so t >= 0 here. */
	unix_ms = (t + UNIX_TO_PG_US) / 1000;
	if (idgen_min_id_at(unix_ms, &id))
		ereport(ERROR,
			(errcode(ERRCODE_DATETIME_VALUE_OUT_OF_RANGE),
			 errmsg("timestamp out of idgen's range")));
	PG_RETURN_INT64((int64) id);
}

Datum
pg_idgen_time(PG_FUNCTION_ARGS)
{
	struct idgen_decoded d;

	/* The time field is every layout's: version 1 reads it right. */
	if (idgen_decode(id_arg(fcinfo), NULL, &d))
		elog(ERROR, "idgen_decode refused a non-negative ID");
	PG_RETURN_TIMESTAMPTZ(unix_ms_to_ts(d.unix_ms));
}

/* At the end of each transaction, look at the layouts file again. */
static void layouts_xact(XactEvent event, void *arg)
{
	lay.checked = false;
}

/* The layouts table idgen.layouts_file names, (re)loaded when it changed. */
static const struct idgen_layouts *layouts_get(void)
{
	struct idgen_layouts *table;
	struct stat st;
	char err[256];
	bool same_path;

	same_path = lay.path ? layouts_file && !strcmp(lay.path, layouts_file)
			     : !layouts_file || !*layouts_file;
	if (same_path && lay.checked)
		return lay.table;
	if (!layouts_file || !*layouts_file) {
		idgen_layouts_free(lay.table);
		lay.table = NULL;
		free(lay.path);
		lay.path = NULL;
		lay.checked = true;
		return NULL;
	}
	if (stat(layouts_file, &st))
		ereport(ERROR,
			(errcode(ERRCODE_CONFIG_FILE_ERROR),
			 errmsg("idgen.layouts_file \"%s\": %m", layouts_file)));
	if (same_path && st.st_dev == lay.st.st_dev && st.st_ino == lay.st.st_ino &&
	    st.st_size == lay.st.st_size &&
	    st.st_mtim.tv_sec == lay.st.st_mtim.tv_sec &&
	    st.st_mtim.tv_nsec == lay.st.st_mtim.tv_nsec &&
	    /* A rewrite that keeps size and mtime still moves ctime. */
	    st.st_ctim.tv_sec == lay.st.st_ctim.tv_sec &&
	    st.st_ctim.tv_nsec == lay.st.st_ctim.tv_nsec) {
		lay.checked = true;
		return lay.table;
	}
	if (idgen_layouts_load(layouts_file, &table, err, sizeof(err)))
		ereport(ERROR,
			(errcode(ERRCODE_CONFIG_FILE_ERROR),
			 errmsg("idgen.layouts_file: %s", err)));
	if (!same_path) {
		char *path = strdup(layouts_file);

		if (!path) {
			idgen_layouts_free(table);
			ereport(ERROR, (errcode(ERRCODE_OUT_OF_MEMORY), errmsg("out of memory")));
		}
		free(lay.path);
		lay.path = path;
	}
	idgen_layouts_free(lay.table);
	lay.table = table;
	lay.st = st;
	lay.checked = true;
	return lay.table;
}

Datum
pg_idgen_decode(PG_FUNCTION_ARGS)
{
	uint64_t id = id_arg(fcinfo);
	struct idgen_decoded d;
	TupleDesc desc;
	Datum values[5];
	bool nulls[5] = { false };

	if (get_call_result_type(fcinfo, NULL, &desc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "idgen_decode must return a record");
	if (idgen_decode(id, layouts_get(), &d))
		elog(ERROR, "idgen_decode refused a non-negative ID");
	values[0] = TimestampTzGetDatum(unix_ms_to_ts(d.unix_ms));
	values[1] = Int32GetDatum((int32) d.region);
	values[2] = Int32GetDatum((int32) d.worker);
	values[3] = Int32GetDatum((int32) d.seq);
	/* A layouts file may number versions up to 2^32 - 1; integer holds less. */
	if (d.version > PG_INT32_MAX)
		ereport(ERROR,
			(errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
			 errmsg("layout version %u of idgen.layouts_file is beyond integer", d.version)));
	values[4] = Int32GetDatum((int32) d.version);
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(BlessTupleDesc(desc), values, nulls)));
}

void
_PG_init(void)
{
	DefineCustomStringVariable("idgen.device",
				   "The idgen device idgen_next() mints from.",
				   NULL, &device_path, LIBIDGEN_DEVICE,
				   PGC_SUSET, 0, NULL, NULL, NULL);
	DefineCustomIntVariable("idgen.buffer_size",
				"How many IDs each backend reads from the device at a time.",
				"1 reads each ID as idgen_next() returns it.",
				&buffer_size, 32, 1, 65536,
				PGC_USERSET, 0, NULL, NULL, NULL);
	DefineCustomIntVariable("idgen.buffer_max_age_ms",
				"The oldest a buffered ID may be when idgen_next() returns it.",
				"Older ones are dropped (gaps, never reissued), so IDs stay k-sorted with other backends' and hosts'.",
				&buffer_max_age_ms, 10, 0, 3600 * 1000,
				PGC_USERSET, GUC_UNIT_MS, NULL, NULL, NULL);
	DefineCustomStringVariable("idgen.layouts_file",
				   "The layouts table idgen_decode() reads (idgenctl's --layouts); empty: version 1 alone.",
				   NULL, &layouts_file, "",
				   PGC_SUSET, 0, NULL, NULL, NULL);
	MarkGUCPrefixReserved("idgen");
	RegisterXactCallback(layouts_xact, NULL);
}
