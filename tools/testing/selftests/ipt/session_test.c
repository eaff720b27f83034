// SPDX-License-Identifier: GPL-2.0
/*
 * kselftest: the session commands of /dev/ipt against the simulated unit -
 * every command's success and each failure with its errno, the state
 * machine, one owner at a time, mmap rules and lifetime.  The ioctl
 * fuzzer is ipt_fuzz.c.
 */
#define _GNU_SOURCE
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>

#include "ipt_lib.h"
#include "kselftest_harness.h"

#define KIB 1024ULL

FIXTURE(s) {
	int fd;
	struct ipt_caps caps;
	struct ipt_config cfg;
	uint64_t mask[2];
};

FIXTURE_SETUP(s)
{
	if (!ipt_sim_loaded())
		SKIP(return, "the simulated unit (ipt_sim) is not loaded");
	self->fd = open(IPT_DEVICE_PATH, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, self->fd);
	self->caps.size = sizeof(self->caps);
	ASSERT_EQ(0, ipt_ioctl(self->fd, IPT_IOC_GET_CAPS, &self->caps));
	memset(self->mask, 0, sizeof(self->mask));
	ipt_cfg_cpu(&self->cfg, self->mask, 0, 8 * KIB);
}

FIXTURE_TEARDOWN(s)
{
	if (self->fd >= 0)
		close(self->fd);
}

static int configure(int fd, struct ipt_config *cfg)
{
	return ipt_ioctl(fd, IPT_IOC_CONFIGURE, cfg);
}

TEST_F(s, caps_report_max_trace_size)
{
	EXPECT_LT(0, self->caps.max_trace_size);
	EXPECT_EQ(0, self->caps.max_trace_size % 4096);
}

TEST_F(s, lifecycle)
{
	struct ipt_trace_state ts;

	ASSERT_EQ(0, configure(self->fd, &self->cfg));
	ASSERT_EQ(0, ipt_state(self->fd, 0, &ts));
	EXPECT_EQ(sizeof(ts), ts.size);
	EXPECT_EQ(IPT_STATE_CONFIGURED, ts.state);
	EXPECT_EQ(8 * KIB, ts.buffer_size);
	EXPECT_EQ(0, ts.mmap_offset);
	EXPECT_EQ(0, ts.status);
	EXPECT_EQ(0, ts.bytes_captured);
	EXPECT_LE(1, ts.nr_chunks);
	EXPECT_EQ(1, ts.nr_tables);
	ASSERT_EQ(0, ipt_cmd(self->fd, IPT_IOC_START));
	ASSERT_EQ(0, ipt_state(self->fd, 0, &ts));
	EXPECT_EQ(IPT_STATE_TRACING, ts.state);
	EXPECT_EQ(IPT_TS_RUNNING, ts.status);
	ASSERT_EQ(0, ipt_cmd(self->fd, IPT_IOC_STOP));
	ASSERT_EQ(0, ipt_state(self->fd, 0, &ts));
	EXPECT_EQ(IPT_STATE_STOPPED, ts.state);
	EXPECT_EQ(0, ts.status & IPT_TS_RUNNING);
	EXPECT_LT(0, ts.bytes_captured);
	ASSERT_EQ(0, ipt_cmd(self->fd, IPT_IOC_RELEASE));
	EXPECT_EQ(-EINVAL, ipt_state(self->fd, 0, &ts));
	/* And again, on the same file. */
	ASSERT_EQ(0, configure(self->fd, &self->cfg));
	ASSERT_EQ(0, ipt_cmd(self->fd, IPT_IOC_RELEASE));
}

TEST_F(s, commands_in_wrong_states)
{
	struct ipt_trace_state ts;

	/* IDLE */
	EXPECT_EQ(-EINVAL, ipt_cmd(self->fd, IPT_IOC_START));
	EXPECT_EQ(-EINVAL, ipt_cmd(self->fd, IPT_IOC_STOP));
	EXPECT_EQ(-EINVAL, ipt_cmd(self->fd, IPT_IOC_RELEASE));
	EXPECT_EQ(-EINVAL, ipt_state(self->fd, 0, &ts));
	/* CONFIGURED */
	ASSERT_EQ(0, configure(self->fd, &self->cfg));
	EXPECT_EQ(-EBUSY, configure(self->fd, &self->cfg));
	EXPECT_EQ(-EINVAL, ipt_cmd(self->fd, IPT_IOC_STOP));
	EXPECT_EQ(-ENOENT, ipt_state(self->fd, 1, &ts));
	/* TRACING */
	ASSERT_EQ(0, ipt_cmd(self->fd, IPT_IOC_START));
	EXPECT_EQ(-EBUSY, ipt_cmd(self->fd, IPT_IOC_START));
	EXPECT_EQ(-EBUSY, ipt_cmd(self->fd, IPT_IOC_RELEASE));
	EXPECT_EQ(-EBUSY, configure(self->fd, &self->cfg));
	ASSERT_EQ(0, ipt_state(self->fd, 0, &ts));
	EXPECT_EQ(IPT_STATE_TRACING, ts.state);
	/* STOPPED */
	ASSERT_EQ(0, ipt_cmd(self->fd, IPT_IOC_STOP));
	EXPECT_EQ(-EINVAL, ipt_cmd(self->fd, IPT_IOC_STOP));
	EXPECT_EQ(-EBUSY, configure(self->fd, &self->cfg));
	ASSERT_EQ(0, ipt_state(self->fd, 0, &ts));
	EXPECT_EQ(IPT_STATE_STOPPED, ts.state);
	ASSERT_EQ(0, ipt_cmd(self->fd, IPT_IOC_RELEASE));
}

TEST_F(s, one_owner_at_a_time)
{
	int fd2 = open(IPT_DEVICE_PATH, O_RDWR);

	ASSERT_LE(0, fd2);
	ASSERT_EQ(0, configure(self->fd, &self->cfg));
	EXPECT_EQ(-EBUSY, configure(fd2, &self->cfg));
	EXPECT_EQ(-EINVAL, ipt_cmd(fd2, IPT_IOC_START));
	ASSERT_EQ(0, ipt_cmd(self->fd, IPT_IOC_RELEASE));
	EXPECT_EQ(0, configure(fd2, &self->cfg));
	EXPECT_EQ(-EBUSY, configure(self->fd, &self->cfg));
	close(fd2);
	EXPECT_EQ(0, configure(self->fd, &self->cfg));
}

TEST_F(s, simple_command_arguments)
{
	struct ipt_cmd c = { .size = sizeof(c), .flags = 1 };
	struct { struct ipt_cmd c; uint32_t extra; } big = {
		{ sizeof(big), 0 }, 1 };

	ASSERT_EQ(0, configure(self->fd, &self->cfg));
	EXPECT_EQ(-EINVAL, ipt_ioctl(self->fd, IPT_IOC_START, &c));
	c.flags = 0;
	c.size = 4;
	EXPECT_EQ(-EINVAL, ipt_ioctl(self->fd, IPT_IOC_START, &c));
	EXPECT_EQ(-E2BIG, ipt_ioctl(self->fd, IPT_IOC_START, &big));
	EXPECT_EQ(-EFAULT, ipt_ioctl(self->fd, IPT_IOC_START, NULL));
	EXPECT_EQ(-ENOTTY, ipt_ioctl(self->fd, _IOW(IPT_IOC_MAGIC, 0x06, struct ipt_cmd), &c));
	EXPECT_EQ(-ENOTTY, ipt_ioctl(self->fd, _IOR(IPT_IOC_MAGIC, 0x02, struct ipt_cmd), &c));
	big.extra = 0;
	EXPECT_EQ(0, ipt_ioctl(self->fd, IPT_IOC_START, &big));
	EXPECT_EQ(0, ipt_cmd(self->fd, IPT_IOC_STOP));
}

TEST_F(s, get_trace_arguments)
{
	struct ipt_trace_state ts;
	uint32_t orders[4];

	ASSERT_EQ(0, configure(self->fd, &self->cfg));
	memset(&ts, 0, sizeof(ts));
	ts.size = sizeof(ts);
	ts.flags = 1;
	EXPECT_EQ(-EINVAL, ipt_ioctl(self->fd, IPT_IOC_GET_TRACE, &ts));
	ts.flags = 0;
	ts.reserved[0] = 1;
	EXPECT_EQ(-EINVAL, ipt_ioctl(self->fd, IPT_IOC_GET_TRACE, &ts));
	ts.reserved[0] = 0;
	ts.chunks_len = 4;
	EXPECT_EQ(-EINVAL, ipt_ioctl(self->fd, IPT_IOC_GET_TRACE, &ts));
	ts.chunks_ptr = 8;
	EXPECT_EQ(-EFAULT, ipt_ioctl(self->fd, IPT_IOC_GET_TRACE, &ts));
	ts.chunks_ptr = (uintptr_t)orders;
	ts.cpu = 9999;
	EXPECT_EQ(-ENOENT, ipt_ioctl(self->fd, IPT_IOC_GET_TRACE, &ts));
	ts.cpu = 0;
	ASSERT_EQ(0, ipt_ioctl(self->fd, IPT_IOC_GET_TRACE, &ts));
	EXPECT_EQ(8 * KIB, ts.buffer_size);
	/* An old caller's short struct. */
	ts.size = IPT_TRACE_STATE_SIZE_VER0 - 8;
	EXPECT_EQ(-EINVAL, ipt_ioctl(self->fd, IPT_IOC_GET_TRACE, &ts));
}

/* Every malformed or unsupported configuration, with its errno. */
TEST_F(s, configure_errors)
{
	struct ipt_config c;
	uint64_t m[IPT_MAX_CPU_MASK_WORDS + 1] = { 0 };

#define TRY(err, stmt) do {						\
		c = self->cfg;						\
		stmt;							\
		EXPECT_EQ(err, configure(self->fd, &c)) TH_LOG("%s", #stmt); \
	} while (0)

	TRY(-EINVAL, c.size = IPT_CONFIG_SIZE_VER0 - 8);
	TRY(-EINVAL, c.flags = 2);
	TRY(-EINVAL, c.mode = 0);
	TRY(-EINVAL, c.mode = 3);
	/* Per-thread sessions choose no CPUs (thread_test covers them). */
	TRY(-EINVAL, c.mode = IPT_MODE_THREAD);
	TRY(-EINVAL, c.trace_flags = 1ULL << 11 | IPT_TRACE_USER);
	TRY(-EINVAL, c.trace_flags = IPT_TRACE_BRANCH);
	TRY(-EINVAL, c.mtc_freq = 3);
	TRY(-EINVAL, c.trace_flags |= IPT_TRACE_MTC; c.mtc_freq = 16);
	TRY(-EOPNOTSUPP, c.trace_flags |= IPT_TRACE_MTC; c.mtc_freq = 1);
	TRY(-EINVAL, c.cyc_thresh = 1);
	TRY(-EINVAL, c.trace_flags |= IPT_TRACE_CYC; c.cyc_thresh = 16);
	TRY(-EOPNOTSUPP, c.trace_flags |= IPT_TRACE_CYC; c.cyc_thresh = 15);
	TRY(-EINVAL, c.psb_freq = 16);
	TRY(-EOPNOTSUPP, c.psb_freq = 15);
	TRY(-EINVAL, c.trace_flags |= IPT_TRACE_PTWRITE_FUP);
	TRY(-EINVAL, c.cr3_match = 0x1000);
	TRY(-EINVAL, c.trace_flags |= IPT_TRACE_CR3_FILTER; c.cr3_match = 0x1001);
	TRY(-EINVAL, c.ranges[0].kind = 3; c.ranges[0].end = 1);
	TRY(-EINVAL, c.ranges[0].reserved = 1);
	TRY(-EINVAL, c.ranges[0].start = 1);
	TRY(-EINVAL, c.ranges[0].kind = 1; c.ranges[0].start = 2; c.ranges[0].end = 1);
	TRY(-EINVAL, c.ranges[0].kind = 1; c.ranges[0].end = 1ULL << 47);
	TRY(-EOPNOTSUPP, c.ranges[self->caps.num_addr_ranges].kind = 2;
	    c.ranges[self->caps.num_addr_ranges].end = 0x1000);
	TRY(-EINVAL, c.reserved[2] = 1);
	TRY(-EINVAL, c.buffer_flags = 4);
	TRY(-EINVAL, c.buffer_size = 0);
	TRY(-EINVAL, c.buffer_size = 4096 + 512);
	TRY(-EFBIG, c.buffer_size = self->caps.max_trace_size + 4096);
	TRY(-EINVAL, c.chunk_order = 11);
	TRY(-EINVAL, c.chunk_order = 28);
	TRY(-EINVAL, c.chunk_order = 14; c.buffer_flags = IPT_BUFFER_EXACT_CHUNKS;
	    c.buffer_size = 8192);
	TRY(-EINVAL, c.flags = IPT_CONFIG_ALL_CPUS);
	TRY(-EINVAL, c.cpu_mask_words = 0);
	TRY(-EINVAL, c.cpu_mask_words = IPT_MAX_CPU_MASK_WORDS + 1;
	    c.cpu_mask_ptr = (uintptr_t)m);
	TRY(-EINVAL, c.cpu_mask_ptr = (uintptr_t)m);
	TRY(-EFAULT, c.cpu_mask_ptr = 8);
	m[IPT_MAX_CPU_MASK_WORDS - 1] = 1ULL << 63;
	TRY(-EINVAL, c.cpu_mask_words = IPT_MAX_CPU_MASK_WORDS;
	    c.cpu_mask_ptr = (uintptr_t)m);
	/* None of that left a session behind. */
	EXPECT_EQ(-EINVAL, ipt_cmd(self->fd, IPT_IOC_START));
	/* What the simulated model (icl) does have is accepted. */
	TRY(0, c.trace_flags |= IPT_TRACE_KERNEL | IPT_TRACE_MTC | IPT_TRACE_CYC |
	    IPT_TRACE_PTWRITE | IPT_TRACE_PTWRITE_FUP | IPT_TRACE_POWER_EVENTS |
	    IPT_TRACE_NO_RETCOMP | IPT_TRACE_CR3_FILTER;
	    c.mtc_freq = 3; c.cyc_thresh = 2; c.psb_freq = 1; c.cr3_match = 0x1000;
	    c.ranges[0].kind = IPT_RANGE_FILTER; c.ranges[0].start = 0x400000;
	    c.ranges[0].end = 0x500000;
	    c.ranges[1].kind = IPT_RANGE_STOP; c.ranges[1].start = -4096ULL;
	    c.ranges[1].end = -1ULL);
	ASSERT_EQ(0, ipt_cmd(self->fd, IPT_IOC_START));
	EXPECT_EQ(0, ipt_cmd(self->fd, IPT_IOC_STOP));
#undef TRY
}

/*
 * Kernel tracing and per-CPU mode need CAP_PERFMON or CAP_SYS_ADMIN at
 * configure time; a per-thread session of user code does not.
 */
TEST_F(s, kernel_tracing_is_privileged)
{
	int caps[] = { CAP_PERFMON, CAP_SYS_ADMIN }, status;
	pid_t pid = fork();

	ASSERT_LE(0, pid);
	if (!pid) {
		if (ipt_drop_caps(caps, 2))
			_exit(2);
		self->cfg.trace_flags |= IPT_TRACE_KERNEL;
		if (configure(self->fd, &self->cfg) != -EPERM)
			_exit(1);
		self->cfg.trace_flags &= ~IPT_TRACE_KERNEL;
		if (configure(self->fd, &self->cfg) != -EPERM)
			_exit(3);
		self->cfg.mode = IPT_MODE_THREAD;
		self->cfg.cpu_mask_words = 0;
		self->cfg.cpu_mask_ptr = 0;
		self->cfg.max_threads = 1;
		_exit(configure(self->fd, &self->cfg) ? 4 : 0);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_EQ(0, WEXITSTATUS(status));
}

static unsigned long module_refcnt(const char *mod)
{
	char path[64], buf[32] = "";
	int fd;

	snprintf(path, sizeof(path), "/sys/module/%s/refcnt", mod);
	fd = open(path, O_RDONLY);
	if (fd < 0)
		return ~0UL;
	if (read(fd, buf, sizeof(buf) - 1) < 0)
		buf[0] = 0;
	close(fd);
	return strtoul(buf, NULL, 10);
}

TEST_F(s, mmap_rules)
{
	struct ipt_trace_state ts;
	void *p;

	p = mmap(NULL, 4096, PROT_READ, MAP_SHARED, self->fd, 0);
	EXPECT_EQ(MAP_FAILED, p);
	EXPECT_EQ(EINVAL, errno);
	ASSERT_EQ(0, configure(self->fd, &self->cfg));
	ASSERT_EQ(0, ipt_state(self->fd, 0, &ts));
	p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, self->fd, 0);
	EXPECT_EQ(MAP_FAILED, p);
	EXPECT_EQ(EPERM, errno);
	p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE, self->fd, 0);
	EXPECT_EQ(MAP_FAILED, p);
	EXPECT_EQ(EPERM, errno);
	p = mmap(NULL, ts.buffer_size + 4096, PROT_READ, MAP_SHARED, self->fd, 0);
	EXPECT_EQ(MAP_FAILED, p);
	EXPECT_EQ(EINVAL, errno);
	p = mmap(NULL, 4096, PROT_READ, MAP_SHARED, self->fd, ts.buffer_size);
	EXPECT_EQ(MAP_FAILED, p);
	EXPECT_EQ(EINVAL, errno);
	p = mmap(NULL, 8192, PROT_READ, MAP_SHARED, self->fd, 4096);
	EXPECT_EQ(MAP_FAILED, p);
	EXPECT_EQ(EINVAL, errno);
	p = mmap(NULL, 4096, PROT_READ, MAP_SHARED, self->fd, 1ULL << 46);
	EXPECT_EQ(MAP_FAILED, p);
	/* Part of the buffer, then all of it. */
	p = mmap(NULL, 4096, PROT_READ, MAP_SHARED, self->fd, 4096);
	ASSERT_NE(MAP_FAILED, p);
	EXPECT_EQ(-1, mprotect(p, 4096, PROT_READ | PROT_WRITE));
	EXPECT_EQ(EACCES, errno);
	munmap(p, 4096);
	p = mmap(NULL, ts.buffer_size, PROT_READ, MAP_PRIVATE, self->fd, 0);
	ASSERT_NE(MAP_FAILED, p);
	/* Zeroed before tracing. */
	for (size_t i = 0; i < ts.buffer_size; i++) {
		ASSERT_EQ(0, ((uint8_t *)p)[i]);
	}
	munmap(p, ts.buffer_size);
}

/* Mappings outlive stop, release and close, and keep ipt.ko busy. */
TEST_F_TIMEOUT(s, mmap_lifetime, 120)
{
	struct ipt_trace_state ts;
	unsigned long ref0 = module_refcnt("ipt");
	uint8_t *p, *q, *copy;
	uint64_t before, psb;

	/*
	 * Stop-on-full, so that the buffer starts with the unit's first PSB
	 * however late the stop comes: an 8 KiB ring wraps within 8 ms at
	 * the unit's 1 MiB/s, and after a wrap offset 0 is wherever the
	 * data happens to be (what failed on a loaded host).
	 */
	self->cfg.buffer_flags = IPT_BUFFER_STOP_ON_FULL;
	ASSERT_EQ(0, configure(self->fd, &self->cfg));
	ASSERT_EQ(0, ipt_state(self->fd, 0, &ts));
	p = mmap(NULL, ts.buffer_size, PROT_READ, MAP_SHARED, self->fd, 0);
	ASSERT_NE(MAP_FAILED, p);
	EXPECT_LT(ref0, module_refcnt("ipt"));
	before = ipt_sim_stat(0, "bytes");
	psb = ipt_sim_stat(0, "psb");
	ASSERT_EQ(0, ipt_cmd(self->fd, IPT_IOC_START));
	/* The unit wrote its first PSB into the buffer: wait for it. */
	ASSERT_EQ(0, ipt_sim_wait_stat(0, "psb", psb + 1));
	ASSERT_EQ(0, ipt_sim_wait_stat(0, "bytes", before + 16));
	ASSERT_EQ(0, ipt_cmd(self->fd, IPT_IOC_STOP));
	copy = malloc(ts.buffer_size);
	ASSERT_NE(NULL, copy);
	memcpy(copy, p, ts.buffer_size);
	EXPECT_TRUE(ipt_is_psb(p, ts.buffer_size));
	ASSERT_EQ(0, ipt_cmd(self->fd, IPT_IOC_RELEASE));
	EXPECT_EQ(0, memcmp(copy, p, ts.buffer_size));
	/* A new session gets new, zeroed memory: nothing leaks across. */
	ASSERT_EQ(0, configure(self->fd, &self->cfg));
	q = mmap(NULL, ts.buffer_size, PROT_READ, MAP_SHARED, self->fd, 0);
	ASSERT_NE(MAP_FAILED, q);
	for (size_t i = 0; i < ts.buffer_size; i++) {
		ASSERT_EQ(0, q[i]);
	}
	munmap(q, ts.buffer_size);
	close(self->fd);
	self->fd = -1;
	EXPECT_EQ(0, memcmp(copy, p, ts.buffer_size));
	EXPECT_LT(ref0 - 1, module_refcnt("ipt"));
	EXPECT_NE(0, system("rmmod ipt 2>/dev/null"));
	munmap(p, ts.buffer_size);
	EXPECT_GE(ref0, module_refcnt("ipt"));
	free(copy);
}

/* Whether the running kernel has alloc_contig_range() (CONFIG_CONTIG_ALLOC). */
static int kernel_has_contig_alloc(void)
{
	FILE *f = fopen("/proc/kallsyms", "r");
	char line[256];
	int found = 0;

	if (!f)
		return -1;
	while (!found && fgets(line, sizeof(line), f)) {
		char *sym = strrchr(line, ' ');

		found = sym && !strcmp(sym + 1, "alloc_contig_range\n");
	}
	fclose(f);
	return found;
}

/* GET_TRACE of CPU 0 with the log2 chunk sizes in @orders[0..@len). */
static int chunk_orders(int fd, struct ipt_trace_state *ts, uint32_t *orders, uint32_t len)
{
	memset(ts, 0, sizeof(*ts));
	ts->size = sizeof(*ts);
	ts->chunks_ptr = (uintptr_t)orders;
	ts->chunks_len = len;
	return ipt_ioctl(fd, IPT_IOC_GET_TRACE, ts);
}

TEST_F(s, caps_report_max_chunk_order)
{
	int contig = kernel_has_contig_alloc();

	ASSERT_LE(0, contig);
	EXPECT_EQ(contig ? 27 : 22, self->caps.max_chunk_order);
	/* The linear address width (the sim's models: 48 or 57). */
	EXPECT_TRUE(self->caps.virt_addr_bits == 48 || self->caps.virt_addr_bits == 57);
}

/*
 * Chunks above the page allocator's 4 MiB (alloc_contig_range()): exactly
 * the size asked for, naturally aligned (the ToPA accepts them), zeroed,
 * traced into and mapped; beyond max_chunk_order, exact chunks fail with
 * ENOMEM and others fall back.  chunk_order 0 stays at 4 MiB.
 */
TEST_F_TIMEOUT(s, chunks_above_4mib, 120)
{
	const uint64_t size = 32 * KIB * KIB;
	unsigned int order = self->caps.max_chunk_order;
	struct ipt_trace_state ts;
	uint64_t before, psb;
	uint32_t orders[8];
	uint8_t *p;
	size_t i;

	ipt_cfg_cpu(&self->cfg, self->mask, 0, size);
	self->cfg.chunk_order = 24;
	if (order < 24) {
		/* No range allocator: exact fails, else 4 MiB chunks. */
		self->cfg.buffer_flags = IPT_BUFFER_EXACT_CHUNKS;
		EXPECT_EQ(-ENOMEM, configure(self->fd, &self->cfg));
		self->cfg.buffer_flags = 0;
		ASSERT_EQ(0, configure(self->fd, &self->cfg));
		ASSERT_EQ(0, ipt_state(self->fd, 0, &ts));
		EXPECT_EQ(8, ts.nr_chunks);
		return;
	}
	self->cfg.buffer_flags = IPT_BUFFER_EXACT_CHUNKS;
	ASSERT_EQ(0, configure(self->fd, &self->cfg));
	ASSERT_EQ(0, chunk_orders(self->fd, &ts, orders, 8));
	ASSERT_EQ(2, ts.nr_chunks);
	EXPECT_EQ(24, orders[0]);
	EXPECT_EQ(24, orders[1]);
	p = mmap(NULL, size, PROT_READ, MAP_SHARED, self->fd, 0);
	ASSERT_NE(MAP_FAILED, p);
	for (i = 0; i < size; i += 8) {
		if (*(uint64_t *)(p + i))
			break;
	}
	EXPECT_EQ(size, i);
	before = ipt_sim_stat(0, "bytes");
	psb = ipt_sim_stat(0, "psb");
	ASSERT_EQ(0, ipt_cmd(self->fd, IPT_IOC_START));
	/* The unit wrote its first PSB into the buffer: wait for it. */
	ASSERT_EQ(0, ipt_sim_wait_stat(0, "psb", psb + 1));
	ASSERT_EQ(0, ipt_sim_wait_stat(0, "bytes", before + 16));
	ASSERT_EQ(0, ipt_cmd(self->fd, IPT_IOC_STOP));
	ASSERT_EQ(0, ipt_state(self->fd, 0, &ts));
	EXPECT_LT(0, ts.bytes_captured);
	EXPECT_TRUE(ipt_is_psb(p, size));
	munmap(p, size);
	ASSERT_EQ(0, ipt_cmd(self->fd, IPT_IOC_RELEASE));

	/* chunk_order 0: the page allocator's largest block. */
	self->cfg.chunk_order = 0;
	self->cfg.buffer_flags = 0;
	ASSERT_EQ(0, configure(self->fd, &self->cfg));
	ASSERT_EQ(0, chunk_orders(self->fd, &ts, orders, 8));
	EXPECT_EQ(8, ts.nr_chunks);
	EXPECT_EQ(22, orders[0]);
	ASSERT_EQ(0, ipt_cmd(self->fd, IPT_IOC_RELEASE));
}

/*
 * Ten 16 MiB chunks of one buffer from the range allocator on the test VM
 * (1 GiB): the search for each chunk goes on from where the last one ended
 * and never spends its tries on ranges the buffer already holds (it used to
 * restart at the zone start and fail from the eighth chunk on, ENOMEM with
 * most of memory free).  Then the same as ten per-CPU-sized buffers in a
 * row: configure, release, configure again.
 */
TEST_F(s, ten_16mib_exact_chunks)
{
	const uint64_t size = 160 * KIB * KIB;
	struct ipt_trace_state ts;
	uint32_t orders[16];
	unsigned int i, round;

	if (self->caps.max_chunk_order < 24)
		SKIP(return, "no range allocator (max_chunk_order %u)",
		     self->caps.max_chunk_order);
	if (self->caps.max_trace_size < size)
		SKIP(return, "max_trace_size %llu is below 160 MiB",
		     (unsigned long long)self->caps.max_trace_size);
	for (round = 0; round < 3; round++) {
		ipt_cfg_cpu(&self->cfg, self->mask, 0, size);
		self->cfg.chunk_order = 24;
		self->cfg.buffer_flags = IPT_BUFFER_EXACT_CHUNKS;
		ASSERT_EQ(0, configure(self->fd, &self->cfg)) {
			TH_LOG("round %u: 10 x 16 MiB exact chunks refused", round);
		}
		ASSERT_EQ(0, chunk_orders(self->fd, &ts, orders, 16));
		ASSERT_EQ(10, ts.nr_chunks);
		for (i = 0; i < 10; i++)
			EXPECT_EQ(24, orders[i]);
		ASSERT_EQ(0, ipt_cmd(self->fd, IPT_IOC_RELEASE));
	}
}

TEST_HARNESS_MAIN
