// SPDX-License-Identifier: GPL-2.0
/*
 * libidgen's generator (lib/generator.c), the one handle idgen-httpd,
 * idgend and the PostgreSQL extension mint and lease through: each spec
 * form only where the caller takes it, the device only when it is
 * idgen's (a regular file, /dev/zero and /dev/null refused, as
 * LIBIDGEN_VERIFY does), and the simulation behind the same calls with
 * its own guarantees: strictly increasing IDs, its lease set and revoked,
 * its state file's owner-only rule, -ECHILD in a child.  The device's
 * minting is the guest's to test (tests/vm): these calls are the ones
 * the programs made on it before.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "idgen.h"
#include "kselftest_harness.h"

static char err[512];

#define NODE	(LIBIDGEN_GENERATOR_SIM | LIBIDGEN_GENERATOR_SIM_WORKER)

TEST(node_mints_leases_and_reports)
{
	struct idgen_generator *g;
	struct idgen_device_state st;
	struct idgen_layout lay;
	struct idgen_decoded d;
	uint64_t ids[100], id, last_ms;
	ssize_t r;
	int i;

	ASSERT_EQ(0, idgen_generator_open("sim:90", NODE, 60000, &g, err, sizeof(err)))
		TH_LOG("%s", err);
	EXPECT_EQ(1, idgen_generator_simulated(g));
	EXPECT_STREQ("sim:90", idgen_generator_name(g));
	r = idgen_generator_mint(g, ids, 100);
	ASSERT_GT(r, 0);
	for (i = 1; i < r; i++)
		EXPECT_LT(ids[i - 1], ids[i]);
	ASSERT_EQ(0, idgen_decode(ids[0], NULL, &d));
	EXPECT_EQ(90, d.worker);
	EXPECT_EQ(0, d.region);

	ASSERT_EQ(0, idgen_generator_get_state(g, &st));
	EXPECT_TRUE(st.flags & LIBIDGEN_STATE_LEASED);
	EXPECT_EQ(90, st.worker);
	EXPECT_EQ(60000, st.valid_until_ms - st.floor_ms);
	EXPECT_EQ((uint64_t)r, st.ids);
	ASSERT_EQ(0, idgen_generator_layout(g, &lay));
	EXPECT_EQ(3, lay.region_bits);
	EXPECT_EQ(7, lay.worker_bits);
	EXPECT_EQ(12, lay.seq_bits);
	EXPECT_EQ(0, lay.version);

	/* Revoked, it mints nothing; its own node's lease set again, it does. */
	ASSERT_EQ(0, idgen_generator_revoke(g, &last_ms));
	EXPECT_GE(last_ms, d.ms);
	EXPECT_EQ(-ENOKEY, idgen_generator_mint(g, &id, 1));
	EXPECT_EQ(-EPERM, idgen_generator_set_lease(g, 0, 91, 0, LIBIDGEN_MS_MAX, NULL, 0));
	ASSERT_EQ(0, idgen_generator_set_lease(g, 0, 90, 0, LIBIDGEN_MS_MAX, NULL, 0));
	ASSERT_EQ(1, idgen_generator_mint(g, &id, 1));
	EXPECT_GT(id, ids[r - 1]);
	idgen_generator_close(g);
}

TEST(sim_alone_is_worker_0)
{
	struct idgen_generator *g, *again = NULL;
	struct idgen_device_state st;

	ASSERT_EQ(0, idgen_generator_open("sim", LIBIDGEN_GENERATOR_SIM, 0, &g,
					  err, sizeof(err)))
		TH_LOG("%s", err);
	EXPECT_STREQ("sim:0", idgen_generator_name(g));
	ASSERT_EQ(0, idgen_generator_get_state(g, &st));
	EXPECT_EQ(0, st.worker);
	/* One worker, one holder: through the handle as through idgen_sim_open(). */
	EXPECT_EQ(-EBUSY, idgen_generator_open("sim:0", NODE, 0, &again, err, sizeof(err)));
	EXPECT_EQ(NULL, again);
	idgen_generator_close(g);
}

/* Each program takes its forms; a form it does not take is named. */
TEST(forms_taken_and_refused)
{
	struct idgen_generator *g = NULL;

	EXPECT_EQ(-EPROTONOSUPPORT, idgen_generator_open("sim:92", LIBIDGEN_GENERATOR_SIM_FILE,
							 0, &g, err, sizeof(err)));
	EXPECT_STREQ("a simulation's lease side is taken here, sim:FILE, not a node of "
		     "its own (sim or sim:WORKER; a file named by digits is sim:./FILE)", err);
	EXPECT_EQ(-EPROTONOSUPPORT, idgen_generator_open("sim", LIBIDGEN_GENERATOR_SIM_FILE,
							 0, &g, err, sizeof(err)));
	EXPECT_EQ(-EPROTONOSUPPORT, idgen_generator_open("sim:/tmp/idgen-gen-x", NODE, 0, &g,
							 err, sizeof(err)));
	EXPECT_STREQ("the simulation's worker must be a decimal number from 0 to 127", err);
	EXPECT_EQ(-EPROTONOSUPPORT, idgen_generator_open("sim", LIBIDGEN_GENERATOR_SIM_WORKER,
							 0, &g, err, sizeof(err)));
	EXPECT_STREQ("a simulated node is named by its worker here: sim:WORKER, from 0 to 127",
		     err);
	EXPECT_EQ(-EPROTONOSUPPORT, idgen_generator_open("sim:93", 0, 0, &g, err, sizeof(err)));
	EXPECT_EQ(-EPROTONOSUPPORT, idgen_generator_open("sim:./f", 0, 0, &g, err, sizeof(err)));
	EXPECT_EQ(-EINVAL, idgen_generator_open("sim:128", NODE, 0, &g, err, sizeof(err)));
	EXPECT_STREQ("the simulation's worker must be a decimal number from 0 to 127", err);
	EXPECT_EQ(-EINVAL, idgen_generator_open("sim:012", NODE, 0, &g, err, sizeof(err)));
	EXPECT_EQ(-EINVAL, idgen_generator_open("sim:", NODE | LIBIDGEN_GENERATOR_SIM_FILE, 0,
						&g, err, sizeof(err)));
	EXPECT_EQ(-EINVAL, idgen_generator_open("sim:94", 1U << 8, 0, &g, NULL, 0));
	EXPECT_EQ(NULL, g);
}

/* What is not idgen's device is refused before an ID is read from it. */
TEST(device_only_idgens)
{
	char path[] = "/tmp/idgen-gen-test.XXXXXX";
	static const char *const not_idgen[] = { "/dev/zero", "/dev/null", NULL };
	struct idgen_generator *g = NULL;
	uint64_t zeros[4] = { 0 };
	int fd, i;

	fd = mkstemp(path);
	ASSERT_GE(fd, 0);
	ASSERT_EQ((ssize_t)sizeof(zeros), write(fd, zeros, sizeof(zeros)));
	close(fd);
	EXPECT_EQ(-ENOTTY, idgen_generator_open(path, NODE | LIBIDGEN_GENERATOR_SIM_FILE, 0,
						&g, err, sizeof(err)));
	EXPECT_STREQ("not an idgen device (not idgen's character device, or no answer "
		     "to its state request)", err);
	unlink(path);
	for (i = 0; not_idgen[i]; i++) {
		EXPECT_EQ(-ENOTTY, idgen_generator_open(not_idgen[i], 0, 0, &g, err,
							sizeof(err)));
	}
	EXPECT_EQ(-ENOENT, idgen_generator_open(path, 0, 0, &g, err, sizeof(err)));
	EXPECT_EQ(NULL, g);
}

/* A host's lease side, in a file: no lease until one is pushed. */
TEST(file_lease_side)
{
	char dir[] = "/tmp/idgen-gen-test.XXXXXX", spec[300], file[256];
	const struct idgen_layout wide = { .region_bits = 3, .worker_bits = 10,
					   .seq_bits = 9 };
	struct idgen_generator *g;
	struct idgen_device_state st;
	struct idgen_layout lay;
	uint64_t id, last_ms;
	int fd;

	ASSERT_NE(NULL, mkdtemp(dir));
	snprintf(file, sizeof(file), "%s/gen", dir);
	snprintf(spec, sizeof(spec), "sim:%s", file);
	ASSERT_EQ(0, idgen_generator_open(spec, LIBIDGEN_GENERATOR_SIM_FILE, 0, &g, err,
					  sizeof(err)))
		TH_LOG("%s", err);
	EXPECT_EQ(1, idgen_generator_simulated(g));
	EXPECT_STREQ(spec, idgen_generator_name(g));
	EXPECT_EQ(-ENOKEY, idgen_generator_mint(g, &id, 1));
	ASSERT_EQ(0, idgen_generator_get_state(g, &st));
	EXPECT_FALSE(st.flags & LIBIDGEN_STATE_LEASED);
	ASSERT_EQ(0, idgen_generator_set_lease(g, 2, 1000, 0, LIBIDGEN_MS_MAX, &wide,
					       LIBIDGEN_LEASE_CLOCK_SYNCED));
	ASSERT_EQ(0, idgen_generator_layout(g, &lay));
	EXPECT_EQ(10, lay.worker_bits);
	EXPECT_EQ(9, lay.seq_bits);
	ASSERT_EQ(1, idgen_generator_mint(g, &id, 1));
	ASSERT_EQ(0, idgen_generator_revoke(g, &last_ms));
	EXPECT_EQ(-ENOKEY, idgen_generator_mint(g, &id, 1));
	idgen_generator_close(g);

	/* Whoever could write the file could replay its IDs: refused. */
	fd = open(file, O_RDONLY);
	ASSERT_GE(fd, 0);
	ASSERT_EQ(0, fchmod(fd, 0666));
	close(fd);
	EXPECT_EQ(-EPERM, idgen_generator_open(spec, LIBIDGEN_GENERATOR_SIM_FILE, 0, &g,
					       err, sizeof(err)));
	snprintf(spec, sizeof(spec), "%s.log", file);
	unlink(spec);
	unlink(file);
	rmdir(dir);
}

/* A child's copy would mint its parent's IDs: refused, however it was made. */
TEST(child_refused)
{
	struct idgen_generator *g;
	uint64_t id;
	int status;
	pid_t pid;

	ASSERT_EQ(0, idgen_generator_open("sim:95", NODE, 0, &g, err, sizeof(err)))
		TH_LOG("%s", err);
	ASSERT_EQ(1, idgen_generator_mint(g, &id, 1));
	pid = fork();
	ASSERT_GE(pid, 0);
	if (!pid)
		_exit(idgen_generator_mint(g, &id, 1) == -ECHILD ? 0 : 1);
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	ASSERT_EQ(1, idgen_generator_mint(g, &id, 1));
	idgen_generator_close(g);
}

/* A buffer over the handle: IDs above every ID minted before it. */
TEST(buffer_over_generator)
{
	struct idgen_generator *g;
	struct idgen_buffer *b;
	uint64_t first, id, prev;
	int i;

	ASSERT_EQ(0, idgen_generator_open("sim:96", NODE, 0, &g, err, sizeof(err)))
		TH_LOG("%s", err);
	ASSERT_EQ(1, idgen_generator_mint(g, &first, 1));
	ASSERT_EQ(0, idgen_buffer_new_generator(g, 64, 1000, &b));
	prev = first;
	for (i = 0; i < 200; i++) {
		ASSERT_EQ(0, idgen_buffer_take(b, &id));
		EXPECT_GT(id, prev);
		prev = id;
	}
	idgen_buffer_free(b);
	EXPECT_EQ(-EINVAL, idgen_buffer_new_generator(NULL, 64, 1000, &b));
	idgen_generator_close(g);
	idgen_generator_close(NULL);
}

TEST_HARNESS_MAIN
