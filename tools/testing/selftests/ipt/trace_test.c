// SPDX-License-Identifier: GPL-2.0
/*
 * kselftest: trace data through the simulated PT unit - stop-on-full,
 * rings and their wrap count, multi-table ToPA chains, every CPU, CPU
 * hotplug in mid-trace, close while tracing.
 *
 * The simulator counts the bytes it writes per CPU (debugfs cpuN/stats
 * "bytes"): the driver's bytes_captured must equal that count exactly,
 * which checks the position arithmetic and the wrap count together.  The
 * data itself, read through mmap, must parse as PT packets led by PSBs.
 */
#define _GNU_SOURCE
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>

#include "ipt_lib.h"
#include "kselftest_harness.h"
#include "ipt_ptcheck.h"

#define KIB 1024ULL
#define MIB (1024 * KIB)

static void msleep(unsigned int ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

static int nr_cpus(void)
{
	return sysconf(_SC_NPROCESSORS_CONF);
}

/*
 * Wait until the unit of @cpu wrote @want bytes since @before (the sim is
 * much slower on a debug kernel under TCG than its nominal rate): the
 * counter wait of ipt_lib.h, at most 30 s.  Returns whether it got there.
 */
static int wait_bytes(int cpu, uint64_t before, uint64_t want)
{
	return !ipt_sim_wait_stat(cpu, "bytes", before + want);
}

/*
 * Feed the unit of @cpu big records of branch content (TNT-8 bytes of the
 * built-in loop), so that megabytes are written quickly even on a debug
 * kernel: the simulator copies a record in one piece.  Tops up what the
 * feed has room for; @reset starts a new feed.
 */
#define FEED_REC 60000

static void feed_top_up(int cpu, int reset)
{
	static uint8_t rec[16 + FEED_REC];
	int fd = ipt_sim_feed_open(cpu, reset);

	if (fd < 0)
		return;
	ipt_sim_feed_tnt_rec(rec, FEED_REC);
	while (write(fd, rec, sizeof(rec)) == sizeof(rec))
		;
	close(fd);
}

/* wait_bytes() for a fed CPU: keeps the feed topped up. */
static int wait_fed_bytes(int cpu, uint64_t before, uint64_t want)
{
	int i;

	for (i = 0; i < 3000; i++) {
		if (ipt_sim_stat(cpu, "bytes") - before >= want)
			return 1;
		feed_top_up(cpu, 0);
		msleep(10);
	}
	return 0;
}

FIXTURE(sim) {
	int fd;
};

FIXTURE_SETUP(sim)
{
	if (!ipt_sim_loaded())
		SKIP(return, "the simulated unit (ipt_sim) is not loaded");
	self->fd = open(IPT_DEVICE_PATH, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, self->fd);
	ASSERT_EQ(0, ipt_sim_set_rate(1 * MIB));
	/* A test killed by the harness leaves its teardown undone. */
	ipt_sim_feed_off(0);
}

FIXTURE_TEARDOWN(sim)
{
	if (self->fd >= 0)
		close(self->fd);
	ipt_sim_set_rate(1 * MIB);
	ipt_sim_feed_off(0);
}

/* Map one trace's buffer. */
static uint8_t *map_trace(int fd, const struct ipt_trace_state *ts)
{
	void *p = mmap(NULL, ts->buffer_size, PROT_READ, MAP_SHARED, fd,
		       ts->mmap_offset);

	return p == MAP_FAILED ? NULL : p;
}

/* Stop-on-full keeps exactly the first buffer_size bytes, PSB first. */
TEST_F_TIMEOUT(sim, stop_on_full_holds_the_first_bytes, 120)
{
	struct ipt_config cfg;
	struct ipt_trace_state ts;
	uint64_t mask[1] = { 0 }, before;
	unsigned long psbs;
	size_t gap;
	uint8_t *p;

	ipt_cfg_cpu(&cfg, mask, 0, 16 * KIB);
	cfg.buffer_flags = IPT_BUFFER_STOP_ON_FULL;
	ASSERT_EQ(0, ipt_ioctl(self->fd, IPT_IOC_CONFIGURE, &cfg));
	before = ipt_sim_stat(0, "bytes");
	ASSERT_EQ(0, ipt_cmd(self->fd, IPT_IOC_START));
	EXPECT_TRUE(wait_bytes(0, before, 16 * KIB));
	/*
	 * Nothing more comes: the unit says so itself (STATUS.Stopped at
	 * the STOP entry, or TraceEn off), so the counts below are final.
	 */
	EXPECT_EQ(0, ipt_sim_wait_quiet(0));
	ASSERT_EQ(0, ipt_cmd(self->fd, IPT_IOC_STOP));
	ASSERT_EQ(0, ipt_state(self->fd, 0, &ts));
	EXPECT_EQ(IPT_STATE_STOPPED, ts.state);
	EXPECT_EQ(IPT_TS_STOP_ON_FULL | IPT_TS_FULL, ts.status);
	EXPECT_EQ(16 * KIB, ts.head);
	EXPECT_EQ(16 * KIB, ts.bytes_captured);
	EXPECT_EQ(16 * KIB, ts.bytes_valid);
	EXPECT_EQ(0, ts.wrap_count);
	EXPECT_EQ(ts.bytes_captured, ipt_sim_stat(0, "bytes") - before);

	p = map_trace(self->fd, &ts);
	ASSERT_NE(NULL, p);
	EXPECT_TRUE(ipt_is_psb(p, ts.buffer_size));
	/* Output stopped inside a packet group: all but the tail parses. */
	EXPECT_LT(ts.buffer_size - 64, ipt_parse(p, ts.buffer_size, &psbs, &gap));
	EXPECT_LE(4, psbs);
	EXPECT_GT(4 * KIB, gap);
	munmap(p, ts.buffer_size);
	ASSERT_EQ(0, ipt_cmd(self->fd, IPT_IOC_RELEASE));
}


/*
 * A ring: the wrap count matches the unit's byte count exactly, and the
 * bytes from the first PSB after the oldest byte up to the newest parse
 * as packets, ending on the FUP + TIP.PGD of the stop.  With @decode,
 * libipt also decodes the instructions across the point where the ring
 * wrapped; that needs a PSB between the oldest byte and that point and a
 * few KiB after it, which depends on where the unit stopped: returns
 * false (after the other checks) when there are not, for the caller to
 * trace on and look again.
 */
static bool ring_check(struct __test_metadata *_metadata, int fd, int cpu,
		       uint64_t before, size_t psb_within, bool decode)
{
	struct ipt_trace_state ts;
	unsigned long psbs;
	uint8_t *p, *lin;
	size_t gap, i, start;
	long parsed;

	ASSERT_EQ(0, ipt_state(fd, cpu, &ts));
	EXPECT_EQ(0, ts.status & ~(IPT_TS_WRAPPED));
	ASSERT_EQ(ts.bytes_captured, ipt_sim_stat(cpu, "bytes") - before);
	ASSERT_LT(ts.buffer_size, ts.bytes_captured) TH_LOG("did not wrap");
	EXPECT_EQ(IPT_TS_WRAPPED, ts.status);
	EXPECT_EQ(ts.bytes_captured / ts.buffer_size, ts.wrap_count);
	EXPECT_EQ(ts.bytes_captured % ts.buffer_size, ts.head);
	EXPECT_EQ(ts.head, ts.oldest);
	EXPECT_EQ(ts.buffer_size, ts.bytes_valid);
	EXPECT_EQ(ts.bytes_captured - ts.buffer_size, ts.bytes_lost);

	p = map_trace(fd, &ts);
	ASSERT_NE(NULL, p);
	/* Oldest to newest, in order. */
	lin = malloc(ts.buffer_size);
	ASSERT_NE(NULL, lin);
	memcpy(lin, p + ts.oldest, ts.buffer_size - ts.oldest);
	memcpy(lin + ts.buffer_size - ts.oldest, p, ts.oldest);
	for (start = 0; start < ts.buffer_size; start++)
		if (ipt_is_psb(lin + start, ts.buffer_size - start))
			break;
	ASSERT_GT(psb_within, start);
	parsed = ipt_parse(lin + start, ts.buffer_size - start, &psbs, &gap);
	EXPECT_EQ((long)(ts.buffer_size - start), parsed);
	EXPECT_LE(2, psbs);
	/* The newest packets: FUP (IPBytes 011) and TIP.PGD without IP. */
	i = ts.buffer_size;
	EXPECT_EQ(0x01, lin[i - 1]);
	EXPECT_EQ(0x7d, lin[i - 8]);
	if (decode) {
		/*
		 * Every packet of the ring, then the instruction flow from the
		 * last PSB at or before the physical end of the buffer (where
		 * the last table's END led back to the first) to 32 KiB past
		 * it, so the decode crosses the wrap (decoding all of it is
		 * tens of millions of instructions: too slow under TCG).
		 */
		size_t wrap = ts.buffer_size - ts.oldest, from, len, past;

		ipt_ptcheck(_metadata, fd, lin, ts.buffer_size, false, 0, "--min-psb 2");
		if (start >= wrap) {
			TH_LOG("no PSB between the oldest byte and the wrap at %zu", wrap);
			free(lin);
			munmap(p, ts.buffer_size);
			return false;
		}
		for (from = wrap; from > start; from--)
			if (ipt_is_psb(lin + from, ts.buffer_size - from))
				break;
		past = ts.buffer_size - wrap;
		if (past > 32 * KIB)
			past = 32 * KIB;
		if (past < 4 * KIB) {
			TH_LOG("only %zu bytes past the wrap at %zu", past, wrap);
			free(lin);
			munmap(p, ts.buffer_size);
			return false;
		}
		len = wrap - from + past;
		TH_LOG("decoding %zu bytes from PSB at %zu across the wrap at %zu",
		       len, from, wrap);
		/*
		 * Apart from a PSB+ or two, every byte is a TNT-8 of six
		 * branches: at least six instructions a byte, and no decode
		 * error anywhere (ptcheck) means it went through the wrap.
		 */
		ipt_ptcheck(_metadata, fd, lin + from, len, true,
			     6 * (len - 256), "--min-psb 1");
	}
	free(lin);
	munmap(p, ts.buffer_size);
	return true;
}

TEST_F_TIMEOUT(sim, ring_keeps_the_newest_bytes_and_counts_wraps, 120)
{
	struct ipt_config cfg;
	uint64_t mask[1] = { 0 }, before;

	ipt_cfg_cpu(&cfg, mask, 0, 8 * KIB);
	cfg.chunk_order = 12;
	cfg.buffer_flags = IPT_BUFFER_EXACT_CHUNKS;
	ASSERT_EQ(0, ipt_ioctl(self->fd, IPT_IOC_CONFIGURE, &cfg));
	before = ipt_sim_stat(0, "bytes");
	ASSERT_EQ(0, ipt_cmd(self->fd, IPT_IOC_START));
	EXPECT_TRUE(wait_bytes(0, before, 5 * 8 * KIB + 1000));
	ASSERT_EQ(0, ipt_cmd(self->fd, IPT_IOC_STOP));
	ring_check(_metadata, self->fd, 0, before, 4 * KIB, false);

	/* Start again from where it stopped: counts go on. */
	ASSERT_EQ(0, ipt_cmd(self->fd, IPT_IOC_START));
	EXPECT_TRUE(wait_bytes(0, before, 7 * 8 * KIB + 3000));
	ASSERT_EQ(0, ipt_cmd(self->fd, IPT_IOC_STOP));
	ring_check(_metadata, self->fd, 0, before, 4 * KIB, false);
	ASSERT_EQ(0, ipt_cmd(self->fd, IPT_IOC_RELEASE));
}

/* 600 chunks of 4 KiB: two ToPA tables, linked both ways. */
TEST_F_TIMEOUT(sim, multi_table_chain, 120)
{
	struct ipt_config cfg;
	struct ipt_trace_state ts;
	uint64_t mask[1] = { 0 }, before, size = 600 * 4 * KIB;
	uint32_t orders[601];
	unsigned long psbs;
	size_t gap;
	uint8_t *p;
	int i;

	ipt_cfg_cpu(&cfg, mask, 0, size);
	cfg.chunk_order = 12;
	cfg.buffer_flags = IPT_BUFFER_EXACT_CHUNKS | IPT_BUFFER_STOP_ON_FULL;
	ASSERT_EQ(0, ipt_ioctl(self->fd, IPT_IOC_CONFIGURE, &cfg));
	ASSERT_EQ(0, ipt_sim_set_rate(32 * MIB));
	feed_top_up(0, 1);
	before = ipt_sim_stat(0, "bytes");
	ASSERT_EQ(0, ipt_cmd(self->fd, IPT_IOC_START));
	EXPECT_TRUE(wait_fed_bytes(0, before, size));
	ASSERT_EQ(0, ipt_cmd(self->fd, IPT_IOC_STOP));

	memset(&ts, 0, sizeof(ts));
	ts.size = sizeof(ts);
	ts.chunks_ptr = (uintptr_t)orders;
	ts.chunks_len = 601;
	orders[600] = 0xdead;
	ASSERT_EQ(0, ipt_ioctl(self->fd, IPT_IOC_GET_TRACE, &ts));
	EXPECT_EQ(600, ts.nr_chunks);
	EXPECT_EQ(2, ts.nr_tables);
	for (i = 0; i < 600; i++) {
		ASSERT_EQ(12, orders[i]);
	}
	EXPECT_EQ(0xdead, orders[600]);
	EXPECT_EQ(IPT_TS_STOP_ON_FULL | IPT_TS_FULL, ts.status);
	EXPECT_EQ(size, ts.bytes_captured);
	EXPECT_EQ(size, ipt_sim_stat(0, "bytes") - before);
	p = map_trace(self->fd, &ts);
	ASSERT_NE(NULL, p);
	EXPECT_LT(size - 64, ipt_parse(p, size, &psbs, &gap));
	/* The feed's records are 60000 bytes, PSB+ between them. */
	EXPECT_LE(size / (64 * KIB), psbs);
	munmap(p, size);
}

/*
 * A ring across two tables wraps through both END links.  The feed puts
 * a PSB+ only every 60000 bytes, so a stop can leave none between the
 * oldest byte and the wrap point, or too few bytes after it: then trace
 * on (the counts go on) and look again.
 */
/* libipt decoding under TCG on a debug kernel needs more than 30 s. */
TEST_F_TIMEOUT(sim, multi_table_ring, 300)
{
	struct ipt_config cfg;
	uint64_t mask[1] = { 0 }, before, size = 520 * 4 * KIB;
	struct ipt_trace_state ts;
	int stops;

	ipt_cfg_cpu(&cfg, mask, 0, size);
	cfg.chunk_order = 12;
	cfg.buffer_flags = IPT_BUFFER_EXACT_CHUNKS;
	ASSERT_EQ(0, ipt_ioctl(self->fd, IPT_IOC_CONFIGURE, &cfg));
	ASSERT_EQ(0, ipt_sim_set_rate(32 * MIB));
	feed_top_up(0, 1);
	before = ipt_sim_stat(0, "bytes");
	for (stops = 1; ; stops++) {
		ASSERT_EQ(0, ipt_cmd(self->fd, IPT_IOC_START));
		EXPECT_TRUE(wait_fed_bytes(0, before, size + stops * size / 2));
		ASSERT_EQ(0, ipt_cmd(self->fd, IPT_IOC_STOP));
		ASSERT_EQ(0, ipt_state(self->fd, 0, &ts));
		EXPECT_EQ(2, ts.nr_tables);
		if (ring_check(_metadata, self->fd, 0, before, 64 * KIB, true))
			break;
		ASSERT_GT(10, stops)
			TH_LOG("no stop left a PSB before the wrap point and 4 KiB after it");
	}
}

/* Every CPU at once: buffers laid out one after the other in mmap space. */
TEST_F_TIMEOUT(sim, all_cpus, 120)
{
	struct ipt_config cfg;
	struct ipt_trace_state ts;
	uint64_t mask[1] = { 0 }, before[64], off = 0;
	int n = nr_cpus(), cpu;

	if (n > 64)
		n = 64;
	ipt_cfg_cpu(&cfg, mask, 0, 8 * KIB);
	cfg.flags = IPT_CONFIG_ALL_CPUS;
	cfg.cpu_mask_words = 0;
	cfg.cpu_mask_ptr = 0;
	ASSERT_EQ(0, ipt_ioctl(self->fd, IPT_IOC_CONFIGURE, &cfg));
	for (cpu = 0; cpu < n; cpu++)
		before[cpu] = ipt_sim_stat(cpu, "bytes");
	ASSERT_EQ(0, ipt_cmd(self->fd, IPT_IOC_START));
	for (cpu = 0; cpu < n; cpu++) {
		ASSERT_EQ(0, ipt_state(self->fd, cpu, &ts));
		EXPECT_EQ(IPT_TS_RUNNING, ts.status);
		EXPECT_EQ(IPT_STATE_TRACING, ts.state);
	}
	for (cpu = 0; cpu < n; cpu++)
		EXPECT_TRUE(wait_bytes(cpu, before[cpu], 2 * 8 * KIB + 1000));
	ASSERT_EQ(0, ipt_cmd(self->fd, IPT_IOC_STOP));
	for (cpu = 0; cpu < n; cpu++) {
		ASSERT_EQ(0, ipt_state(self->fd, cpu, &ts));
		EXPECT_EQ(off, ts.mmap_offset);
		off += ts.buffer_size;
		ring_check(_metadata, self->fd, cpu, before[cpu], 4 * KIB, false);
	}
	EXPECT_EQ(-ENOENT, ipt_state(self->fd, n, &ts));
}

/*
 * The last CPU goes offline in mid-trace: it stops with its data kept,
 * comes back, and resumes into the same buffer; the byte count stays
 * exact across it.
 */
TEST_F_TIMEOUT(sim, hotplug_off_and_on, 120)
{
	struct ipt_config cfg;
	struct ipt_trace_state ts;
	uint64_t mask[1] = { 0 }, before, at_off;
	int cpu = nr_cpus() - 1;

	if (cpu < 1 || access("/sys/devices/system/cpu/cpu1/online", W_OK))
		SKIP(return, "needs a second CPU that can go offline");
	ipt_cfg_cpu(&cfg, mask, cpu, 8 * KIB);
	ASSERT_EQ(0, ipt_ioctl(self->fd, IPT_IOC_CONFIGURE, &cfg));
	before = ipt_sim_stat(cpu, "bytes");
	ASSERT_EQ(0, ipt_cmd(self->fd, IPT_IOC_START));
	EXPECT_TRUE(wait_bytes(cpu, before, 4 * KIB));
	ASSERT_EQ(0, ipt_cpu_online_set(cpu, 0));
	ASSERT_EQ(0, ipt_state(self->fd, cpu, &ts));
	EXPECT_EQ(IPT_STATE_TRACING, ts.state);
	EXPECT_EQ(0, ts.status & IPT_TS_RUNNING);
	at_off = ts.bytes_captured;
	EXPECT_EQ(at_off, ipt_sim_stat(cpu, "bytes") - before);
	EXPECT_LT(0, at_off);
	/*
	 * The unit of the offline CPU is off (TraceEn clear), so no byte can
	 * follow.  The sleep only gives a wrongly re-enabled unit time to
	 * show itself: on a slow host it may miss that bug, but it cannot
	 * fail unless the kernel is wrong.
	 */
	EXPECT_EQ(0, ipt_sim_stat(cpu, "ctl") & 1);
	msleep(50);
	EXPECT_EQ(at_off, ipt_sim_stat(cpu, "bytes") - before);
	ASSERT_EQ(0, ipt_cpu_online_set(cpu, 1));
	ASSERT_EQ(0, ipt_state(self->fd, cpu, &ts));
	EXPECT_EQ(IPT_TS_RUNNING, ts.status & IPT_TS_RUNNING);
	EXPECT_TRUE(wait_bytes(cpu, before, at_off + 2 * 8 * KIB + 1000));
	ASSERT_EQ(0, ipt_cmd(self->fd, IPT_IOC_STOP));
	ring_check(_metadata, self->fd, cpu, before, 4 * KIB, false);
	ASSERT_EQ(0, ipt_state(self->fd, cpu, &ts));
	EXPECT_LT(at_off, ts.bytes_captured);

	/* Offline while stopped, then a new start skips it until online. */
	ASSERT_EQ(0, ipt_cpu_online_set(cpu, 0));
	ASSERT_EQ(0, ipt_cmd(self->fd, IPT_IOC_START));
	ASSERT_EQ(0, ipt_state(self->fd, cpu, &ts));
	EXPECT_EQ(0, ts.status & IPT_TS_RUNNING);
	ASSERT_EQ(0, ipt_cpu_online_set(cpu, 1));
	ASSERT_EQ(0, ipt_state(self->fd, cpu, &ts));
	EXPECT_EQ(IPT_TS_RUNNING, ts.status & IPT_TS_RUNNING);
	ASSERT_EQ(0, ipt_cmd(self->fd, IPT_IOC_STOP));
}

/* Closing while tracing stops every unit and frees the unit for others. */
TEST_F_TIMEOUT(sim, close_while_tracing, 120)
{
	struct ipt_config cfg;
	uint64_t mask[1] = { 0 }, bytes;
	int fd2;

	ipt_cfg_cpu(&cfg, mask, 0, 8 * KIB);
	ASSERT_EQ(0, ipt_ioctl(self->fd, IPT_IOC_CONFIGURE, &cfg));
	bytes = ipt_sim_stat(0, "bytes");
	ASSERT_EQ(0, ipt_cmd(self->fd, IPT_IOC_START));
	/* Closed while the unit really writes: past its first PSB+. */
	EXPECT_TRUE(wait_bytes(0, bytes, 1 * KIB));
	fd2 = open(IPT_DEVICE_PATH, O_RDWR);
	ASSERT_LE(0, fd2);
	EXPECT_EQ(-EBUSY, ipt_ioctl(fd2, IPT_IOC_CONFIGURE, &cfg));
	close(self->fd);
	self->fd = -1;
	EXPECT_EQ(0, ipt_sim_stat(0, "ctl") & 1);
	/*
	 * TraceEn is clear: no byte can follow.  The sleep only gives a
	 * wrongly re-enabled unit time to show itself; it cannot fail
	 * unless the kernel is wrong.
	 */
	bytes = ipt_sim_stat(0, "bytes");
	msleep(20);
	EXPECT_EQ(bytes, ipt_sim_stat(0, "bytes"));
	EXPECT_EQ(0, ipt_ioctl(fd2, IPT_IOC_CONFIGURE, &cfg));
	close(fd2);
}

static void sim_write(struct __test_metadata *_metadata, int cpu, const char *file,
		      const char *val)
{
	char path[96];

	snprintf(path, sizeof(path), IPT_SIM_DEBUGFS "/cpu%d/%s", cpu, file);
	ASSERT_EQ(0, ipt_write_file(path, val));
}

/*
 * An operational error (debugfs force_error sets STATUS.Error, as a bad
 * ToPA would on silicon): output ends, and the trace state says so; what
 * was written before still counts exactly.
 */
TEST_F_TIMEOUT(sim, operational_error_is_reported, 120)
{
	struct ipt_config cfg;
	struct ipt_trace_state ts;
	uint64_t mask[1] = { 0 }, before, after;

	ipt_cfg_cpu(&cfg, mask, 0, 256 * KIB);
	ASSERT_EQ(0, ipt_ioctl(self->fd, IPT_IOC_CONFIGURE, &cfg));
	ASSERT_EQ(0, ipt_sim_set_rate(32 * MIB));
	feed_top_up(0, 1);
	before = ipt_sim_stat(0, "bytes");
	ASSERT_EQ(0, ipt_cmd(self->fd, IPT_IOC_START));
	EXPECT_TRUE(wait_fed_bytes(0, before, 16 * KIB));
	sim_write(_metadata, 0, "force_error", "1");
	after = ipt_sim_stat(0, "bytes");
	/*
	 * Nothing more is written once the unit is in error: the unit says
	 * it is (STATUS.Error, or TraceEn off once the driver saw it), and
	 * the sleep only gives a unit that wrongly goes on time to show
	 * itself; it cannot fail unless the kernel or the unit is wrong.
	 */
	EXPECT_EQ(1, ipt_sim_unit_quiet(0));
	msleep(50);
	EXPECT_EQ(after, ipt_sim_stat(0, "bytes"));
	ASSERT_EQ(0, ipt_cmd(self->fd, IPT_IOC_STOP));
	ASSERT_EQ(0, ipt_state(self->fd, 0, &ts));
	EXPECT_TRUE(ts.status & IPT_TS_ERROR) TH_LOG("status %#llx",
						     (unsigned long long)ts.status);
	EXPECT_EQ(after - before, ts.bytes_captured);
	ASSERT_EQ(0, ipt_cmd(self->fd, IPT_IOC_RELEASE));
}

/*
 * Bytes the unit had to drop (debugfs drop) show up as an OVF packet in the
 * captured trace, and libipt decodes through it: it resynchronises at the
 * OVF and the instruction flow continues.
 */
TEST_F_TIMEOUT(sim, dropped_bytes_become_an_ovf_libipt_decodes, 180)
{
	struct ipt_config cfg;
	struct ipt_trace_state ts;
	uint64_t mask[1] = { 0 }, before, size = 64 * KIB;
	uint8_t *p;

	ipt_cfg_cpu(&cfg, mask, 0, size);
	cfg.buffer_flags = IPT_BUFFER_STOP_ON_FULL;
	ASSERT_EQ(0, ipt_ioctl(self->fd, IPT_IOC_CONFIGURE, &cfg));
	/*
	 * The built-in loop, slowly: its packet groups are small and follow
	 * the rate (a feed record is written whole per tick), so the drop
	 * lands mid-buffer.
	 */
	ASSERT_EQ(0, ipt_sim_set_rate(1 * MIB));
	ipt_sim_feed_off(0);
	before = ipt_sim_stat(0, "bytes");
	ASSERT_EQ(0, ipt_cmd(self->fd, IPT_IOC_START));
	EXPECT_TRUE(wait_bytes(0, before, 8 * KIB));
	sim_write(_metadata, 0, "drop", "4096");
	ASSERT_GT(size, ipt_sim_stat(0, "bytes") - before) TH_LOG("full before the drop");
	EXPECT_TRUE(wait_bytes(0, before, size));
	ASSERT_EQ(0, ipt_cmd(self->fd, IPT_IOC_STOP));
	ASSERT_EQ(0, ipt_state(self->fd, 0, &ts));
	EXPECT_EQ(IPT_TS_STOP_ON_FULL | IPT_TS_FULL, ts.status);
	EXPECT_LE(1, ipt_sim_stat(0, "ovf"));
	p = map_trace(self->fd, &ts);
	ASSERT_NE(NULL, p);
	ipt_ptcheck(_metadata, self->fd, p, size, true, 100000,
		     "--min-psb 2 --min-ovf 1");
	munmap(p, size);
	ASSERT_EQ(0, ipt_cmd(self->fd, IPT_IOC_RELEASE));
}

/*
 * The end-to-end oracle: a real program's execution, recorded by ptgen
 * (tools/testing/groundtruth) as a feed, replayed by the simulated unit
 * while the driver captures it (stop-on-full, ToPA, mmap), must decode
 * with libipt to exactly the instructions the program executed.
 * IPT_GT_DIRS names the ptgen output directories (space-separated);
 * guest-tests sets it.  ptverify (IPT_PTVERIFY overrides
 * /opt/bin/ptverify) is the judge.
 */
TEST_F_TIMEOUT(sim, groundtruth_feed_through_the_driver, 300)
{
	const char *ptverify = getenv("IPT_PTVERIFY") ?: "/opt/bin/ptverify";
	const char *dirs = getenv("IPT_GT_DIRS");
	char *list, *dir, *save = NULL;
	int ndirs = 0;

	if (!dirs || !*dirs)
		SKIP(return, "IPT_GT_DIRS is not set (no ground-truth traces)");
	ASSERT_EQ(0, access(ptverify, X_OK)) TH_LOG("%s: %s", ptverify, strerror(errno));
	list = strdup(dirs);
	ASSERT_NE(NULL, list);
	for (dir = strtok_r(list, " ", &save); dir; dir = strtok_r(NULL, " ", &save)) {
		uint64_t mask[1] = { 0 }, size = 1 * MIB;
		static uint8_t feed[64 * 1024];
		struct ipt_trace_state ts;
		struct ipt_config cfg;
		char path[512], cmd[1024];
		int in, out, i, st;
		ssize_t n;
		uint8_t *p;

		snprintf(path, sizeof(path), "%s/feed.bin", dir);
		in = open(path, O_RDONLY);
		ASSERT_LE(0, in) TH_LOG("%s: %s", path, strerror(errno));
		n = read(in, feed, sizeof(feed));
		close(in);
		ASSERT_LT(0, n);
		ASSERT_GT((ssize_t)sizeof(feed), n) TH_LOG("%s: feed too big for one write", dir);

		ipt_sim_feed_off(0);
		snprintf(path, sizeof(path), IPT_SIM_DEBUGFS "/cpu0/feed");
		out = open(path, O_WRONLY);
		ASSERT_LE(0, out);
		ASSERT_EQ(n, write(out, feed, n));
		close(out);

		ipt_cfg_cpu(&cfg, mask, 0, size);
		cfg.buffer_flags = IPT_BUFFER_STOP_ON_FULL;
		ASSERT_EQ(0, ipt_ioctl(self->fd, IPT_IOC_CONFIGURE, &cfg));
		ASSERT_EQ(0, ipt_sim_set_rate(1 * MIB));
		ASSERT_EQ(0, ipt_cmd(self->fd, IPT_IOC_START));
		for (i = 0; i < 3000 && !ipt_sim_feed_consumed(0); i++)
			msleep(10);
		EXPECT_EQ(1, ipt_sim_feed_consumed(0))
			TH_LOG("%s: the unit did not use the whole feed", dir);
		ASSERT_EQ(0, ipt_cmd(self->fd, IPT_IOC_STOP));
		ASSERT_EQ(0, ipt_state(self->fd, 0, &ts));
		EXPECT_EQ(0, ts.status & (IPT_TS_FULL | IPT_TS_ERROR | IPT_TS_WRAPPED));
		p = map_trace(self->fd, &ts);
		ASSERT_NE(NULL, p);
		out = open("/tmp/ipt-gt.pt", O_WRONLY | O_CREAT | O_TRUNC, 0600);
		ASSERT_LE(0, out);
		ASSERT_EQ((ssize_t)ts.bytes_captured, write(out, p, ts.bytes_captured));
		close(out);
		munmap(p, ts.buffer_size);
		ASSERT_EQ(0, ipt_cmd(self->fd, IPT_IOC_RELEASE));
		ipt_sim_feed_off(0);

		snprintf(cmd, sizeof(cmd), "%s --trace /tmp/ipt-gt.pt %s >/tmp/ipt-gt.out 2>&1",
			 ptverify, dir);
		st = system(cmd);
		ipt_print_file("# ptverify: ", "/tmp/ipt-gt.out");
		ASSERT_TRUE(WIFEXITED(st));
		EXPECT_EQ(0, WEXITSTATUS(st)) TH_LOG("%s: captured trace != ground truth", dir);
		ndirs++;
	}
	free(list);
	EXPECT_LT(0, ndirs);
}

TEST_HARNESS_MAIN
