/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Helpers shared by ipt's kselftests.
 */
#ifndef IPT_SELFTEST_LIB_H
#define IPT_SELFTEST_LIB_H

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <linux/capability.h>
#include <linux/ipt.h>

/* ioctl() returning -errno, so that EXPECT_EQ can name the errno. */
static inline int ipt_ioctl(int fd, unsigned long cmd, void *arg)
{
	return ioctl(fd, cmd, arg) ? -errno : 0;
}

/*
 * In a child process, where the harness's ASSERTs do not reach the
 * parent: on failure say where and why (a TAP comment on stderr) and
 * _exit(1); the parent expects status 0.
 */
#define CHECK(cond, fmt, ...) do {						\
	if (!(cond)) {								\
		fprintf(stderr, "# %s:%d: %s: " fmt "\n", __FILE__, __LINE__,	\
			#cond, ##__VA_ARGS__);					\
		_exit(1);							\
	}									\
} while (0)

/* Drop @caps (CAP_* numbers, up to 63) from the effective set of this thread. */
static inline int ipt_drop_caps(const int *caps, int n)
{
	struct __user_cap_header_struct hdr = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct data[2];
	int i;

	if (syscall(SYS_capget, &hdr, data))
		return -errno;
	for (i = 0; i < n; i++)
		data[caps[i] / 32].effective &= ~(1u << (caps[i] % 32));
	return syscall(SYS_capset, &hdr, data) ? -errno : 0;
}

/* ---- an unprivileged user -------------------------------------------------- */

#include <grp.h>
#include <sys/prctl.h>

/* The unprivileged user tests become (nobody on Debian). */
#define IPT_TEST_UID	65534

/*
 * Drop to IPT_TEST_UID / IPT_TEST_UID, no supplementary groups; no
 * capabilities but @keep_cap (a CAP_* number), or none when it is -1.
 */
static inline int ipt_become_user_keep(int keep_cap)
{
	struct __user_cap_header_struct hdr = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct data[2] = { { 0 } };

	if (keep_cap >= 0 && prctl(PR_SET_KEEPCAPS, 1, 0, 0, 0))
		return -errno;
	if (setgroups(0, NULL) || setresgid(IPT_TEST_UID, IPT_TEST_UID, IPT_TEST_UID) ||
	    setresuid(IPT_TEST_UID, IPT_TEST_UID, IPT_TEST_UID))
		return -errno;
	if (keep_cap < 0)
		return 0;
	data[keep_cap / 32].effective = 1u << (keep_cap % 32);
	data[keep_cap / 32].permitted = 1u << (keep_cap % 32);
	return syscall(SYS_capset, &hdr, data) ? -errno : 0;
}

/* Drop to IPT_TEST_UID / IPT_TEST_UID, no supplementary groups, no capabilities. */
static inline int ipt_become_user(void)
{
	return ipt_become_user_keep(-1);
}

/* First line of /proc/cpuinfo starting with @key, its value; NULL if none. */
static inline char *ipt_cpuinfo(const char *key, char *buf, size_t len)
{
	FILE *f = fopen("/proc/cpuinfo", "r");
	char *ret = NULL;
	size_t klen = strlen(key);

	if (!f)
		return NULL;
	while (fgets(buf, len, f)) {
		char *colon = strchr(buf, ':');

		if (strncmp(buf, key, klen) || !colon ||
		    (buf[klen] != ' ' && buf[klen] != '\t' && buf[klen] != ':'))
			continue;
		ret = colon + 1 + (colon[1] == ' ');
		ret[strcspn(ret, "\n")] = '\0';
		break;
	}
	fclose(f);
	return ret;
}

/* VmPin of process @pid (0: this one), in KiB; -1 if not found. */
static inline long ipt_vm_pin_kb(pid_t pid)
{
	char path[64], line[256];
	long kb = -1;
	FILE *f;

	if (pid)
		snprintf(path, sizeof(path), "/proc/%d/status", pid);
	else
		snprintf(path, sizeof(path), "/proc/self/status");
	f = fopen(path, "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "VmPin: %ld kB", &kb) == 1)
			break;
	fclose(f);
	return kb;
}

/* ---- sessions ---------------------------------------------------------- */

#include <stdint.h>

/* A user-only branch trace of one CPU into @size bytes (a ring). */
static inline void ipt_cfg_cpu(struct ipt_config *cfg, uint64_t *mask, int cpu,
			       uint64_t size)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->size = sizeof(*cfg);
	cfg->mode = IPT_MODE_CPU;
	cfg->trace_flags = IPT_TRACE_USER | IPT_TRACE_BRANCH | IPT_TRACE_TSC;
	mask[cpu / 64] = 1ULL << (cpu % 64);
	cfg->cpu_mask_words = cpu / 64 + 1;
	cfg->cpu_mask_ptr = (uintptr_t)mask;
	cfg->buffer_size = size;
}

/* A user-only branch trace of up to @max threads, each into @size bytes (a ring). */
static inline void ipt_cfg_thread(struct ipt_config *cfg, uint64_t size, uint32_t max)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->size = sizeof(*cfg);
	cfg->mode = IPT_MODE_THREAD;
	cfg->trace_flags = IPT_TRACE_USER | IPT_TRACE_BRANCH | IPT_TRACE_TSC;
	cfg->buffer_size = size;
	cfg->max_threads = max;
}

static inline int ipt_cmd(int fd, unsigned long cmd)
{
	struct ipt_cmd c = { .size = sizeof(c) };

	return ipt_ioctl(fd, cmd, &c);
}

static inline int ipt_state(int fd, int cpu, struct ipt_trace_state *ts)
{
	memset(ts, 0, sizeof(*ts));
	ts->size = sizeof(*ts);
	ts->cpu = cpu;
	return ipt_ioctl(fd, IPT_IOC_GET_TRACE, ts);
}

/* ---- perf's intel_pt PMU ------------------------------------------------ */

#include <linux/perf_event.h>

/* perf's type number of the intel_pt PMU, or -errno (-ENOENT: no such PMU). */
static inline int ipt_perf_pt_type(void)
{
	char buf[32] = "";
	int fd = open("/sys/bus/event_source/devices/intel_pt/type", O_RDONLY), n;

	if (fd < 0)
		return -errno;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	return n > 0 ? atoi(buf) : -EIO;
}

/* perf_event_open(2) of a user-only intel_pt event: the fd, or -errno. */
static inline int ipt_perf_pt_open(int type, pid_t pid, int cpu)
{
	struct perf_event_attr a;
	int fd;

	memset(&a, 0, sizeof(a));
	a.size = sizeof(a);
	a.type = type;
	a.exclude_kernel = 1;
	fd = syscall(SYS_perf_event_open, &a, pid, cpu, -1, PERF_FLAG_FD_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

/* ---- the simulated unit's debugfs -------------------------------------- */

#define IPT_SIM_DEBUGFS "/sys/kernel/debug/ipt_sim"

static inline int ipt_sim_loaded(void)
{
	return access(IPT_SIM_DEBUGFS "/model", R_OK) == 0;
}

/* Value of @key in a "key value" lines file such as @path; ~0 if absent. */
static inline uint64_t ipt_file_stat(const char *path, const char *key)
{
	char line[256];
	uint64_t v = ~0ULL;
	size_t klen = strlen(key);
	FILE *f;

	f = fopen(path, "r");
	if (!f)
		return v;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, key, klen) && line[klen] == ' ') {
			v = strtoull(line + klen + 1, NULL, 0);
			break;
		}
	fclose(f);
	return v;
}

/* Value of counter @key in the simulated unit's cpuN/stats; ~0 if absent. */
static inline uint64_t ipt_sim_stat(int cpu, const char *key)
{
	char path[128];

	snprintf(path, sizeof(path), IPT_SIM_DEBUGFS "/cpu%d/stats", cpu);
	return ipt_file_stat(path, key);
}

/*
 * Wait until counter @key of the simulated unit of @cpu (cpuN/stats) is
 * at least @min: polled every millisecond, at most 30000 times (>= 30 s,
 * never reached when all is well).  Returns 0, -ENOENT at once when the
 * counter cannot be read (so that no wait passes on ~0), or -ETIMEDOUT.
 */
static inline int ipt_sim_wait_stat(int cpu, const char *key, uint64_t min)
{
	struct timespec d = { 0, 1000000 };
	uint64_t v;
	int i;

	for (i = 0; i < 30000; i++) {
		v = ipt_sim_stat(cpu, key);
		if (v == ~0ULL)
			return -ENOENT;
		if (v >= min)
			return 0;
		nanosleep(&d, NULL);
	}
	return -ETIMEDOUT;
}

/*
 * Whether the simulated unit of @cpu can write nothing more: TraceEn
 * (CTL bit 0) clear, or STATUS.Error (bit 4) or STATUS.Stopped (bit 5)
 * set.  1 or 0; -ENOENT when its registers cannot be read.
 */
static inline int ipt_sim_unit_quiet(int cpu)
{
	uint64_t ctl = ipt_sim_stat(cpu, "ctl"), st = ipt_sim_stat(cpu, "status");

	if (ctl == ~0ULL || st == ~0ULL)
		return -ENOENT;
	return !(ctl & 1) || (st & 0x30);
}

/*
 * Wait until the simulated unit of @cpu can write nothing more
 * (ipt_sim_unit_quiet()): the event after which a test may say "nothing
 * more comes" without a sleep.  Polled every millisecond, at most 30000
 * times (>= 30 s, never reached when all is well).  0, -ENOENT or
 * -ETIMEDOUT.
 */
static inline int ipt_sim_wait_quiet(int cpu)
{
	struct timespec d = { 0, 1000000 };
	int i, q;

	for (i = 0; i < 30000; i++) {
		q = ipt_sim_unit_quiet(cpu);
		if (q)
			return q < 0 ? q : 0;
		nanosleep(&d, NULL);
	}
	return -ETIMEDOUT;
}

static inline int ipt_write_file(const char *path, const char *val)
{
	int fd = open(path, O_WRONLY), ret = 0;

	if (fd < 0)
		return -errno;
	if (write(fd, val, strlen(val)) < 0)
		ret = -errno;
	close(fd);
	return ret;
}

/* Take CPU @cpu offline (@on 0) or bring it back (1); 0 or -errno. */
static inline int ipt_cpu_online_set(int cpu, int on)
{
	char path[64];

	snprintf(path, sizeof(path), "/sys/devices/system/cpu/cpu%d/online", cpu);
	return ipt_write_file(path, on ? "1" : "0");
}

/* Copy the file at @path to stdout, each line after @prefix. */
static inline void ipt_print_file(const char *prefix, const char *path)
{
	char line[256];
	FILE *f = fopen(path, "r");

	if (!f)
		return;
	while (fgets(line, sizeof(line), f))
		printf("%s%s", prefix, line);
	fclose(f);
}

static inline int ipt_sim_set_rate(uint64_t rate)
{
	char v[32];

	snprintf(v, sizeof(v), "%llu", (unsigned long long)rate);
	return ipt_write_file(IPT_SIM_DEBUGFS "/rate", v);
}

/* ---- the simulated program's feed (ipt_sim cpuN/feed) ------------------ */

/* Where the built-in loop (debugfs "code", at 0x401000) ends. */
#define IPT_SIM_LOOP_END	0x401009ULL

/*
 * A feed record (kmod/sim/ipt_sim_feed.h) in @rec, 16 + @n bytes: @n
 * bytes (at most 65535) of the built-in loop's branch content, TNT-8
 * bytes, after which execution is at the loop's end.  With @n 0, a
 * record that only sets the IP.
 */
static inline void ipt_sim_feed_tnt_rec(uint8_t *rec, unsigned int n)
{
	uint64_t ip = IPT_SIM_LOOP_END;
	int i;

	memset(rec, 0, 16);
	rec[0] = n & 0xff;
	rec[1] = n >> 8;
	for (i = 0; i < 8; i++)
		rec[8 + i] = ip >> (8 * i);
	memset(rec + 16, 0xec, n);
}

/*
 * Open CPU @cpu's feed to append records to; @reset starts a new feed,
 * at the loop's end.  The descriptor, or -errno (-EIO when the first
 * record could not be written).
 */
static inline int ipt_sim_feed_open(int cpu, int reset)
{
	uint8_t rec[16];
	char path[64];
	int fd;

	snprintf(path, sizeof(path), IPT_SIM_DEBUGFS "/cpu%d/feed", cpu);
	fd = open(path, O_WRONLY | (reset ? O_TRUNC : 0));
	if (fd < 0)
		return -errno;
	ipt_sim_feed_tnt_rec(rec, 0);
	if (reset && write(fd, rec, sizeof(rec)) != sizeof(rec)) {
		close(fd);
		return -EIO;
	}
	return fd;
}

/*
 * Whether CPU @cpu's program has run its whole feed ("feed on POS/LEN" in
 * cpuN/stats with POS == LEN): 1 or 0, or -errno when the stats cannot
 * be read.
 */
static inline int ipt_sim_feed_consumed(int cpu)
{
	unsigned long long pos, len;
	char path[64], line[256];
	int done = 0;
	FILE *f;

	snprintf(path, sizeof(path), IPT_SIM_DEBUGFS "/cpu%d/stats", cpu);
	f = fopen(path, "r");
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "feed on %llu/%llu", &pos, &len) == 2)
			done = pos == len;
	fclose(f);
	return done;
}

/* CPU @cpu's program back to the built-in loop: an empty feed. */
static inline void ipt_sim_feed_off(int cpu)
{
	char path[64];
	int fd;

	snprintf(path, sizeof(path), IPT_SIM_DEBUGFS "/cpu%d/feed", cpu);
	fd = open(path, O_WRONLY | O_TRUNC);
	if (fd >= 0)
		close(fd);
}

/* ---- PT packets ---------------------------------------------------------- */

/*
 * Length of the packet at @p (@n bytes available): 0 when it does not fit,
 * -1 when the bytes are not a packet this test knows.
 */
static inline int ipt_pkt_len(const uint8_t *p, size_t n)
{
	static const int ipbytes[8] = { 0, 2, 4, 6, 6, -1, 8, -1 };
	int len = -1;

	if (!n)
		return 0;
	if (p[0] == 0x00)
		return 1;				/* PAD */
	if (p[0] == 0x02) {
		if (n < 2)
			return 0;
		switch (p[1]) {
		case 0x82: len = 16; break;		/* PSB */
		case 0x23: len = 2; break;		/* PSBEND */
		case 0xf3: len = 2; break;		/* OVF */
		case 0x03: len = 4; break;		/* CBR */
		case 0x73: len = 7; break;		/* TMA */
		case 0xa3: len = 8; break;		/* TNT-64 */
		case 0x43: len = 8; break;		/* PIP */
		case 0xc8: len = 7; break;		/* VMCS */
		case 0x83: len = 2; break;		/* TraceStop */
		default: return -1;
		}
		if (len == 16 && n >= 16) {
			for (int i = 0; i < 16; i += 2)
				if (p[i] != 0x02 || p[i + 1] != 0x82)
					return -1;
		}
		return (size_t)len <= n ? len : 0;
	}
	if (!(p[0] & 1))
		return 1;				/* TNT-8 */
	if ((p[0] & 3) == 3) {				/* CYC */
		size_t i = 1;

		if (!(p[0] & 4))
			return 1;
		while (i < n && (p[i] & 1))
			i++;
		return i < n ? (int)i + 1 : 0;
	}
	switch (p[0]) {
	case 0x19: len = 8; break;			/* TSC */
	case 0x59: len = 2; break;			/* MTC */
	case 0x99: len = 2; break;			/* MODE */
	}
	if (len < 0) {
		switch (p[0] & 0x1f) {
		case 0x0d: case 0x11: case 0x01: case 0x1d:
			if (ipbytes[p[0] >> 5] < 0)
				return -1;
			len = 1 + ipbytes[p[0] >> 5];
		}
	}
	if (len < 0)
		return -1;
	return (size_t)len <= n ? len : 0;
}

static inline int ipt_is_psb(const uint8_t *p, size_t n)
{
	return n >= 16 && ipt_pkt_len(p, n) == 16 && p[1] == 0x82;
}

/*
 * Parse @n bytes from a packet boundary.  Returns the number of bytes
 * parsed as whole packets (== @n when the stream ends on a packet
 * boundary) or -(offset + 1) of a byte that is not a packet; counts PSBs
 * in *@psbs and records the largest distance between PSBs in *@gap.
 */
static inline long ipt_parse(const uint8_t *p, size_t n, unsigned long *psbs,
			     size_t *gap)
{
	size_t off = 0, last = 0;

	*psbs = 0;
	*gap = 0;
	while (off < n) {
		int len = ipt_pkt_len(p + off, n - off);

		if (len < 0)
			return -(long)(off + 1);
		if (len == 0)
			break;
		if (len == 16 && p[off + 1] == 0x82) {
			if (*psbs && off - last > *gap)
				*gap = off - last;
			last = off;
			(*psbs)++;
		}
		off += len;
	}
	return off;
}

#endif /* IPT_SELFTEST_LIB_H */
