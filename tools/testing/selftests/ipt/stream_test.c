// SPDX-License-Identifier: GPL-2.0
/*
 * kselftest: streaming (IPT_BUFFER_STREAM) on a per-CPU trace.
 *
 * The ABI's error paths (every errno of CONFIGURE's streaming fields,
 * IPT_IOC_STREAM_RELEASE and IPT_IOC_GET_GAPS, with no state change);
 * then, on the simulated unit, whose counters say exactly what it wrote
 * (bytes, and a position-weighted checksum of them) and what it could not
 * write while Stopped at STOP (stopped):
 *  - lossless: a paced program (sim cpuN/pace: it blocks rather than run
 *    into STOP) streams more than ten buffers to a consumer that falls
 *    behind on purpose now and then; never a pause or a gap, and the
 *    bytes read are the bytes the unit wrote, in order;
 *  - the same at 256 MiB/s in the sim's bulk mode, and libipt (ptcheck)
 *    decodes the whole stream;
 *  - overload: a consumer that releases only when the test says so; the
 *    unit pauses at STOP, and the gaps' bytes_lost add up to what the unit
 *    produced minus what was delivered;
 *  - several regions a tick (one PMI for them): the ready position is
 *    where the unit is, exact at every pause;
 *  - poll() readiness, on a fed program that writes a known amount, and a
 *    release while paused resumes the unit;
 *  - CPU hotplug: a paused CPU going offline closes its gap, a release
 *    while it is offline rearms it, and it resumes when it comes back;
 *  - faults (sim cpuN/gp_ctl): a stop that faults changes nothing, a
 *    restart that faults leaves the release done and the trace cut; per
 *    thread too, on the CPU a running thread is loaded on (gp_ctl bit 2:
 *    the cross-CPU call's and the PMI's writes, not a switch's);
 *  - the unit's internal buffer (sim cpuN/hold): what is announced is in
 *    memory;
 *  - a poller blocked in another thread wakes on a release that changes
 *    what is ready, and sees EPOLLHUP when the session stops or ends;
 *    and when a traced thread exits with less than a region written.
 * Every wait is on an event (poll(), a state, a counter), bounded at 30 s.
 */
#define _GNU_SOURCE
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>

#include "ipt_lib.h"
#include "ipt_poller.h"
#include "kselftest_harness.h"
#include "ipt_ptcheck.h"

#define KIB 1024ULL
#define MIB (1024 * KIB)
/* Polls of a state or counter, 10 ms apart: a 30 s bound. */
#define POLLS IPT_POLLS
#define POLL_MS IPT_POLL_MS
#define CSUM_WEIGHT(i) ((2 * (uint64_t)(i) + 1) * 0x9e3779b97f4a7c15ULL)

static void msleep(unsigned int ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

static void cfg_stream(struct ipt_config *c, uint64_t *mask, uint64_t size,
		       uint32_t regions)
{
	ipt_cfg_cpu(c, mask, 0, size);
	c->buffer_flags = IPT_BUFFER_STREAM;
	c->nr_regions = regions;
}

static void cfg_thread_stream(struct ipt_config *c, uint64_t size,
			      uint32_t regions)
{
	memset(c, 0, sizeof(*c));
	c->size = sizeof(*c);
	c->mode = IPT_MODE_THREAD;
	c->trace_flags = IPT_TRACE_USER | IPT_TRACE_BRANCH | IPT_TRACE_TSC;
	c->buffer_size = size;
	c->max_threads = 1;
	c->buffer_flags = IPT_BUFFER_STREAM;
	c->nr_regions = regions;
}

static int release(int fd, uint32_t trace, uint64_t pos)
{
	struct ipt_stream_release r = {
		.size = sizeof(r), .trace = trace, .released = pos,
	};

	return ipt_ioctl(fd, IPT_IOC_STREAM_RELEASE, &r);
}

static int get_gaps(int fd, uint32_t trace, uint64_t first,
		    struct ipt_gap *e, uint32_t n, struct ipt_gaps *g)
{
	memset(g, 0, sizeof(*g));
	g->size = sizeof(*g);
	g->trace = trace;
	g->entry_size = sizeof(*e);
	g->first = first;
	g->nr_entries = n;
	g->entries_ptr = (uintptr_t)e;
	return ipt_ioctl(fd, IPT_IOC_GET_GAPS, g);
}

static int sim_cpu_write(int cpu, const char *file, uint64_t v)
{
	char path[128], val[32];

	snprintf(path, sizeof(path), IPT_SIM_DEBUGFS "/cpu%d/%s", cpu, file);
	snprintf(val, sizeof(val), "%llu", (unsigned long long)v);
	return ipt_write_file(path, val);
}

/*
 * Append about @n bytes of branch content (TNT-8 bytes of the built-in
 * loop, in records of FEED_REC) to CPU @cpu's feed; @reset starts a new
 * feed at the loop's end.  The program writes that much and no more.
 */
#define FEED_REC 1024

static int feed_tnt(int cpu, uint64_t n, int reset)
{
	static uint8_t rec[16 + FEED_REC];
	int fd = ipt_sim_feed_open(cpu, reset), ret = 0;

	if (fd < 0)
		return fd;
	ipt_sim_feed_tnt_rec(rec, FEED_REC);
	for (; !ret && n >= FEED_REC; n -= FEED_REC)
		if (write(fd, rec, sizeof(rec)) != sizeof(rec))
			ret = -EIO;
	close(fd);
	return ret;
}

/* Wait until CPU @cpu's program has run its whole feed; 0 on timeout. */
static int wait_feed_done(int cpu)
{
	int i, done;

	for (i = 0; i < POLLS; i++) {
		done = ipt_sim_feed_consumed(cpu);
		if (done)
			return done > 0;
		msleep(10);
	}
	return 0;
}

/* The unit's counters a test compares before and after. */
struct sim_counts {
	uint64_t bytes, stopped, csum;
};

static void sim_counts(struct sim_counts *c)
{
	c->bytes = ipt_sim_stat(0, "bytes");
	c->stopped = ipt_sim_stat(0, "stopped");
	c->csum = ipt_sim_stat(0, "csum");
}

/* A consumer: the mapped buffer and what it has read so far. */
struct consumer {
	const uint8_t *map;
	uint64_t size;
	uint64_t read;		/* stream position read up to */
	uint64_t csum;		/* as the unit's, from index @base on */
	uint64_t base;		/* the unit's byte count at configure */
};

/* Read [c->read, upto) out of the map, into the checksum. */
static void consume(struct consumer *c, uint64_t upto)
{
	for (; c->read < upto; c->read++)
		c->csum += c->map[c->read % c->size] *
			   CSUM_WEIGHT(c->base + c->read);
}

/* Wait until the trace's state has one of @status bits; 0 on timeout. */
static int wait_status(int fd, uint64_t status, struct ipt_trace_state *ts)
{
	int i;

	for (i = 0; i < POLLS; i++) {
		if (!ipt_state(fd, 0, ts) && (ts->status & status))
			return 1;
		msleep(10);
	}
	return 0;
}

static int wait_stat_above(const char *key, uint64_t value)
{
	int i;

	for (i = 0; i < POLLS; i++) {
		if (ipt_sim_stat(0, key) > value)
			return 1;
		msleep(10);
	}
	return 0;
}

static int nr_cpus(void)
{
	return sysconf(_SC_NPROCESSORS_ONLN);
}

static int poll_in(int fd, int ms)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };

	return poll(&p, 1, ms) == 1 && (p.revents & POLLIN);
}

static uint64_t sim_cpu_read(int cpu, const char *file)
{
	char path[128], buf[32] = "";
	FILE *f;

	snprintf(path, sizeof(path), IPT_SIM_DEBUGFS "/cpu%d/%s", cpu, file);
	f = fopen(path, "r");
	if (!f)
		return ~0ULL;
	if (!fgets(buf, sizeof(buf), f))
		buf[0] = 0;
	fclose(f);
	return strtoull(buf, NULL, 0);
}

FIXTURE(stream) {
	int fd;
	struct ipt_caps caps;
	int sim;
};

FIXTURE_SETUP(stream)
{
	self->fd = open(IPT_DEVICE_PATH, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, self->fd);
	self->caps.size = sizeof(self->caps);
	ASSERT_EQ(0, ipt_ioctl(self->fd, IPT_IOC_GET_CAPS, &self->caps));
	if (self->caps.unavailable != IPT_UNAVAIL_NONE)
		SKIP(return, "no PT unit");
	self->sim = ipt_sim_loaded() &&
		    !access(IPT_SIM_DEBUGFS "/cpu0/rate", W_OK);
	if (self->sim) {
		/* A test killed by the harness leaves its teardown undone. */
		ASSERT_EQ(0, ipt_sim_set_rate(1 * MIB));
		ASSERT_EQ(0, sim_cpu_write(0, "rate", 0));
		if (!access(IPT_SIM_DEBUGFS "/bulk", W_OK))
			ASSERT_EQ(0, ipt_write_file(IPT_SIM_DEBUGFS "/bulk", "0"));
		ASSERT_EQ(0, sim_cpu_write(0, "pace", 0));
		ASSERT_EQ(0, sim_cpu_write(0, "gp_ctl", 0));
		ASSERT_EQ(0, sim_cpu_write(0, "hold", 0));
		if (nr_cpus() > 1)
			ASSERT_EQ(0, sim_cpu_write(1, "gp_ctl", 0));
		ipt_sim_feed_off(0);
		/* The per-thread cases pace every CPU. */
		for (int cpu = 1; cpu < nr_cpus(); cpu++)
			sim_cpu_write(cpu, "pace", 0);
	}
}

FIXTURE_TEARDOWN(stream)
{
	if (self->fd >= 0)
		close(self->fd);
	if (self->sim) {
		sim_cpu_write(0, "rate", 0);
		ipt_write_file(IPT_SIM_DEBUGFS "/bulk", "0");
		sim_cpu_write(0, "pace", 0);
		sim_cpu_write(0, "gp_ctl", 0);
		sim_cpu_write(0, "hold", 0);
		if (nr_cpus() > 1)
			sim_cpu_write(1, "gp_ctl", 0);
		ipt_write_file("/sys/module/ipt/parameters/force_msr", "0");
		ipt_sim_feed_off(0);
		ipt_sim_set_rate(1 * MIB);
		for (int cpu = 1; cpu < nr_cpus(); cpu++)
			sim_cpu_write(cpu, "pace", 0);
	}
}

/* Caps offer streaming exactly where ToPA has several entries. */
TEST_F(stream, caps_feature)
{
	EXPECT_EQ(!!(self->caps.features & IPT_FEAT_TOPA_MULTI),
		  !!(self->caps.features & IPT_FEAT_STREAM));
}

/* Every bad streaming configuration is refused, the session left IDLE. */
TEST_F(stream, configure_errors)
{
	uint64_t mask[1] = { 0 };
	struct ipt_trace_state ts;
	struct ipt_config c;

	if (!(self->caps.features & IPT_FEAT_STREAM)) {
		/* A failure here must not hide behind the skip: ASSERT. */
		cfg_stream(&c, mask, 64 * KIB, 0);
		ASSERT_EQ(-EOPNOTSUPP, ipt_ioctl(self->fd, IPT_IOC_CONFIGURE, &c));
		SKIP(return, "no IPT_FEAT_STREAM");
	}
	/* nr_regions without IPT_BUFFER_STREAM */
	ipt_cfg_cpu(&c, mask, 0, 64 * KIB);
	c.nr_regions = 8;
	EXPECT_EQ(-EINVAL, ipt_ioctl(self->fd, IPT_IOC_CONFIGURE, &c));
	/* with stop-on-full */
	cfg_stream(&c, mask, 64 * KIB, 8);
	c.buffer_flags |= IPT_BUFFER_STOP_ON_FULL;
	EXPECT_EQ(-EINVAL, ipt_ioctl(self->fd, IPT_IOC_CONFIGURE, &c));
	/* region counts: not a power of two, below 2, above 64 */
	cfg_stream(&c, mask, 192 * KIB, 3);
	EXPECT_EQ(-EINVAL, ipt_ioctl(self->fd, IPT_IOC_CONFIGURE, &c));
	cfg_stream(&c, mask, 64 * KIB, 1);
	EXPECT_EQ(-EINVAL, ipt_ioctl(self->fd, IPT_IOC_CONFIGURE, &c));
	cfg_stream(&c, mask, 512 * KIB, 128);
	EXPECT_EQ(-EINVAL, ipt_ioctl(self->fd, IPT_IOC_CONFIGURE, &c));
	/* regions not of whole pages */
	cfg_stream(&c, mask, 64 * KIB, 32);
	EXPECT_EQ(-EINVAL, ipt_ioctl(self->fd, IPT_IOC_CONFIGURE, &c));
	cfg_stream(&c, mask, 36 * KIB, 8);
	EXPECT_EQ(-EINVAL, ipt_ioctl(self->fd, IPT_IOC_CONFIGURE, &c));
	/* exact chunks larger than a region: no ToPA entry at its end */
	cfg_stream(&c, mask, 64 * KIB, 8);
	c.buffer_flags |= IPT_BUFFER_EXACT_CHUNKS;
	c.chunk_order = 14;
	EXPECT_EQ(-EINVAL, ipt_ioctl(self->fd, IPT_IOC_CONFIGURE, &c));
	/* per-thread: the same checks */
	cfg_thread_stream(&c, 64 * KIB, 3);
	EXPECT_EQ(-EINVAL, ipt_ioctl(self->fd, IPT_IOC_CONFIGURE, &c));
	/* nothing was configured */
	EXPECT_EQ(-EINVAL, ipt_state(self->fd, 0, &ts));
	/* per-thread streaming is offered with IPT_FEAT_STREAM */
	cfg_thread_stream(&c, 64 * KIB, 8);
	ASSERT_EQ(0, ipt_ioctl(self->fd, IPT_IOC_CONFIGURE, &c));
	/* no thread attached yet: no trace */
	EXPECT_EQ(-ENOENT, release(self->fd, 0, 0));
	ASSERT_EQ(0, ipt_cmd(self->fd, IPT_IOC_RELEASE));

	/* 0 regions: the default; exact chunks of a region are fine */
	cfg_stream(&c, mask, 64 * KIB, 0);
	c.buffer_flags |= IPT_BUFFER_EXACT_CHUNKS;
	c.chunk_order = 13;
	ASSERT_EQ(0, ipt_ioctl(self->fd, IPT_IOC_CONFIGURE, &c));
	ASSERT_EQ(0, ipt_state(self->fd, 0, &ts));
	EXPECT_EQ(IPT_TS_STREAM, ts.status);
	EXPECT_EQ(64 * KIB / IPT_STREAM_DEF_REGIONS, ts.region_size);
	EXPECT_EQ(0, ts.bytes_captured);
	EXPECT_EQ(0, ts.released);
	EXPECT_EQ(0, ts.nr_gaps);
	ASSERT_EQ(0, ipt_cmd(self->fd, IPT_IOC_RELEASE));
	/* a 1 MiB buffer in 64 regions: 4 MiB chunks would not do */
	cfg_stream(&c, mask, 1 * MIB, 64);
	ASSERT_EQ(0, ipt_ioctl(self->fd, IPT_IOC_CONFIGURE, &c));
	ASSERT_EQ(0, ipt_state(self->fd, 0, &ts));
	EXPECT_EQ(16 * KIB, ts.region_size);
	EXPECT_LE(64, ts.nr_chunks);
	ASSERT_EQ(0, ipt_cmd(self->fd, IPT_IOC_RELEASE));
}

/* STREAM_RELEASE and GET_GAPS: each malformed call, its errno, no change. */
TEST_F(stream, release_and_gaps_errors)
{
	struct ipt_stream_release r = { .size = sizeof(r) };
	uint64_t mask[1] = { 0 };
	struct ipt_trace_state ts;
	struct ipt_gap e[2];
	struct ipt_gaps g;
	struct ipt_config c;

	if (!(self->caps.features & IPT_FEAT_STREAM))
		SKIP(return, "no IPT_FEAT_STREAM");
	/* IDLE */
	EXPECT_EQ(-EINVAL, release(self->fd, 0, 0));
	EXPECT_EQ(-EINVAL, get_gaps(self->fd, 0, 0, e, 2, &g));
	/* a session that does not stream */
	ipt_cfg_cpu(&c, mask, 0, 64 * KIB);
	ASSERT_EQ(0, ipt_ioctl(self->fd, IPT_IOC_CONFIGURE, &c));
	EXPECT_EQ(-EINVAL, release(self->fd, 0, 0));
	EXPECT_EQ(-EINVAL, get_gaps(self->fd, 0, 0, e, 2, &g));
	ASSERT_EQ(0, ipt_cmd(self->fd, IPT_IOC_RELEASE));

	cfg_stream(&c, mask, 64 * KIB, 8);
	ASSERT_EQ(0, ipt_ioctl(self->fd, IPT_IOC_CONFIGURE, &c));
	/* nothing captured yet: 0 is the only position */
	EXPECT_EQ(0, release(self->fd, 0, 0));
	EXPECT_EQ(-EINVAL, release(self->fd, 0, 1));
	EXPECT_EQ(-ENOENT, release(self->fd, 1024, 0));
	r.flags = 1;
	EXPECT_EQ(-EINVAL, ipt_ioctl(self->fd, IPT_IOC_STREAM_RELEASE, &r));
	r.flags = 0;
	r.reserved0 = 1;
	EXPECT_EQ(-EINVAL, ipt_ioctl(self->fd, IPT_IOC_STREAM_RELEASE, &r));
	r.reserved0 = 0;
	r.reserved[1] = 1;
	EXPECT_EQ(-EINVAL, ipt_ioctl(self->fd, IPT_IOC_STREAM_RELEASE, &r));
	r.reserved[1] = 0;
	r.size = 8;
	EXPECT_EQ(-EINVAL, ipt_ioctl(self->fd, IPT_IOC_STREAM_RELEASE, &r));

	EXPECT_EQ(0, get_gaps(self->fd, 0, 0, e, 2, &g));
	EXPECT_EQ(0, g.total);
	EXPECT_EQ(0, g.oldest);
	EXPECT_EQ(0, g.nr_entries);
	EXPECT_EQ(-ENOENT, get_gaps(self->fd, 1024, 0, e, 2, &g));
	/* count only: no pointer, no room */
	EXPECT_EQ(0, get_gaps(self->fd, 0, 0, NULL, 0, &g));
	EXPECT_EQ(-EINVAL, get_gaps(self->fd, 0, 0, NULL, 1, &g));
#define GAPS_EINVAL(field, val) do {					\
		memset(&g, 0, sizeof(g));					\
		g.size = sizeof(g);						\
		g.entry_size = sizeof(e[0]);					\
		g.field = val;							\
		EXPECT_EQ(-EINVAL, ipt_ioctl(self->fd, IPT_IOC_GET_GAPS, &g))	\
			TH_LOG("%s = %llu", #field, (unsigned long long)(val)); \
	} while (0)
	GAPS_EINVAL(flags, 1);
	GAPS_EINVAL(reserved0, 1);
	GAPS_EINVAL(total, 1);
	GAPS_EINVAL(oldest, 1);
	GAPS_EINVAL(reserved[0], 1);
	GAPS_EINVAL(entry_size, IPT_GAP_SIZE_VER0 - 1);
	memset(&g, 0, sizeof(g));
	g.size = sizeof(g);
	g.entry_size = 4097;
	EXPECT_EQ(-E2BIG, ipt_ioctl(self->fd, IPT_IOC_GET_GAPS, &g));
	/* the failed calls changed nothing */
	ASSERT_EQ(0, ipt_state(self->fd, 0, &ts));
	EXPECT_EQ(IPT_TS_STREAM, ts.status);
	EXPECT_EQ(0, ts.released);
	ASSERT_EQ(0, ipt_cmd(self->fd, IPT_IOC_RELEASE));
}

/*
 * Configure a stream of @size in @regions on CPU 0, map it and start it;
 * the consumer's checksum starts at the unit's byte count now.
 */
static void stream_start(struct __test_metadata *_metadata, int fd,
			 uint64_t size, uint32_t regions, struct consumer *cons,
			 struct sim_counts *before)
{
	uint64_t mask[1] = { 0 };
	struct ipt_trace_state ts;
	struct ipt_config c;
	void *map;

	cfg_stream(&c, mask, size, regions);
	ASSERT_EQ(0, ipt_ioctl(fd, IPT_IOC_CONFIGURE, &c));
	ASSERT_EQ(0, ipt_state(fd, 0, &ts));
	map = mmap(NULL, size, PROT_READ, MAP_SHARED, fd, ts.mmap_offset);
	ASSERT_NE(MAP_FAILED, map);
	memset(cons, 0, sizeof(*cons));
	cons->map = map;
	cons->size = size;
	sim_counts(before);
	cons->base = before->bytes;
	ASSERT_EQ(0, ipt_cmd(fd, IPT_IOC_START));
}

/*
 * Stop; of the status bits @clear and @set, exactly @set are set then.
 * Read and release what is left; unmap.
 */
static void stream_stop_read(struct __test_metadata *_metadata, int fd,
			     struct consumer *cons, struct ipt_trace_state *ts,
			     uint64_t clear, uint64_t set)
{
	ASSERT_EQ(0, ipt_cmd(fd, IPT_IOC_STOP));
	ASSERT_EQ(0, ipt_state(fd, 0, ts));
	EXPECT_EQ(set, ts->status & (clear | set));
	consume(cons, ts->bytes_captured);
	ASSERT_EQ(0, release(fd, 0, ts->bytes_captured));
	ASSERT_EQ(0, ipt_state(fd, 0, ts));
	EXPECT_EQ(ts->bytes_captured, ts->released);
	EXPECT_EQ(0, ts->bytes_valid);
	munmap((void *)cons->map, cons->size);
}

/* Stop, read and release what is left; unmap. */
static void stream_finish(struct __test_metadata *_metadata, int fd,
			  struct consumer *cons, struct ipt_trace_state *ts)
{
	stream_stop_read(_metadata, fd, cons, ts, IPT_TS_RUNNING, 0);
}

/*
 * Lossless: 256 KiB in 8 regions at 1 MiB/s; the program is paced (sim
 * cpuN/pace: it blocks rather than run into STOP, as a producer waits for
 * its consumer), and the consumer releases each region as it is
 * announced, every third time only after the program blocked (the sim's
 * "paced" count grew): it falls behind on purpose.  Ten buffers and more
 * go through with never a pause or a gap, and the bytes read are the
 * bytes the unit wrote.  Exact whatever the scheduling: the consumer's
 * speed decides only how often the program blocks.
 */
TEST_F_TIMEOUT(stream, lossless, 600)
{
	struct sim_counts b, a;
	struct ipt_trace_state ts;
	struct consumer cons;
	const uint64_t size = 256 * KIB;
	uint64_t paced, behind = 0;
	unsigned int round = 0;

	if (!self->sim || !(self->caps.features & IPT_FEAT_STREAM))
		SKIP(return, "needs the simulated unit with streaming");
	ASSERT_EQ(0, sim_cpu_write(0, "pace", 1));
	paced = ipt_sim_stat(0, "paced");
	stream_start(_metadata, self->fd, size, 8, &cons, &b);
	while (cons.read < 10 * size + size / 2) {
		ASSERT_TRUE(poll_in(self->fd, POLL_MS))
			TH_LOG("no data after %llu bytes",
			       (unsigned long long)cons.read);
		if (++round % 3 == 0) {
			ASSERT_TRUE(wait_stat_above("paced",
						    ipt_sim_stat(0, "paced")))
				TH_LOG("the program never blocked at %llu",
				       (unsigned long long)cons.read);
			behind++;
		}
		ASSERT_EQ(0, ipt_state(self->fd, 0, &ts));
		ASSERT_FALSE(ts.status & IPT_TS_PAUSED)
			TH_LOG("the paced program paused at %llu",
			       (unsigned long long)cons.read);
		ASSERT_EQ(0, ts.nr_gaps);
		ASSERT_EQ(cons.read, ts.released);
		ASSERT_LE(ts.bytes_captured - ts.released, size);
		consume(&cons, ts.bytes_captured);
		ASSERT_EQ(0, release(self->fd, 0, ts.bytes_captured));
	}
	stream_finish(_metadata, self->fd, &cons, &ts);
	sim_counts(&a);
	EXPECT_LE(3, behind);
	EXPECT_LE(paced + behind, ipt_sim_stat(0, "paced"));
	EXPECT_EQ(a.bytes - b.bytes, cons.read);
	EXPECT_EQ(a.csum - b.csum, cons.csum)
		TH_LOG("the bytes read are not the bytes the unit wrote");
	EXPECT_EQ(0, a.stopped - b.stopped);
	EXPECT_EQ(0, ts.nr_gaps);
	EXPECT_EQ(0, ts.gap_bytes);
	ASSERT_EQ(0, ipt_cmd(self->fd, IPT_IOC_RELEASE));
}

/*
 * Bulk mode (sim "bulk": the built-in loop's packets put together and
 * written in large units): at 256 MiB/s on CPU 0, above the 64 MiB/s a
 * packet at a time allows, a paced program (it blocks short of STOP: no
 * byte is lost however late the consumer is) streams 64 KiB and more
 * through a 16 KiB buffer in 4 regions (ptcheck decodes about 1 million
 * instructions a second in the stock VM under TCG).  Every byte the unit wrote is read, in
 * order (its count and checksum), nearly all of it written in bulk, and
 * libipt decodes the whole stream: every packet, and the instruction
 * flow against the sim's code, a PSB+ at least every 4 KiB.
 */
TEST_F_TIMEOUT(stream, bulk_lossless_libipt_decodes, 300)
{
	const uint64_t size = 16 * KIB, total = 64 * KIB;
	struct sim_counts b, a;
	struct ipt_trace_state ts;
	struct consumer cons;
	uint64_t bulk0;
	char extra[64];
	uint8_t *copy;

	if (!self->sim || !(self->caps.features & IPT_FEAT_STREAM))
		SKIP(return, "needs the simulated unit with streaming");
	ASSERT_EQ(0, ipt_write_file(IPT_SIM_DEBUGFS "/bulk", "1"));
	ASSERT_EQ(0, sim_cpu_write(0, "rate", 256 * MIB));
	ASSERT_EQ(0, sim_cpu_write(0, "pace", 1));
	copy = malloc(total + 2 * size);
	ASSERT_NE(NULL, copy);
	bulk0 = ipt_sim_stat(0, "bulk");
	ASSERT_NE(~0ULL, bulk0);
	stream_start(_metadata, self->fd, size, 4, &cons, &b);
	while (cons.read < total) {
		ASSERT_TRUE(poll_in(self->fd, POLL_MS))
			TH_LOG("no data after %llu bytes",
			       (unsigned long long)cons.read);
		ASSERT_EQ(0, ipt_state(self->fd, 0, &ts));
		ASSERT_EQ(0, ts.nr_gaps);
		ASSERT_LE(ts.bytes_captured - cons.read, size);
		for (uint64_t i = cons.read; i < ts.bytes_captured; i++)
			copy[i] = cons.map[i % size];
		consume(&cons, ts.bytes_captured);
		ASSERT_EQ(0, release(self->fd, 0, ts.bytes_captured));
	}
	ASSERT_EQ(0, ipt_cmd(self->fd, IPT_IOC_STOP));
	ASSERT_EQ(0, ipt_state(self->fd, 0, &ts));
	ASSERT_LE(ts.bytes_captured - cons.read, size);
	for (uint64_t i = cons.read; i < ts.bytes_captured; i++)
		copy[i] = cons.map[i % size];
	consume(&cons, ts.bytes_captured);
	ASSERT_EQ(0, release(self->fd, 0, ts.bytes_captured));
	munmap((void *)cons.map, cons.size);
	sim_counts(&a);
	EXPECT_EQ(0, ts.nr_gaps);
	EXPECT_EQ(a.bytes - b.bytes, cons.read);
	EXPECT_EQ(a.csum - b.csum, cons.csum)
		TH_LOG("the bytes read are not the bytes the unit wrote");
	EXPECT_EQ(0, a.stopped - b.stopped);
	EXPECT_LT((a.bytes - b.bytes) / 10 * 9, ipt_sim_stat(0, "bulk") - bulk0)
		TH_LOG("the unit did not write in bulk");
	ASSERT_EQ(0, ipt_cmd(self->fd, IPT_IOC_RELEASE));
	snprintf(extra, sizeof(extra), "--min-psb %llu", (unsigned long long)(total / (4 * KIB)));
	ipt_ptcheck(_metadata, self->fd, copy, cons.read, true, cons.read, extra);
	free(copy);
}

/*
 * Overload: 64 KiB in 8 regions at 1 MiB/s, a consumer that reads and
 * releases only after the unit paused and lost bytes, three times over.
 */
TEST_F_TIMEOUT(stream, overload_gaps_add_up, 180)
{
	struct ipt_gap e[IPT_STREAM_MAX_REGIONS];
	struct sim_counts b, a;
	struct ipt_trace_state ts;
	struct consumer cons;
	struct ipt_gaps g;
	uint64_t lost = 0, prev_end = 0;
	unsigned int round, i;

	if (!self->sim || !(self->caps.features & IPT_FEAT_STREAM))
		SKIP(return, "needs the simulated unit with streaming");
	stream_start(_metadata, self->fd, 64 * KIB, 8, &cons, &b);
	for (round = 0; round < 3; round++) {
		uint64_t stopped;

		ASSERT_TRUE(wait_status(self->fd, IPT_TS_PAUSED, &ts))
			TH_LOG("round %u: the unit never paused", round);
		/* Paused at STOP: the whole buffer is unreleased data. */
		EXPECT_EQ(ts.released + 64 * KIB, ts.bytes_captured);
		EXPECT_NE(0, ts.paused_tsc);
		EXPECT_TRUE(poll_in(self->fd, 0));
		stopped = ipt_sim_stat(0, "stopped");
		ASSERT_TRUE(wait_stat_above("stopped", stopped))
			TH_LOG("round %u: the paused unit lost nothing", round);
		ASSERT_EQ(0, get_gaps(self->fd, 0, 0, e, 64, &g));
		ASSERT_EQ(ts.nr_gaps, g.total);
		/* paused before the call: no pause began during it */
		ASSERT_EQ(g.total, g.nr_entries);
		/* The open pause is the last gap, not closed yet. */
		EXPECT_EQ(0, e[g.total - 1].tsc_end);
		EXPECT_EQ(IPT_GAP_BYTES_UNKNOWN, e[g.total - 1].bytes_lost);
		EXPECT_EQ(ts.bytes_captured, e[g.total - 1].offset);
		consume(&cons, ts.bytes_captured);
		ASSERT_EQ(0, release(self->fd, 0, ts.bytes_captured));
		ASSERT_EQ(0, ipt_state(self->fd, 0, &ts));
		EXPECT_EQ((uint64_t)round + 1, ts.nr_gaps - !!(ts.status & IPT_TS_PAUSED));
	}
	stream_finish(_metadata, self->fd, &cons, &ts);
	sim_counts(&a);
	ASSERT_EQ(0, get_gaps(self->fd, 0, 0, e, 64, &g));
	EXPECT_EQ(ts.nr_gaps, g.total);
	EXPECT_EQ(0, g.oldest);
	EXPECT_LE(3, g.total);
	ASSERT_EQ(g.total, g.nr_entries);
	for (i = 0; i < g.nr_entries; i++) {
		EXPECT_NE(IPT_GAP_BYTES_UNKNOWN, e[i].bytes_lost);
		EXPECT_LT(0, e[i].bytes_lost);
		EXPECT_LE(e[i].tsc_start, e[i].tsc_end);
		EXPECT_LE(prev_end, e[i].tsc_start);
		EXPECT_EQ(0, e[i].cpu);
		EXPECT_LE(e[i].offset, cons.read);
		EXPECT_EQ(0, e[i].offset % (8 * KIB));
		if (e[i].bytes_lost != IPT_GAP_BYTES_UNKNOWN)
			lost += e[i].bytes_lost;
		prev_end = e[i].tsc_end;
	}
	/* Produced = written + lost while Stopped; delivered = written. */
	EXPECT_EQ(a.bytes - b.bytes, cons.read);
	EXPECT_EQ(a.csum - b.csum, cons.csum);
	EXPECT_EQ(lost, (a.bytes + a.stopped) - (b.bytes + b.stopped) - cons.read);
	EXPECT_EQ(lost, ts.gap_bytes);
	ASSERT_EQ(0, ipt_cmd(self->fd, IPT_IOC_RELEASE));
}

/*
 * Several regions a tick: 32 KiB in 8 regions of 4 KiB at 16 MiB/s (sim
 * cpu0/rate), 16 KiB per 1 ms tick of the simulated unit, which raises one
 * PMI per tick however many regions ended (IA32_PERF_GLOBAL_STATUS bit 55
 * is a flag, not a count).  The ready position is where the unit is, not
 * a count of PMIs: paused at STOP it is exactly a buffer past the start
 * of the region holding the release position, and a consumer that
 * releases everything ready at each pause sees the unit pause again,
 * three times, every byte written delivered.
 */
TEST_F_TIMEOUT(stream, regions_per_pmi, 180)
{
	const uint64_t size = 32 * KIB;
	struct ipt_trace_state ts;
	struct sim_counts b, a;
	struct consumer cons;
	unsigned int round;

	if (!self->sim || !(self->caps.features & IPT_FEAT_STREAM))
		SKIP(return, "needs the simulated unit with streaming");
	ASSERT_EQ(0, sim_cpu_write(0, "rate", 16 * MIB));
	stream_start(_metadata, self->fd, size, 8, &cons, &b);
	for (round = 0; round < 3; round++) {
		ASSERT_TRUE(wait_status(self->fd, IPT_TS_PAUSED, &ts))
			TH_LOG("round %u: the unit never paused", round);
		ASSERT_EQ(ts.released + size, ts.bytes_captured)
			TH_LOG("round %u: paused, %llu ready of %llu",
			       round,
			       (unsigned long long)ts.bytes_valid,
			       (unsigned long long)size);
		ASSERT_EQ(size, ts.bytes_valid);
		EXPECT_TRUE(poll_in(self->fd, 0));
		consume(&cons, ts.bytes_captured);
		ASSERT_EQ(0, release(self->fd, 0, ts.bytes_captured));
		ASSERT_EQ(0, ipt_state(self->fd, 0, &ts));
		EXPECT_EQ((uint64_t)round + 1,
			  ts.nr_gaps - !!(ts.status & IPT_TS_PAUSED));
	}
	stream_finish(_metadata, self->fd, &cons, &ts);
	sim_counts(&a);
	EXPECT_EQ(a.bytes - b.bytes, cons.read);
	EXPECT_EQ(a.csum - b.csum, cons.csum)
		TH_LOG("the bytes read are not the bytes the unit wrote");
	EXPECT_LE(3, ts.nr_gaps);
	ASSERT_EQ(0, ipt_cmd(self->fd, IPT_IOC_RELEASE));
}

/*
 * poll(): ready on a region, on unreleased data after stop, not before.
 * The program is fed a known amount of branch content (sim cpuN/feed), so
 * that the unit writes more than one region and less than two, then
 * more than two and less than three: what is ready never depends on how
 * fast the test runs.  (Ready on a pause: overload_gaps_add_up.)
 */
TEST_F_TIMEOUT(stream, poll_readiness, 120)
{
	uint64_t mask[1] = { 0 };
	struct ipt_trace_state ts;
	struct sim_counts b;
	struct consumer cons;
	struct ipt_config c;

	if (!self->sim || !(self->caps.features & IPT_FEAT_STREAM))
		SKIP(return, "needs the simulated unit with streaming");
	/* IDLE, and a session that does not stream: never ready */
	EXPECT_FALSE(poll_in(self->fd, 0));
	ipt_cfg_cpu(&c, mask, 0, 64 * KIB);
	ASSERT_EQ(0, ipt_ioctl(self->fd, IPT_IOC_CONFIGURE, &c));
	EXPECT_FALSE(poll_in(self->fd, 0));
	ASSERT_EQ(0, ipt_cmd(self->fd, IPT_IOC_RELEASE));

	/* 10 KiB of branch content, and its PSB+s: 1 region of 8 KiB */
	ASSERT_EQ(0, feed_tnt(0, 10 * KIB, 1));
	stream_start(_metadata, self->fd, 64 * KIB, 8, &cons, &b);
	/* woken by the first region's PMI */
	ASSERT_TRUE(poll_in(self->fd, POLL_MS));
	ASSERT_EQ(0, ipt_state(self->fd, 0, &ts));
	EXPECT_EQ(8 * KIB, ts.bytes_captured);
	EXPECT_EQ(IPT_TS_RUNNING | IPT_TS_STREAM, ts.status);
	/* released up to the region end: not ready, the program wrote less */
	consume(&cons, ts.bytes_captured);
	ASSERT_EQ(0, release(self->fd, 0, ts.bytes_captured));
	EXPECT_FALSE(poll_in(self->fd, 0));
	/* 8 KiB more: the second region ends, and wakes the poller */
	ASSERT_EQ(0, feed_tnt(0, 8 * KIB, 0));
	ASSERT_TRUE(poll_in(self->fd, POLL_MS));
	ASSERT_EQ(0, ipt_state(self->fd, 0, &ts));
	EXPECT_EQ(16 * KIB, ts.bytes_captured);
	/* stopped with data not released: ready until it is */
	ASSERT_EQ(0, ipt_cmd(self->fd, IPT_IOC_STOP));
	ASSERT_EQ(0, ipt_state(self->fd, 0, &ts));
	EXPECT_LT(16 * KIB, ts.bytes_captured);
	EXPECT_GT(24 * KIB, ts.bytes_captured);
	EXPECT_TRUE(poll_in(self->fd, 0));
	consume(&cons, ts.bytes_captured);
	ASSERT_EQ(0, release(self->fd, 0, ts.bytes_captured));
	EXPECT_FALSE(poll_in(self->fd, 0));
	EXPECT_EQ(ipt_sim_stat(0, "bytes") - b.bytes, cons.read);
	EXPECT_EQ(ipt_sim_stat(0, "csum") - b.csum, cons.csum);
	munmap((void *)cons.map, cons.size);
	ASSERT_EQ(0, ipt_cmd(self->fd, IPT_IOC_RELEASE));
}

/*
 * A release that makes room resumes a paused unit at once: the pause is a
 * closed gap, the unit writes again (a PSB+ first), and a partial release
 * inside a region moves nothing.  The program is fed 72 KiB of branch
 * content (sim cpuN/feed): it pauses at STOP, runs the rest of its feed
 * Stopped, and after the resume writes only the PSB+ until fed again, so
 * the ready position right after the resume is exact; fed 10 KiB more it
 * crosses one region end and stops short of the next STOP.
 */
TEST_F_TIMEOUT(stream, release_while_paused_resumes, 120)
{
	struct ipt_trace_state ts, ts2;
	struct sim_counts b, a;
	struct consumer cons;
	struct ipt_gap e[4];
	struct ipt_gaps g;
	uint64_t at;

	if (!self->sim || !(self->caps.features & IPT_FEAT_STREAM))
		SKIP(return, "needs the simulated unit with streaming");
	ASSERT_EQ(0, feed_tnt(0, 72 * KIB, 1));
	stream_start(_metadata, self->fd, 64 * KIB, 8, &cons, &b);
	ASSERT_TRUE(wait_status(self->fd, IPT_TS_PAUSED, &ts));
	at = ts.bytes_captured;
	EXPECT_EQ(64 * KIB, at);
	ASSERT_TRUE(wait_feed_done(0))
		TH_LOG("the program did not run to its feed's end");
	/* less than a region: STOP stays, the unit stays paused */
	ASSERT_EQ(0, release(self->fd, 0, ts.released + 4 * KIB));
	ASSERT_EQ(0, ipt_state(self->fd, 0, &ts2));
	EXPECT_TRUE(ts2.status & IPT_TS_PAUSED);
	EXPECT_EQ(at, ts2.bytes_captured);
	/* backwards, and beyond what is ready */
	EXPECT_EQ(-EINVAL, release(self->fd, 0, ts.released));
	EXPECT_EQ(-EINVAL, release(self->fd, 0, at + 1));
	/* a region: the unit resumes, with nothing to write but its PSB+ */
	consume(&cons, ts.released + 8 * KIB);
	ASSERT_EQ(0, release(self->fd, 0, ts.released + 8 * KIB));
	ASSERT_EQ(0, ipt_state(self->fd, 0, &ts2));
	EXPECT_EQ(IPT_TS_RUNNING | IPT_TS_STREAM, ts2.status);
	EXPECT_EQ(at, ts2.bytes_captured);
	EXPECT_EQ(ts.released + 8 * KIB, ts2.released);
	EXPECT_EQ(1, ts2.nr_gaps);
	ASSERT_EQ(0, get_gaps(self->fd, 0, 0, e, 4, &g));
	ASSERT_EQ(1, g.nr_entries);
	EXPECT_EQ(at, e[0].offset);
	EXPECT_NE(0, e[0].tsc_end);
	EXPECT_LE(e[0].tsc_start, e[0].tsc_end);
	EXPECT_LT(0, e[0].bytes_lost);
	/*
	 * A second region released (STOP two regions past the pause), fed
	 * again: it writes again, up to the next region end and not to STOP
	 * (until then the ready position is the head the release settled).
	 */
	consume(&cons, ts.released + 16 * KIB);
	ASSERT_EQ(0, release(self->fd, 0, ts.released + 16 * KIB));
	ASSERT_EQ(0, feed_tnt(0, 10 * KIB, 0));
	for (int i = 0; i < POLLS; i++) {
		ASSERT_EQ(0, ipt_state(self->fd, 0, &ts2));
		if (ts2.bytes_captured >= at + 8 * KIB)
			break;
		msleep(10);
	}
	EXPECT_EQ(at + 8 * KIB, ts2.bytes_captured);
	/* the resumed data starts with a PSB */
	EXPECT_EQ(0x02, cons.map[at % (64 * KIB)]);
	EXPECT_EQ(0x82, cons.map[at % (64 * KIB) + 1]);
	stream_finish(_metadata, self->fd, &cons, &ts);
	sim_counts(&a);
	EXPECT_EQ(a.bytes - b.bytes, cons.read);
	EXPECT_EQ(a.csum - b.csum, cons.csum);
	EXPECT_EQ(a.stopped - b.stopped, e[0].bytes_lost);
	EXPECT_EQ(1, ts.nr_gaps);
	EXPECT_EQ(e[0].bytes_lost, ts.gap_bytes);
	ASSERT_EQ(0, ipt_cmd(self->fd, IPT_IOC_RELEASE));
}

/*
 * A stream on CPU 1 that paused: taking the CPU offline stops the trace
 * and closes the gap; its data stays readable and releasable; coming
 * back online it starts again where STOP now allows, and everything adds
 * up as on a CPU that never left.
 */
TEST_F_TIMEOUT(stream, hotplug_offline_release_online, 180)
{
	uint64_t mask[1] = { 0 }, at, stopped, lost = 0;
	struct ipt_trace_state ts;
	struct ipt_gap e[8];
	struct ipt_gaps g;
	struct ipt_config c;
	struct consumer cons = { 0 };
	uint64_t b_bytes, b_stopped, b_csum;
	unsigned int i;
	void *map;

	if (!self->sim || !(self->caps.features & IPT_FEAT_STREAM))
		SKIP(return, "needs the simulated unit with streaming");
	if (sysconf(_SC_NPROCESSORS_ONLN) < 2 ||
	    access("/sys/devices/system/cpu/cpu1/online", W_OK))
		SKIP(return, "needs CPU 1, and CPU hotplug");
	ipt_cfg_cpu(&c, mask, 1, 64 * KIB);
	c.buffer_flags = IPT_BUFFER_STREAM;
	c.nr_regions = 8;
	ASSERT_EQ(0, ipt_ioctl(self->fd, IPT_IOC_CONFIGURE, &c));
	ASSERT_EQ(0, ipt_state(self->fd, 1, &ts));
	map = mmap(NULL, 64 * KIB, PROT_READ, MAP_SHARED, self->fd,
		   ts.mmap_offset);
	ASSERT_NE(MAP_FAILED, map);
	cons.map = map;
	cons.size = 64 * KIB;
	b_bytes = ipt_sim_stat(1, "bytes");
	b_stopped = ipt_sim_stat(1, "stopped");
	b_csum = ipt_sim_stat(1, "csum");
	cons.base = b_bytes;
	ASSERT_EQ(0, ipt_cmd(self->fd, IPT_IOC_START));
	for (i = 0; i < POLLS; i++) {
		ASSERT_EQ(0, ipt_state(self->fd, 1, &ts));
		if (ts.status & IPT_TS_PAUSED)
			break;
		msleep(10);
	}
	ASSERT_TRUE(ts.status & IPT_TS_PAUSED);
	stopped = ipt_sim_stat(1, "stopped");
	for (i = 0; i < POLLS && ipt_sim_stat(1, "stopped") <= stopped; i++)
		msleep(10);
	ASSERT_LT(stopped, ipt_sim_stat(1, "stopped"))
		TH_LOG("the paused unit lost nothing");
	at = ts.bytes_captured;

	ASSERT_EQ(0, ipt_cpu_online_set(1, 0));
	ASSERT_EQ(0, ipt_state(self->fd, 1, &ts));
	EXPECT_EQ(IPT_TS_STREAM, ts.status);
	EXPECT_EQ(at, ts.bytes_captured);
	EXPECT_EQ(1, ts.nr_gaps);
	ASSERT_EQ(0, get_gaps(self->fd, 1, 0, e, 8, &g));
	ASSERT_EQ(1, g.nr_entries);
	EXPECT_EQ(at, e[0].offset);
	EXPECT_NE(0, e[0].tsc_end);
	EXPECT_EQ(1, e[0].cpu);
	/* released while offline: rearmed in place */
	consume(&cons, at);
	EXPECT_EQ(0, release(self->fd, 1, at));
	ASSERT_EQ(0, ipt_cpu_online_set(1, 1));
	/* back online: it writes again past the pause */
	for (i = 0; i < POLLS; i++) {
		ASSERT_EQ(0, ipt_state(self->fd, 1, &ts));
		if (ts.bytes_captured > at)
			break;
		msleep(10);
	}
	EXPECT_LT(at, ts.bytes_captured);
	EXPECT_TRUE(ts.status & IPT_TS_RUNNING);

	ASSERT_EQ(0, ipt_cmd(self->fd, IPT_IOC_STOP));
	ASSERT_EQ(0, ipt_state(self->fd, 1, &ts));
	consume(&cons, ts.bytes_captured);
	ASSERT_EQ(0, release(self->fd, 1, ts.bytes_captured));
	ASSERT_EQ(0, get_gaps(self->fd, 1, 0, e, 8, &g));
	for (i = 0; i < g.nr_entries; i++)
		lost += e[i].bytes_lost;
	EXPECT_LT(0, lost);
	EXPECT_EQ(g.total, g.nr_entries);
	EXPECT_EQ(ipt_sim_stat(1, "bytes") - b_bytes, cons.read);
	EXPECT_EQ(ipt_sim_stat(1, "csum") - b_csum, cons.csum);
	EXPECT_EQ(ipt_sim_stat(1, "stopped") - b_stopped, lost);
	munmap(map, 64 * KIB);
	ASSERT_EQ(0, ipt_cmd(self->fd, IPT_IOC_RELEASE));
}

/*
 * Fed 10 KiB (one region of 8 KiB ends, the second does not), the first
 * region announced and half released: nothing ready, the program done.
 */
static void fed_half_released(struct __test_metadata *_metadata, int fd,
			      struct consumer *cons, struct sim_counts *b)
{
	struct ipt_trace_state ts;

	ASSERT_EQ(0, feed_tnt(0, 10 * KIB, 1));
	stream_start(_metadata, fd, 64 * KIB, 8, cons, b);
	ASSERT_TRUE(poll_in(fd, POLL_MS));
	ASSERT_EQ(0, ipt_state(fd, 0, &ts));
	ASSERT_EQ(8 * KIB, ts.bytes_captured);
	ASSERT_TRUE(wait_feed_done(0))
		TH_LOG("the program did not run to its feed's end");
	consume(cons, 4 * KIB);
	ASSERT_EQ(0, release(fd, 0, 4 * KIB));
	ASSERT_FALSE(poll_in(fd, 0));
}

/*
 * A release whose stop faults (sim cpu0/gp_ctl bit 0: the next clear of
 * TraceEn is #GP) fails with EIO and changes nothing: the same release
 * position, the unit still running, not cut.  Retried, it works.
 */
TEST_F_TIMEOUT(stream, release_stop_fault_changes_nothing, 120)
{
	struct ipt_trace_state ts, ts2;
	struct sim_counts b, a;
	struct consumer cons;

	if (!self->sim || !(self->caps.features & IPT_FEAT_STREAM))
		SKIP(return, "needs the simulated unit with streaming");
	fed_half_released(_metadata, self->fd, &cons, &b);
	ASSERT_EQ(0, ipt_state(self->fd, 0, &ts));
	ASSERT_EQ(0, sim_cpu_write(0, "gp_ctl", 1));
	EXPECT_EQ(-EIO, release(self->fd, 0, 8 * KIB));
	EXPECT_EQ(0, sim_cpu_read(0, "gp_ctl"));
	ASSERT_EQ(0, ipt_state(self->fd, 0, &ts2));
	EXPECT_EQ(IPT_TS_RUNNING | IPT_TS_STREAM, ts2.status);
	EXPECT_EQ(4 * KIB, ts2.released);
	EXPECT_EQ(ts.bytes_captured, ts2.bytes_captured);
	EXPECT_EQ(0, ts2.nr_gaps);
	/* retried: STOP moves, the unit runs on */
	consume(&cons, 8 * KIB);
	ASSERT_EQ(0, release(self->fd, 0, 8 * KIB));
	ASSERT_EQ(0, ipt_state(self->fd, 0, &ts2));
	EXPECT_EQ(IPT_TS_RUNNING | IPT_TS_STREAM, ts2.status);
	EXPECT_EQ(8 * KIB, ts2.released);
	stream_finish(_metadata, self->fd, &cons, &ts);
	sim_counts(&a);
	EXPECT_EQ(a.bytes - b.bytes, cons.read);
	EXPECT_EQ(a.csum - b.csum, cons.csum);
	ASSERT_EQ(0, ipt_cmd(self->fd, IPT_IOC_RELEASE));
}

/*
 * A release whose restart faults (sim cpu0/gp_ctl bit 1: the next set of
 * TraceEn is #GP) holds: it returns 0, the trace is stopped and cut
 * (IPT_TS_CUT) with its head settled, and a poller blocked in another
 * thread wakes with EPOLLIN: what is left will never fill a region.  The
 * bytes read are still the bytes the unit wrote; stopped, the session
 * polls EPOLLHUP.
 */
TEST_F_TIMEOUT(stream, release_restart_fault_cuts_and_wakes, 120)
{
	struct ipt_trace_state ts;
	struct sim_counts b, a;
	struct consumer cons;
	struct pollfd pfd;
	struct poller p;

	if (!self->sim || !(self->caps.features & IPT_FEAT_STREAM))
		SKIP(return, "needs the simulated unit with streaming");
	fed_half_released(_metadata, self->fd, &cons, &b);
	ASSERT_EQ(0, sim_cpu_write(0, "gp_ctl", 2));
	ASSERT_TRUE(poller_start(&p, self->fd))
		TH_LOG("the poller never slept in poll()");
	consume(&cons, 8 * KIB);
	EXPECT_EQ(0, release(self->fd, 0, 8 * KIB));
	EXPECT_TRUE(poller_join(&p))
		TH_LOG("nothing woke the poller: it slept to its bound");
	EXPECT_EQ(1, p.ret);
	EXPECT_TRUE(p.revents & POLLIN);
	EXPECT_FALSE(p.revents & POLLHUP);
	EXPECT_EQ(0, sim_cpu_read(0, "gp_ctl"));
	ASSERT_EQ(0, ipt_state(self->fd, 0, &ts));
	EXPECT_EQ(IPT_TS_CUT | IPT_TS_STREAM, ts.status);
	EXPECT_EQ(8 * KIB, ts.released);
	EXPECT_LT(10 * KIB, ts.bytes_captured);
	EXPECT_GT(16 * KIB, ts.bytes_captured);
	stream_finish(_metadata, self->fd, &cons, &ts);
	EXPECT_TRUE(ts.status & IPT_TS_CUT);
	sim_counts(&a);
	EXPECT_EQ(a.bytes - b.bytes, cons.read);
	EXPECT_EQ(a.csum - b.csum, cons.csum);
	pfd.fd = self->fd;
	pfd.events = POLLIN;
	EXPECT_EQ(1, poll(&pfd, 1, 0));
	EXPECT_EQ(POLLHUP, pfd.revents);
	ASSERT_EQ(0, ipt_cmd(self->fd, IPT_IOC_RELEASE));
}

/*
 * A poller blocked in another thread wakes with EPOLLHUP when the
 * session ends under it: stopped while it traces (with EPOLLIN: data
 * not released), and released (torn down) while configured.
 */
TEST_F_TIMEOUT(stream, poll_hup_on_stop_and_teardown, 120)
{
	uint64_t mask[1] = { 0 };
	struct ipt_trace_state ts;
	struct sim_counts b;
	struct consumer cons;
	struct ipt_config c;
	struct poller p;

	if (!self->sim || !(self->caps.features & IPT_FEAT_STREAM))
		SKIP(return, "needs the simulated unit with streaming");
	fed_half_released(_metadata, self->fd, &cons, &b);
	ASSERT_TRUE(poller_start(&p, self->fd))
		TH_LOG("the poller never slept in poll()");
	ASSERT_EQ(0, ipt_cmd(self->fd, IPT_IOC_STOP));
	EXPECT_TRUE(poller_join(&p))
		TH_LOG("nothing woke the poller: it slept to its bound");
	EXPECT_EQ(1, p.ret);
	EXPECT_EQ(POLLIN | POLLHUP, p.revents);
	ASSERT_EQ(0, ipt_state(self->fd, 0, &ts));
	ASSERT_EQ(0, release(self->fd, 0, ts.bytes_captured));
	munmap((void *)cons.map, cons.size);
	ASSERT_EQ(0, ipt_cmd(self->fd, IPT_IOC_RELEASE));

	/* configured, nothing ready: the poller sleeps until the release */
	cfg_stream(&c, mask, 64 * KIB, 8);
	ASSERT_EQ(0, ipt_ioctl(self->fd, IPT_IOC_CONFIGURE, &c));
	ASSERT_FALSE(poll_in(self->fd, 0));
	ASSERT_TRUE(poller_start(&p, self->fd))
		TH_LOG("the poller never slept in poll()");
	ASSERT_EQ(0, ipt_cmd(self->fd, IPT_IOC_RELEASE));
	EXPECT_TRUE(poller_join(&p))
		TH_LOG("nothing woke the poller: it slept to its bound");
	EXPECT_EQ(1, p.ret);
	EXPECT_EQ(POLLHUP, p.revents);
}

/*
 * The unit buffers packets internally and writes them out later; only
 * clearing TraceEn flushes them (SDM vol. 3C, 33.3.3).  With the
 * simulated unit holding its newest 4 KiB back (sim cpu0/hold), fed 10
 * KiB: the first region's 8 KiB are announced while the last of them are
 * still in the unit unless the PMI stopped it to read the position.  The
 * consumer reads them at once; the bytes read must be the bytes written.
 */
TEST_F_TIMEOUT(stream, announced_bytes_in_memory, 120)
{
	struct ipt_trace_state ts;
	struct sim_counts b, a;
	struct consumer cons;

	if (!self->sim || !(self->caps.features & IPT_FEAT_STREAM))
		SKIP(return, "needs the simulated unit with streaming");
	ASSERT_EQ(0, sim_cpu_write(0, "hold", 4096));
	ASSERT_EQ(0, feed_tnt(0, 10 * KIB, 1));
	stream_start(_metadata, self->fd, 64 * KIB, 8, &cons, &b);
	ASSERT_TRUE(poll_in(self->fd, POLL_MS));
	ASSERT_EQ(0, ipt_state(self->fd, 0, &ts));
	ASSERT_EQ(8 * KIB, ts.bytes_captured);
	consume(&cons, ts.bytes_captured);
	ASSERT_EQ(0, release(self->fd, 0, ts.bytes_captured));
	ASSERT_TRUE(wait_feed_done(0));
	stream_finish(_metadata, self->fd, &cons, &ts);
	sim_counts(&a);
	EXPECT_EQ(a.bytes - b.bytes, cons.read);
	EXPECT_EQ(a.csum - b.csum, cons.csum)
		TH_LOG("bytes announced were read before they were in memory");
	ASSERT_EQ(0, ipt_cmd(self->fd, IPT_IOC_RELEASE));
}

/* ---- per-thread streams ------------------------------------------------ */

/*
 * A traced thread that spins on a CPU until told to quit; between spins it
 * moves to the CPU asked for (@want, acknowledged in @moves) and blocks in
 * a read of @pipe[0] when asked to (@block).  The simulated unit writes
 * for it only while it is switched in.
 */
struct tworker {
	atomic_int ready, quit, block, want;
	atomic_uint moves;
	int pipe[2];
	int cpu;
	pid_t tid;
	int err;
};

static int pin(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	return sched_setaffinity(0, sizeof(set), &set) ? -errno : 0;
}

static void *tworker_fn(void *arg)
{
	struct tworker *w = arg;
	char b;

	w->tid = syscall(SYS_gettid);
	if (pin(w->cpu))
		w->err = __LINE__;
	atomic_store(&w->ready, 1);
	while (!w->err && !atomic_load(&w->quit)) {
		int c = atomic_exchange(&w->want, -1);

		if (c >= 0) {
			if (pin(c))
				w->err = __LINE__;
			w->cpu = c;
			atomic_fetch_add(&w->moves, 1);
		}
		if (atomic_exchange(&w->block, 0) && read(w->pipe[0], &b, 1) != 1)
			w->err = __LINE__;
	}
	return NULL;
}

/* Move the worker to @cpu; 0 when it did not say it moved in 30 s. */
static int tworker_move(struct tworker *w, int cpu)
{
	unsigned int moves = atomic_load(&w->moves);
	int i;

	atomic_store(&w->want, cpu);
	for (i = 0; i < POLLS && atomic_load(&w->moves) == moves; i++)
		msleep(10);
	return atomic_load(&w->moves) != moves;
}

/* Whether thread @tid sleeps (S or D in /proc); 30 s at most. */
static int wait_sleeping(pid_t tid)
{
	char path[64], buf[512], *p;
	int i, fd;
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/self/task/%d/stat", tid);
	for (i = 0; i < POLLS; i++) {
		fd = open(path, O_RDONLY);
		if (fd < 0)
			return 0;
		n = read(fd, buf, sizeof(buf) - 1);
		close(fd);
		if (n > 0) {
			buf[n] = '\0';
			p = strrchr(buf, ')');
			if (p && p[1] == ' ' && (p[2] == 'S' || p[2] == 'D'))
				return 1;
		}
		msleep(10);
	}
	return 0;
}

/* A simulator counter summed over the online CPUs. */
static uint64_t sim_sum(const char *key)
{
	uint64_t sum = 0;
	int cpu;

	for (cpu = 0; cpu < nr_cpus(); cpu++)
		sum += ipt_sim_stat(cpu, key);
	return sum;
}

static int wait_sum_above(const char *key, uint64_t value)
{
	int i;

	for (i = 0; i < POLLS; i++) {
		if (sim_sum(key) > value)
			return 1;
		msleep(10);
	}
	return 0;
}

/* Wait until trace 0 has one of @status bits; 0 on timeout. */
static int wait_tstatus(int fd, uint64_t status, struct ipt_trace_state *ts)
{
	return wait_status(fd, status, ts);
}

/*
 * A per-thread case: the traced worker and its thread, the consumer of
 * its trace, and the simulator's sums of "bytes" and "stopped" just
 * before the start.
 */
struct tcase {
	struct tworker w;
	pthread_t th;
	struct consumer cons;
	uint64_t bytes, stopped;
};

/*
 * Start the worker on CPU @cpu, configure a per-thread stream of @size in
 * @regions, attach the worker, map its trace and start.
 */
static void tstream_start(struct __test_metadata *_metadata, int fd,
			  uint64_t size, uint32_t regions, int cpu,
			  struct tcase *t)
{
	struct ipt_attach a = { .size = sizeof(a) };
	struct consumer *cons = &t->cons;
	struct tworker *w = &t->w;
	struct ipt_trace_state ts;
	struct ipt_config c;
	void *map;

	memset(w, 0, sizeof(*w));
	atomic_store(&w->want, -1);
	w->cpu = cpu;
	ASSERT_EQ(0, pipe(w->pipe));
	ASSERT_EQ(0, pthread_create(&t->th, NULL, tworker_fn, w));
	/* Bounded (30 s, never reached when all is well): no hang. */
	for (int i = 0; i < 10 * POLLS && !atomic_load(&w->ready); i++)
		msleep(1);
	ASSERT_TRUE(atomic_load(&w->ready));
	ASSERT_EQ(0, w->err);
	cfg_thread_stream(&c, size, regions);
	ASSERT_EQ(0, ipt_ioctl(fd, IPT_IOC_CONFIGURE, &c));
	a.tid = w->tid;
	ASSERT_EQ(0, ipt_ioctl(fd, IPT_IOC_ATTACH, &a));
	ASSERT_EQ(0, a.trace);
	ASSERT_EQ(0, ipt_state(fd, 0, &ts));
	EXPECT_TRUE(ts.status & IPT_TS_STREAM);
	EXPECT_TRUE(ts.status & IPT_TS_THREAD);
	map = mmap(NULL, size, PROT_READ, MAP_SHARED, fd, ts.mmap_offset);
	ASSERT_NE(MAP_FAILED, map);
	memset(cons, 0, sizeof(*cons));
	cons->map = map;
	cons->size = size;
	t->bytes = sim_sum("bytes");
	t->stopped = sim_sum("stopped");
	ASSERT_EQ(0, ipt_cmd(fd, IPT_IOC_START));
}

/*
 * A 64 KiB stream in 8 regions, the worker on CPU 0, run until the unit
 * paused and lost bytes; *@ts is the state at the pause.  Returns the
 * bytes captured then.
 */
static uint64_t tstream_paused(struct __test_metadata *_metadata, int fd,
			       struct tcase *t, struct ipt_trace_state *ts)
{
	tstream_start(_metadata, fd, 64 * KIB, 8, 0, t);
	ASSERT_TRUE(wait_tstatus(fd, IPT_TS_PAUSED, ts));
	ASSERT_TRUE(wait_sum_above("stopped", t->stopped));
	return ts->bytes_captured;
}

/*
 * The worker quits (woken if it blocks in its read) and is joined; *@ts
 * is its trace's state once marked EXITED.
 */
static void tworker_exit(struct __test_metadata *_metadata, int fd,
			 struct tcase *t, struct ipt_trace_state *ts)
{
	atomic_store(&t->w.quit, 1);
	if (write(t->w.pipe[1], "q", 1) != 1)
		TH_LOG("could not wake the worker");
	pthread_join(t->th, NULL);
	EXPECT_EQ(0, t->w.err);
	/* Marked at its last switch-out, after the join may return. */
	ASSERT_TRUE(wait_tstatus(fd, IPT_TS_EXITED, ts));
}

/* The worker's pipe closed and the trace unmapped. */
static void tstream_close(struct tcase *t)
{
	close(t->w.pipe[0]);
	close(t->w.pipe[1]);
	munmap((void *)t->cons.map, t->cons.size);
}

/*
 * The trace's one gap is closed and starts at @at; returns its bytes
 * lost.
 */
static uint64_t one_closed_gap(struct __test_metadata *_metadata, int fd,
			       uint64_t at)
{
	struct ipt_gap e[4];
	struct ipt_gaps g;

	ASSERT_EQ(0, get_gaps(fd, 0, 0, e, 4, &g));
	ASSERT_EQ(1, g.nr_entries);
	EXPECT_EQ(at, e[0].offset);
	EXPECT_NE(0, e[0].tsc_end);
	EXPECT_LE(e[0].tsc_start, e[0].tsc_end);
	return e[0].bytes_lost;
}

/*
 * Every byte the units wrote since the start was read, and the bytes they
 * lost while stopped are @gap_bytes.
 */
static void tstream_accounted(struct __test_metadata *_metadata,
			      const struct tcase *t, uint64_t gap_bytes)
{
	EXPECT_EQ(sim_sum("bytes") - t->bytes, t->cons.read);
	EXPECT_EQ(sim_sum("stopped") - t->stopped, gap_bytes);
}

/* The worker quits and is joined; the session stops; the rest is read. */
static void tstream_finish(struct __test_metadata *_metadata, int fd,
			   struct tcase *t, struct ipt_trace_state *ts)
{
	tworker_exit(_metadata, fd, t, ts);
	close(t->w.pipe[0]);
	close(t->w.pipe[1]);
	stream_stop_read(_metadata, fd, &t->cons, ts,
			 IPT_TS_RUNNING | IPT_TS_PAUSED, IPT_TS_EXITED);
}

/*
 * Lossless per thread: 64 KiB in 8 regions at 1 MiB/s, every CPU's
 * program paced (sim cpuN/pace); the traced thread is moved between the
 * first and the last CPU every fourth region read, the test's own thread
 * taking the CPU it left (so that the two never share a CPU while the
 * unit may be near STOP), and every third time the consumer waits until
 * the program blocked (the sum of the sims' "paced" grew).  Ten buffers
 * and more go through, with never a pause or a gap, on both CPUs; every
 * byte the units wrote is read.
 */
TEST_F_TIMEOUT(stream, thread_lossless_migrating, 240)
{
	const uint64_t size = 64 * KIB;
	uint64_t b_first, b_last;
	int first = 0, last = nr_cpus() - 1, me;
	struct ipt_trace_state ts;
	unsigned int round = 0, behind = 0;
	struct tcase t;

	if (!self->sim || !(self->caps.features & IPT_FEAT_STREAM))
		SKIP(return, "needs the simulated unit with streaming");
	if (nr_cpus() < 2)
		SKIP(return, "needs two CPUs");
	for (int cpu = 0; cpu < nr_cpus(); cpu++)
		ASSERT_EQ(0, sim_cpu_write(cpu, "pace", 1));
	me = last;
	ASSERT_EQ(0, pin(me));
	b_first = ipt_sim_stat(first, "bytes");
	b_last = ipt_sim_stat(last, "bytes");
	tstream_start(_metadata, self->fd, size, 8, first, &t);
	while (t.cons.read < 10 * size + size / 2) {
		ASSERT_TRUE(poll_in(self->fd, POLL_MS))
			TH_LOG("no data after %llu bytes",
			       (unsigned long long)t.cons.read);
		if (++round % 3 == 0) {
			ASSERT_TRUE(wait_sum_above("paced", sim_sum("paced")))
				TH_LOG("the program never blocked at %llu",
				       (unsigned long long)t.cons.read);
			behind++;
		}
		ASSERT_EQ(0, ipt_state(self->fd, 0, &ts));
		ASSERT_FALSE(ts.status & IPT_TS_PAUSED)
			TH_LOG("the paced program paused at %llu",
			       (unsigned long long)t.cons.read);
		ASSERT_EQ(0, ts.nr_gaps);
		ASSERT_EQ(t.cons.read, ts.released);
		ASSERT_LE(ts.bytes_captured - ts.released, size);
		consume(&t.cons, ts.bytes_captured);
		ASSERT_EQ(0, release(self->fd, 0, ts.bytes_captured));
		if (round % 4 == 0) {
			int to = me;

			/* Everything released: room for the switches. */
			me = t.w.cpu;
			ASSERT_EQ(0, pin(me));
			ASSERT_TRUE(tworker_move(&t.w, to))
				TH_LOG("the worker did not move to CPU %d", to);
		}
	}
	tstream_finish(_metadata, self->fd, &t, &ts);
	EXPECT_LE(3, behind);
	EXPECT_LE(2, atomic_load(&t.w.moves));
	/* Both CPUs traced the thread. */
	EXPECT_LT(b_first, ipt_sim_stat(first, "bytes"));
	EXPECT_LT(b_last, ipt_sim_stat(last, "bytes"));
	tstream_accounted(_metadata, &t, 0);
	EXPECT_EQ(0, ts.nr_gaps);
	EXPECT_EQ(0, ts.gap_bytes);
	for (int cpu = 0; cpu < nr_cpus(); cpu++)
		sim_cpu_write(cpu, "pace", 0);
	ASSERT_EQ(0, ipt_cmd(self->fd, IPT_IOC_RELEASE));
}

/*
 * Overload per thread: 64 KiB in 8 regions at 1 MiB/s, a consumer that
 * releases only once the unit paused and lost bytes; each pause, the
 * thread is moved to another CPU while paused, where it stays paused
 * (same pause TSC, Stopped carried in its saved STATUS) and loses bytes
 * too.  The gaps' bytes_lost add up exactly to what the units produced
 * minus what was delivered, over every CPU.
 */
TEST_F_TIMEOUT(stream, thread_overload_gaps_add_up, 240)
{
	struct ipt_gap e[IPT_STREAM_MAX_REGIONS];
	uint64_t lost = 0;
	struct ipt_trace_state ts, ts2;
	int last = nr_cpus() - 1;
	struct ipt_gaps g;
	struct tcase t;
	unsigned int round, i;

	if (!self->sim || !(self->caps.features & IPT_FEAT_STREAM))
		SKIP(return, "needs the simulated unit with streaming");
	if (nr_cpus() < 2)
		SKIP(return, "needs two CPUs");
	tstream_start(_metadata, self->fd, 64 * KIB, 8, 0, &t);
	for (round = 0; round < 3; round++) {
		int to = t.w.cpu ? 0 : last;
		uint64_t stopped;

		ASSERT_TRUE(wait_tstatus(self->fd, IPT_TS_PAUSED, &ts))
			TH_LOG("round %u: the unit never paused", round);
		EXPECT_EQ(ts.released + 64 * KIB, ts.bytes_captured);
		stopped = ipt_sim_stat(t.w.cpu, "stopped");
		ASSERT_EQ(0, ipt_sim_wait_stat(t.w.cpu, "stopped", stopped + 1))
			TH_LOG("round %u: the paused unit lost nothing", round);
		/* Moved while paused: still paused, the same pause. */
		ASSERT_TRUE(tworker_move(&t.w, to));
		stopped = ipt_sim_stat(to, "stopped");
		ASSERT_EQ(0, ipt_sim_wait_stat(to, "stopped", stopped + 1))
			TH_LOG("round %u: paused on CPU %d, it lost nothing",
			       round, to);
		ASSERT_EQ(0, ipt_state(self->fd, 0, &ts2));
		EXPECT_TRUE(ts2.status & IPT_TS_PAUSED);
		EXPECT_EQ(ts.paused_tsc, ts2.paused_tsc);
		EXPECT_EQ(ts.bytes_captured, ts2.bytes_captured);
		EXPECT_EQ(ts.nr_gaps, ts2.nr_gaps);
		EXPECT_TRUE(poll_in(self->fd, 0));
		ASSERT_EQ(0, get_gaps(self->fd, 0, 0, e, 64, &g));
		ASSERT_EQ(ts2.nr_gaps, g.total);
		ASSERT_EQ(g.total, g.nr_entries);
		EXPECT_EQ(0, e[g.total - 1].tsc_end);
		EXPECT_EQ(IPT_GAP_BYTES_UNKNOWN, e[g.total - 1].bytes_lost);
		EXPECT_EQ(ts2.bytes_captured, e[g.total - 1].offset);
		consume(&t.cons, ts2.bytes_captured);
		ASSERT_EQ(0, release(self->fd, 0, ts2.bytes_captured));
		ASSERT_EQ(0, ipt_state(self->fd, 0, &ts));
		EXPECT_EQ((uint64_t)round + 1,
			  ts.nr_gaps - !!(ts.status & IPT_TS_PAUSED));
	}
	tstream_finish(_metadata, self->fd, &t, &ts);
	ASSERT_EQ(0, get_gaps(self->fd, 0, 0, e, 64, &g));
	EXPECT_EQ(ts.nr_gaps, g.total);
	EXPECT_LE(3, g.total);
	ASSERT_EQ(g.total, g.nr_entries);
	for (i = 0; i < g.nr_entries; i++) {
		EXPECT_NE(IPT_GAP_BYTES_UNKNOWN, e[i].bytes_lost);
		EXPECT_NE(0, e[i].tsc_end);
		EXPECT_LE(e[i].tsc_start, e[i].tsc_end);
		EXPECT_EQ(0, e[i].offset % (8 * KIB));
		if (e[i].bytes_lost != IPT_GAP_BYTES_UNKNOWN)
			lost += e[i].bytes_lost;
	}
	tstream_accounted(_metadata, &t, lost);
	EXPECT_EQ(lost, ts.gap_bytes);
	ASSERT_EQ(0, ipt_cmd(self->fd, IPT_IOC_RELEASE));
}

/*
 * A release while the paused thread is switched out (blocked in a read):
 * the pause ends then, a gap with exactly the bytes lost; when the thread
 * runs again, its first switch-in resumes the unit at the head with a
 * PSB+ and it writes up to the moved STOP.
 */
TEST_F_TIMEOUT(stream, thread_release_switched_out, 180)
{
	uint64_t at, lost;
	struct ipt_trace_state ts;
	struct tcase t;

	if (!self->sim || !(self->caps.features & IPT_FEAT_STREAM))
		SKIP(return, "needs the simulated unit with streaming");
	at = tstream_paused(_metadata, self->fd, &t, &ts);
	EXPECT_EQ(64 * KIB, at);
	atomic_store(&t.w.block, 1);
	ASSERT_TRUE(wait_sleeping(t.w.tid));
	ASSERT_EQ(0, ipt_state(self->fd, 0, &ts));
	EXPECT_EQ(IPT_TS_STREAM | IPT_TS_THREAD | IPT_TS_PAUSED, ts.status);
	EXPECT_EQ(1, ts.nr_gaps);
	/* a region released while it sleeps: the pause is over */
	consume(&t.cons, 8 * KIB);
	ASSERT_EQ(0, release(self->fd, 0, 8 * KIB));
	ASSERT_EQ(0, ipt_state(self->fd, 0, &ts));
	EXPECT_EQ(IPT_TS_STREAM | IPT_TS_THREAD, ts.status);
	EXPECT_EQ(at, ts.bytes_captured);
	EXPECT_EQ(1, ts.nr_gaps);
	lost = one_closed_gap(_metadata, self->fd, at);
	/* it sleeps: nothing is lost any more, and the count is exact */
	EXPECT_EQ(sim_sum("stopped") - t.stopped, lost);
	EXPECT_LT(0, lost);
	/* woken: it resumes at the head, a PSB+ first, up to STOP again */
	ASSERT_EQ(1, write(t.w.pipe[1], "g", 1));
	ASSERT_TRUE(wait_tstatus(self->fd, IPT_TS_PAUSED, &ts));
	EXPECT_EQ(at + 8 * KIB, ts.bytes_captured);
	EXPECT_EQ(0x02, t.cons.map[at % (64 * KIB)]);
	EXPECT_EQ(0x82, t.cons.map[at % (64 * KIB) + 1]);
	tstream_finish(_metadata, self->fd, &t, &ts);
	tstream_accounted(_metadata, &t, ts.gap_bytes);
	EXPECT_EQ(2, ts.nr_gaps);
	ASSERT_EQ(0, ipt_cmd(self->fd, IPT_IOC_RELEASE));
}

/*
 * A thread that exits while paused: its trace says EXITED, every byte
 * announced stays readable and releasable, and the pause is a closed gap
 * ending at the exit, with exactly the bytes lost.
 */
TEST_F_TIMEOUT(stream, thread_exit_while_paused, 180)
{
	uint64_t at, lost;
	struct ipt_trace_state ts;
	struct tcase t;

	if (!self->sim || !(self->caps.features & IPT_FEAT_STREAM))
		SKIP(return, "needs the simulated unit with streaming");
	at = tstream_paused(_metadata, self->fd, &t, &ts);
	tworker_exit(_metadata, self->fd, &t, &ts);
	EXPECT_EQ(IPT_TS_STREAM | IPT_TS_THREAD | IPT_TS_EXITED, ts.status);
	EXPECT_EQ(at, ts.bytes_captured);
	EXPECT_EQ(64 * KIB, ts.bytes_valid);
	EXPECT_EQ(1, ts.nr_gaps);
	lost = one_closed_gap(_metadata, self->fd, at);
	EXPECT_EQ(sim_sum("stopped") - t.stopped, lost);
	consume(&t.cons, at);
	ASSERT_EQ(0, release(self->fd, 0, at));
	ASSERT_EQ(0, ipt_state(self->fd, 0, &ts));
	EXPECT_EQ(0, ts.bytes_valid);
	EXPECT_EQ(1, ts.nr_gaps);
	ASSERT_EQ(0, ipt_cmd(self->fd, IPT_IOC_STOP));
	ASSERT_EQ(0, ipt_state(self->fd, 0, &ts));
	EXPECT_EQ(at, ts.bytes_captured);
	tstream_accounted(_metadata, &t, ts.gap_bytes);
	tstream_close(&t);
	ASSERT_EQ(0, ipt_cmd(self->fd, IPT_IOC_RELEASE));
}

/*
 * A thread with a program of its own (sim task_feed): @n bytes of branch
 * content, installed before the trace starts, on CPU @cpu (-1: any).  It
 * runs it once the test writes to @pipe: until the simulator says it ran
 * to its end (@done set then), or with @spin until @quit, spinning in
 * user mode, then it exits.
 */
/* What an fworker does after its program: exit, spin, wait for a byte. */
#define FW_EXIT 0
#define FW_SPIN 1
#define FW_HOLD 2

struct fworker {
	int pipe[2];
	uint64_t n;
	int cpu;
	int spin;	/* FW_EXIT, FW_SPIN or FW_HOLD */
	pid_t tid;
	atomic_int ready;
	atomic_int done;
	atomic_int quit;
	int err;
};

/* Whether the calling thread's program ran to its end; -1: unknown. */
static int fworker_fed(int tf)
{
	size_t pos, len;
	char line[64];
	ssize_t n;

	n = read(tf, line, sizeof(line) - 1);
	if (n <= 0)
		return -1;
	line[n] = '\0';
	if (sscanf(line, "%zu %zu", &pos, &len) != 2)
		return -1;
	return pos == len;
}

static void *fworker_fn(void *arg)
{
	static uint8_t rec[16 + FEED_REC];
	struct fworker *w = arg;
	struct timespec t0, t;
	int tf = -1, fed = 0;
	uint64_t i;
	char b;

	w->tid = syscall(SYS_gettid);
	if (w->cpu >= 0 && pin(w->cpu)) {
		w->err = __LINE__;
		goto out;
	}
	tf = open(IPT_SIM_DEBUGFS "/task_feed", O_RDWR | O_TRUNC);
	if (tf < 0) {
		w->err = __LINE__;
		goto out;
	}
	ipt_sim_feed_tnt_rec(rec, FEED_REC);
	for (i = 0; !w->err && i < w->n / FEED_REC; i++)
		if (write(tf, rec, sizeof(rec)) != sizeof(rec))
			w->err = __LINE__;
	atomic_store(&w->ready, 1);
	if (w->err)
		goto out;
	if (read(w->pipe[0], &b, 1) != 1) {
		w->err = __LINE__;
		goto out;
	}
	/* Its program runs while it does: spin until it ends (30 s). */
	clock_gettime(CLOCK_MONOTONIC, &t0);
	while (w->spin != FW_SPIN && fed == 0) {
		fed = fworker_fed(tf);
		clock_gettime(CLOCK_MONOTONIC, &t);
		if (t.tv_sec - t0.tv_sec > 30)
			break;
	}
	if (w->spin != FW_SPIN && fed != 1)
		w->err = __LINE__;
	atomic_store(&w->done, 1);
	while (w->spin == FW_SPIN && !atomic_load(&w->quit))
		;
	/* FW_HOLD: waits in read() again until its next byte. */
	if (w->spin == FW_HOLD && read(w->pipe[0], &b, 1) != 1)
		w->err = __LINE__;
out:
	if (tf >= 0)
		close(tf);
	atomic_store(&w->ready, 1);
	return NULL;
}

/* Start @w (a program of @n bytes, on @cpu) and wait until it is ready. */
static void fworker_start(struct __test_metadata *_metadata,
			  struct fworker *w, pthread_t *th, uint64_t n,
			  int cpu, int spin)
{
	memset(w, 0, sizeof(*w));
	w->n = n;
	w->cpu = cpu;
	w->spin = spin;
	ASSERT_EQ(0, pipe(w->pipe));
	ASSERT_EQ(0, pthread_create(th, NULL, fworker_fn, w));
	while (!atomic_load(&w->ready))
		msleep(1);
	ASSERT_EQ(0, w->err);
}

/* Configure a per-thread stream of @size in @regions, no TSC, for @w. */
static void fworker_attach(struct __test_metadata *_metadata, int fd,
			   struct fworker *w, uint64_t size, uint32_t regions)
{
	struct ipt_attach a = { .size = sizeof(a) };
	struct ipt_config c;

	cfg_thread_stream(&c, size, regions);
	c.trace_flags &= ~IPT_TRACE_TSC;
	ASSERT_EQ(0, ipt_ioctl(fd, IPT_IOC_CONFIGURE, &c));
	a.tid = w->tid;
	ASSERT_EQ(0, ipt_ioctl(fd, IPT_IOC_ATTACH, &a));
	ASSERT_EQ(0, a.trace);
}

/*
 * A thread that exits with less than a region written wakes a poller
 * that blocked in poll() before it wrote anything: its data is ready now
 * (no region end will follow it), and no PMI or release says so.  The
 * poller's bound is POLL_MS (30 s): without the wake it sleeps to it.
 */
TEST_F_TIMEOUT(stream, thread_exit_partial_wakes_poller, 120)
{
	struct ipt_trace_state ts;
	struct fworker w;
	struct poller p;
	pthread_t th;

	if (!self->sim || !(self->caps.features & IPT_FEAT_STREAM))
		SKIP(return, "needs the simulated unit with streaming");
	fworker_start(_metadata, &w, &th, 2 * KIB, -1, FW_EXIT);
	/* 16 KiB regions; no TSC: its program's packets and PSB+ only */
	fworker_attach(_metadata, self->fd, &w, 64 * KIB, 4);
	ASSERT_EQ(0, ipt_cmd(self->fd, IPT_IOC_START));
	/* it waits in read(): nothing written, nothing ready */
	ASSERT_TRUE(wait_sleeping(w.tid));
	ASSERT_EQ(0, ipt_state(self->fd, 0, &ts));
	ASSERT_EQ(0, ts.bytes_captured);
	ASSERT_TRUE(poller_start(&p, self->fd))
		TH_LOG("the poller never slept in poll()");
	ASSERT_EQ(1, write(w.pipe[1], "g", 1));
	pthread_join(th, NULL);
	EXPECT_EQ(0, w.err);
	EXPECT_TRUE(poller_join(&p))
		TH_LOG("nothing woke the poller: it slept to its bound");
	EXPECT_EQ(1, p.ret);
	EXPECT_EQ(POLLIN, p.revents);
	ASSERT_TRUE(wait_tstatus(self->fd, IPT_TS_EXITED, &ts));
	EXPECT_EQ(IPT_TS_STREAM | IPT_TS_THREAD | IPT_TS_EXITED, ts.status);
	EXPECT_LT(w.n, ts.bytes_captured);
	EXPECT_GT(16 * KIB, ts.bytes_captured);
	EXPECT_EQ(0, ts.nr_gaps);
	ASSERT_EQ(0, release(self->fd, 0, ts.bytes_captured));
	EXPECT_FALSE(poll_in(self->fd, 0));
	close(w.pipe[0]);
	close(w.pipe[1]);
	ASSERT_EQ(0, ipt_cmd(self->fd, IPT_IOC_STOP));
	ASSERT_EQ(0, ipt_cmd(self->fd, IPT_IOC_RELEASE));
}

/*
 * A live thread that went to sleep with less than a region written is
 * not ready: a region end follows when it runs again.  poll() said ready
 * whenever a traced thread was switched out, so a consumer that releases
 * whole regions spun in poll(), GET_TRACE, poll().  Its exit makes the
 * data ready (thread_exit_partial_wakes_poller: and wakes the pollers).
 */
TEST_F_TIMEOUT(stream, thread_asleep_partial_not_ready, 120)
{
	struct ipt_trace_state ts;
	struct fworker w;
	pthread_t th;

	if (!self->sim || !(self->caps.features & IPT_FEAT_STREAM))
		SKIP(return, "needs the simulated unit with streaming");
	fworker_start(_metadata, &w, &th, 2 * KIB, -1, FW_HOLD);
	/* 16 KiB regions; no TSC: its program's packets and PSB+ only */
	fworker_attach(_metadata, self->fd, &w, 64 * KIB, 4);
	ASSERT_EQ(0, ipt_cmd(self->fd, IPT_IOC_START));
	ASSERT_EQ(1, write(w.pipe[1], "g", 1));
	/* Bounded (30 s, never reached when all is well): no hang. */
	for (int i = 0; i < 10 * POLLS && !atomic_load(&w.done); i++)
		msleep(1);
	ASSERT_TRUE(atomic_load(&w.done));
	ASSERT_EQ(0, w.err);
	/* its program ran to its end; it waits in read() again */
	ASSERT_TRUE(wait_in_syscall(w.tid, SYS_read));
	ASSERT_EQ(0, ipt_state(self->fd, 0, &ts));
	ASSERT_EQ(IPT_TS_STREAM | IPT_TS_THREAD, ts.status);
	ASSERT_LT(w.n, ts.bytes_captured);
	ASSERT_GT(16 * KIB, ts.bytes_captured);
	EXPECT_FALSE(poll_in(self->fd, 0))
		TH_LOG("a sleeping thread's partial region polled ready");
	ASSERT_EQ(1, write(w.pipe[1], "q", 1));
	pthread_join(th, NULL);
	EXPECT_EQ(0, w.err);
	ASSERT_TRUE(wait_tstatus(self->fd, IPT_TS_EXITED, &ts));
	EXPECT_TRUE(poll_in(self->fd, 0));
	ASSERT_EQ(0, release(self->fd, 0, ts.bytes_captured));
	EXPECT_FALSE(poll_in(self->fd, 0));
	close(w.pipe[0]);
	close(w.pipe[1]);
	ASSERT_EQ(0, ipt_cmd(self->fd, IPT_IOC_STOP));
	ASSERT_EQ(0, ipt_cmd(self->fd, IPT_IOC_RELEASE));
}

/*
 * The per-thread fault cases: the traced thread on CPU 1, with a program
 * of @n bytes (sim task_feed), the test's thread on CPU 0; the MSR
 * switching path (ipt's force_msr: gp_ctl faults WRMSRs only, and an
 * XSAVES clears TraceEn without one); a 64 KiB stream in 8 regions, no
 * TSC.  @gp is written to cpu1/gp_ctl before the thread runs.  The thread
 * spins in user mode until told to quit, so it stays loaded on CPU 1,
 * where a release stops and restarts the unit in a cross-CPU call, in
 * hard-interrupt context, as the PMI handler runs: gp_ctl with bit 2
 * (IRQ) faults there and never in a context switch.  *@bytes: the sims'
 * byte count before the start.
 */
#define FORCE_MSR "/sys/module/ipt/parameters/force_msr"
#define GP_CLEAR 1
#define GP_SET 2
#define GP_IRQ 4

static void tfault_start(struct __test_metadata *_metadata, int fd,
			 struct fworker *w, pthread_t *th, uint64_t n,
			 uint64_t gp, uint64_t *bytes)
{
	ASSERT_EQ(0, ipt_write_file(FORCE_MSR, "1"));
	ASSERT_EQ(0, pin(0));
	fworker_start(_metadata, w, th, n, 1, FW_SPIN);
	/*
	 * Off CPU 1 (blocked in read()) before the fault is armed: START's
	 * kick, a cross-CPU call, must not load it and take the fault meant
	 * for what the case does after.
	 */
	ASSERT_TRUE(wait_in_syscall(w->tid, SYS_read));
	fworker_attach(_metadata, fd, w, 64 * KIB, 8);
	ASSERT_EQ(0, sim_cpu_write(1, "gp_ctl", gp));
	*bytes = sim_sum("bytes");
	ASSERT_EQ(0, ipt_cmd(fd, IPT_IOC_START));
	ASSERT_EQ(1, write(w->pipe[1], "g", 1));
}

/*
 * Three regions ready (its 28 KiB program ran, up to where no region
 * ends: no PMI comes any more); then release up to the next region end
 * with gp_ctl = @gp (with GP_IRQ).  A release done in place (the thread
 * was off its CPU just then: the fault not taken, gp_ctl unchanged) is
 * tried again a region on.  Returns the release's result; *@pos its
 * position (past 24 KiB when every release was done in place), *@ts the
 * state before it.
 */
static int tfault_release(struct __test_metadata *_metadata, int fd,
			  uint64_t gp, uint64_t *pos,
			  struct ipt_trace_state *ts)
{
	int i, ret = 0;

	for (i = 0; i < POLLS; i++) {
		ASSERT_EQ(0, ipt_state(fd, 0, ts));
		if (ts->bytes_captured >= 24 * KIB)
			break;
		msleep(10);
	}
	/* announced (24 KiB), or exact when it is switched out */
	ASSERT_LE(24 * KIB, ts->bytes_captured);
	ASSERT_GT(32 * KIB, ts->bytes_captured);
	ASSERT_EQ(0, sim_cpu_write(1, "gp_ctl", gp));
	for (*pos = 8 * KIB; *pos <= 24 * KIB; *pos += 8 * KIB) {
		ret = release(fd, 0, *pos);
		if (ret || sim_cpu_read(1, "gp_ctl") != gp)
			break;
		ASSERT_EQ(0, ipt_state(fd, 0, ts));
	}
	return ret;
}

/*
 * The thread quits and is joined, the session stops: every byte the
 * units wrote is in the trace (none written untracked).
 */
static void tfault_finish(struct __test_metadata *_metadata, int fd,
			  struct fworker *w, pthread_t th, uint64_t bytes,
			  struct ipt_trace_state *ts)
{
	atomic_store(&w->quit, 1);
	pthread_join(th, NULL);
	EXPECT_EQ(0, w->err);
	close(w->pipe[0]);
	close(w->pipe[1]);
	ASSERT_TRUE(wait_tstatus(fd, IPT_TS_EXITED, ts));
	ASSERT_EQ(0, ipt_cmd(fd, IPT_IOC_STOP));
	ASSERT_EQ(0, ipt_state(fd, 0, ts));
	EXPECT_EQ(sim_sum("bytes") - bytes, ts->bytes_captured);
	EXPECT_EQ(0, ts->nr_gaps);
	ipt_write_file(FORCE_MSR, "0");
}

/*
 * tfault_start() and tfault_release() until a release reaches the thread
 * on its CPU: whether it does is the scheduler's (something else may run
 * on CPU 1 at each of the three releases), and a scenario whose releases
 * were all done in place (seen: gp_ctl unchanged) is ended cleanly and
 * begun again, up to TFAULT_SCENARIOS times; never a guess from timing.
 */
#define TFAULT_SCENARIOS 10

static int tfault_start_release(struct __test_metadata *_metadata, int fd,
				struct fworker *w, pthread_t *th, uint64_t gp,
				uint64_t *bytes, uint64_t *pos,
				struct ipt_trace_state *ts)
{
	int k, ret = 0;

	for (k = 0; k < TFAULT_SCENARIOS; k++) {
		tfault_start(_metadata, fd, w, th, 28 * KIB, 0, bytes);
		ret = tfault_release(_metadata, fd, gp, pos, ts);
		if (*pos <= 24 * KIB)
			break;
		TH_LOG("scenario %d: the thread was off its CPU at every release: again", k);
		ASSERT_EQ(0, sim_cpu_write(1, "gp_ctl", 0));
		tfault_finish(_metadata, fd, w, *th, *bytes, ts);
		ASSERT_EQ(0, ipt_cmd(fd, IPT_IOC_RELEASE));
	}
	ASSERT_GE(24 * KIB, *pos)
		TH_LOG("the thread was off its CPU at every release of %d scenarios", k);
	return ret;
}

/*
 * A release of a running thread whose stop faults (the WRMSR clearing
 * TraceEn is #GP, TraceEn stays set) fails with EIO and changes nothing:
 * the release position, the thread loaded (no failed load, not cut, the
 * unit writing into its trace: every byte it wrote is there at the end).
 * Retried, it works.
 */
TEST_F_TIMEOUT(stream, thread_release_stop_fault_changes_nothing, 120)
{
	struct ipt_trace_state ts, ts2;
	uint64_t bytes, pos;
	struct fworker w;
	pthread_t th;

	if (!self->sim || !(self->caps.features & IPT_FEAT_STREAM))
		SKIP(return, "needs the simulated unit with streaming");
	if (nr_cpus() < 2)
		SKIP(return, "needs two CPUs");
	EXPECT_EQ(-EIO, tfault_start_release(_metadata, self->fd, &w, &th,
					     GP_IRQ | GP_CLEAR, &bytes, &pos, &ts));
	EXPECT_EQ(GP_IRQ, sim_cpu_read(1, "gp_ctl"));
	ASSERT_EQ(0, ipt_state(self->fd, 0, &ts2));
	EXPECT_FALSE(ts2.status & (IPT_TS_CUT | IPT_TS_PAUSED));
	EXPECT_EQ(ts.released, ts2.released);
	EXPECT_LE(24 * KIB, ts2.bytes_captured);
	EXPECT_EQ(ts.busy, ts2.busy);
	/* retried: done */
	ASSERT_EQ(0, sim_cpu_write(1, "gp_ctl", 0));
	EXPECT_EQ(0, release(self->fd, 0, pos));
	ASSERT_EQ(0, ipt_state(self->fd, 0, &ts2));
	EXPECT_EQ(pos, ts2.released);
	EXPECT_FALSE(ts2.status & IPT_TS_CUT);
	EXPECT_EQ(ts.busy, ts2.busy);
	tfault_finish(_metadata, self->fd, &w, th, bytes, &ts);
	EXPECT_FALSE(ts.status & IPT_TS_CUT);
	ASSERT_EQ(0, ipt_cmd(self->fd, IPT_IOC_RELEASE));
}

/*
 * A release of a running thread whose reload faults (the WRMSR setting
 * TraceEn is #GP) holds, as a per-CPU restart that fails: it returns 0,
 * the release is done, and the trace is cut (IPT_TS_CUT): the thread ran
 * untraced until its next switch-in.
 */
TEST_F_TIMEOUT(stream, thread_release_reload_fault_cuts, 120)
{
	struct ipt_trace_state ts, ts2;
	uint64_t bytes, pos;
	struct fworker w;
	pthread_t th;

	if (!self->sim || !(self->caps.features & IPT_FEAT_STREAM))
		SKIP(return, "needs the simulated unit with streaming");
	if (nr_cpus() < 2)
		SKIP(return, "needs two CPUs");
	EXPECT_EQ(0, tfault_start_release(_metadata, self->fd, &w, &th,
					  GP_IRQ | GP_SET, &bytes, &pos, &ts));
	EXPECT_EQ(GP_IRQ, sim_cpu_read(1, "gp_ctl"));
	ASSERT_EQ(0, ipt_state(self->fd, 0, &ts2));
	EXPECT_TRUE(ts2.status & IPT_TS_CUT)
		TH_LOG("a failed reload left the trace uncut");
	EXPECT_EQ(pos, ts2.released);
	EXPECT_EQ(ts.busy + 1, ts2.busy);
	tfault_finish(_metadata, self->fd, &w, th, bytes, &ts);
	EXPECT_TRUE(ts.status & IPT_TS_CUT);
	ASSERT_EQ(0, ipt_cmd(self->fd, IPT_IOC_RELEASE));
}

/*
 * A PMI whose restart faults (the handler stops the unit to read where
 * it is; re-enabling it is #GP) leaves the unit off while the thread
 * runs on: its unload on the MSR path, which writes CTL without reading
 * it, marks the trace cut, as a per-CPU stop that finds TraceEn clear.
 */
TEST_F_TIMEOUT(stream, thread_pmi_restart_fault_cuts, 120)
{
	struct ipt_trace_state ts;
	struct fworker w;
	uint64_t bytes, gp;
	pthread_t th;

	if (!self->sim || !(self->caps.features & IPT_FEAT_STREAM))
		SKIP(return, "needs the simulated unit with streaming");
	if (nr_cpus() < 2)
		SKIP(return, "needs two CPUs");
	gp = ipt_sim_stat(1, "gp");
	/* 12 KiB: one region ends, one PMI */
	tfault_start(_metadata, self->fd, &w, &th, 12 * KIB, GP_IRQ | GP_SET,
		     &bytes);
	ASSERT_EQ(0, ipt_sim_wait_stat(1, "gp", gp + 1))
		TH_LOG("no PMI restart faulted");
	EXPECT_EQ(GP_IRQ, sim_cpu_read(1, "gp_ctl"));
	tfault_finish(_metadata, self->fd, &w, th, bytes, &ts);
	EXPECT_TRUE(ts.status & IPT_TS_CUT)
		TH_LOG("the unit was off since the PMI, the trace not cut");
	/* a switch-in may have enabled it again: its program ran to the end */
	EXPECT_LE(8 * KIB, ts.bytes_captured);
	EXPECT_GT(16 * KIB, ts.bytes_captured);
	ASSERT_EQ(0, ipt_cmd(self->fd, IPT_IOC_RELEASE));
}

TEST_HARNESS_MAIN
