// SPDX-License-Identifier: GPL-2.0
/*
 * kselftest: units whose ToPA tables hold one output entry
 * (CPUID.(14H,0):ECX[1] = 0; the simulator's "glm" model).  Each buffer is
 * one region, a power of two, with an END entry back to its own table.
 * Their PMI comes shortly before the region is full, so a ring's wrap
 * count cannot be the PMI count alone: the driver reads where the unit is
 * when it handles the PMI.  The unit's own byte count (debugfs) must equal
 * what the driver reports after every stop, whichever side of the wrap
 * the stop lands on.  Skips on units with multi-entry ToPA.
 */
#define _GNU_SOURCE
#include <sys/mman.h>
#include <time.h>

#include "ipt_lib.h"
#include "kselftest_harness.h"

#define KIB 1024ULL
#define MIB (1024 * KIB)
/* The simulator's PMI comes this many bytes early (ipt_sim.h). */
#define SIM_PMI_EARLY 256

static void msleep(unsigned int ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

FIXTURE(topa1) {
	int fd;
	struct ipt_caps caps;
};

FIXTURE_SETUP(topa1)
{
	if (!ipt_sim_loaded())
		SKIP(return, "the simulated unit (ipt_sim) is not loaded");
	self->fd = open(IPT_DEVICE_PATH, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, self->fd);
	self->caps.size = sizeof(self->caps);
	ASSERT_EQ(0, ipt_ioctl(self->fd, IPT_IOC_GET_CAPS, &self->caps));
	if (self->caps.features & IPT_FEAT_TOPA_MULTI)
		SKIP(return, "the unit has multi-entry ToPA (load ipt_sim model=glm)");
	ASSERT_EQ(0, ipt_sim_set_rate(1 * MIB));
}

FIXTURE_TEARDOWN(topa1)
{
	if (self->fd >= 0)
		close(self->fd);
	ipt_sim_set_rate(1 * MIB);
}

TEST_F(topa1, one_region_per_buffer)
{
	uint64_t mask[1] = { 0 }, max = self->caps.max_trace_size;
	struct ipt_trace_state ts;
	struct ipt_config c;
	uint32_t orders[4] = { 0 };

	/* The largest contiguous chunk, a power of two. */
	EXPECT_NE(0ULL, max);
	EXPECT_EQ(0ULL, max & (max - 1));
	EXPECT_LE(4 * KIB, max);
	EXPECT_GE(128 * MIB, max);

	ipt_cfg_cpu(&c, mask, 0, 12 * KIB);
	EXPECT_EQ(-EINVAL, ipt_ioctl(self->fd, IPT_IOC_CONFIGURE, &c));
	ipt_cfg_cpu(&c, mask, 0, 16 * KIB);
	c.chunk_order = 12;
	EXPECT_EQ(-EINVAL, ipt_ioctl(self->fd, IPT_IOC_CONFIGURE, &c));
	ipt_cfg_cpu(&c, mask, 0, 2 * max);
	EXPECT_EQ(-EFBIG, ipt_ioctl(self->fd, IPT_IOC_CONFIGURE, &c));

	ipt_cfg_cpu(&c, mask, 0, 16 * KIB);
	c.chunk_order = 14;
	ASSERT_EQ(0, ipt_ioctl(self->fd, IPT_IOC_CONFIGURE, &c));
	memset(&ts, 0, sizeof(ts));
	ts.size = sizeof(ts);
	ts.chunks_ptr = (uintptr_t)orders;
	ts.chunks_len = 4;
	ASSERT_EQ(0, ipt_ioctl(self->fd, IPT_IOC_GET_TRACE, &ts));
	EXPECT_EQ(1U, ts.nr_chunks);
	EXPECT_EQ(1U, ts.nr_tables);
	EXPECT_EQ(14U, orders[0]);
	ASSERT_EQ(0, ipt_cmd(self->fd, IPT_IOC_RELEASE));
}

/* Stop-on-full: STOP on the one region; exactly its bytes. */
TEST_F_TIMEOUT(topa1, stop_on_full, 120)
{
	uint64_t mask[1] = { 0 }, before;
	struct ipt_trace_state ts;
	struct ipt_config c;
	unsigned long psbs;
	size_t gap;
	uint8_t *p;
	int i;

	ipt_cfg_cpu(&c, mask, 0, 16 * KIB);
	c.buffer_flags = IPT_BUFFER_STOP_ON_FULL;
	ASSERT_EQ(0, ipt_ioctl(self->fd, IPT_IOC_CONFIGURE, &c));
	before = ipt_sim_stat(0, "bytes");
	ASSERT_EQ(0, ipt_cmd(self->fd, IPT_IOC_START));
	for (i = 0; i < 3000 && ipt_sim_stat(0, "bytes") - before < 16 * KIB; i++)
		msleep(10);
	/*
	 * Nothing more comes: the unit says so itself (STATUS.Stopped at
	 * the STOP entry, or TraceEn off), so the counts below are final.
	 */
	EXPECT_EQ(0, ipt_sim_wait_quiet(0));
	ASSERT_EQ(0, ipt_cmd(self->fd, IPT_IOC_STOP));
	ASSERT_EQ(0, ipt_state(self->fd, 0, &ts));
	EXPECT_EQ(IPT_TS_STOP_ON_FULL | IPT_TS_FULL, ts.status);
	EXPECT_EQ(16 * KIB, ts.bytes_captured);
	EXPECT_EQ(16 * KIB, ts.head);
	EXPECT_EQ(ts.bytes_captured, ipt_sim_stat(0, "bytes") - before);
	EXPECT_EQ(0, ipt_sim_stat(0, "op_errors"));
	p = mmap(NULL, ts.buffer_size, PROT_READ, MAP_SHARED, self->fd, ts.mmap_offset);
	ASSERT_NE(MAP_FAILED, p);
	EXPECT_TRUE(ipt_is_psb(p, ts.buffer_size));
	EXPECT_LT(ts.buffer_size - 64, ipt_parse(p, ts.buffer_size, &psbs, &gap));
	munmap(p, ts.buffer_size);
	ASSERT_EQ(0, ipt_cmd(self->fd, IPT_IOC_RELEASE));
}

/*
 * A 4 KiB ring stopped over and over at arbitrary points: after each
 * stop the wrap count and the position add up to the unit's byte count,
 * also when the stop lands between the early PMI and the wrap it
 * announces.  Runs until that case was seen a few times.
 */
TEST_F_TIMEOUT(topa1, ring_wrap_count_exact_around_the_early_pmi, 240)
{
	uint64_t mask[1] = { 0 }, before, size = 4 * KIB;
	struct ipt_trace_state ts;
	struct ipt_config c;
	int cycles, in_window = 0;

	ipt_cfg_cpu(&c, mask, 0, size);
	ASSERT_EQ(0, ipt_ioctl(self->fd, IPT_IOC_CONFIGURE, &c));
	/*
	 * About 2000 bytes per 1 ms tick: under half the ring, so that each
	 * PMI is handled before the next is raised (two raised while one is
	 * pending are one PMI, on silicon as here; see abi.rst).
	 */
	ASSERT_EQ(0, ipt_sim_set_rate(2000000));
	before = ipt_sim_stat(0, "bytes");
	srand(1);
	for (cycles = 0; cycles < 400 && in_window < 3; cycles++) {
		ASSERT_EQ(0, ipt_cmd(self->fd, IPT_IOC_START));
		msleep(1 + rand() % 7);
		ASSERT_EQ(0, ipt_cmd(self->fd, IPT_IOC_STOP));
		ASSERT_EQ(0, ipt_state(self->fd, 0, &ts));
		ASSERT_EQ(ipt_sim_stat(0, "bytes") - before, ts.bytes_captured)
			TH_LOG("stop %d: head %llu, %llu wraps", cycles,
			       (unsigned long long)ts.head,
			       (unsigned long long)ts.wrap_count);
		ASSERT_EQ(ts.bytes_captured / size, ts.wrap_count);
		ASSERT_EQ(ts.bytes_captured % size, ts.head);
		if (ts.wrap_count && ts.head >= size - SIM_PMI_EARLY)
			in_window++;
	}
	TH_LOG("%d stops, %d of them between an early PMI and its wrap",
	       cycles, in_window);
	EXPECT_LT(0, in_window);
	EXPECT_EQ(0, ipt_sim_stat(0, "op_errors"));
	ASSERT_EQ(0, ipt_cmd(self->fd, IPT_IOC_RELEASE));
}

TEST_HARNESS_MAIN
