// SPDX-License-Identifier: GPL-2.0
/*
 * kselftest: trace buffers are charged as locked memory, the way perf
 * charges its AUX buffers, against the simulated unit - by a real non-root
 * uid (/dev/ipt opened as root first, as a group-opened node would be):
 *
 * - RLIMIT_MEMLOCK bounds what IPT_IOC_CONFIGURE may allocate beyond the
 *   module's per-user allowance (mlock_kb KiB per online CPU): EPERM, no
 *   state change; the pinned pages show in VmPin;
 * - a mapped buffer stays charged after IPT_IOC_RELEASE until munmap(), so
 *   configure / mmap / release loops, and other processes of the same
 *   user, cannot pin beyond the limit;
 * - a memory cgroup limit bounds the buffers (ENOMEM, no OOM kill);
 * - CAP_IPC_LOCK (root, or a non-root uid that kept it) is not limited by
 *   RLIMIT_MEMLOCK but still charged, and is the only caller that gets
 *   chunks from the range allocator, which no memory cgroup is charged for.
 *
 * Sessions are per-thread (per-CPU mode needs CAP_PERFMON).  Each case
 * runs in a child that changes its own limits and credentials; the
 * fixture (root) sets the module's mlock_kb and puts it back.
 */
#define _GNU_SOURCE
#include <signal.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "ipt_lib.h"
#include "kselftest_harness.h"

#define KIB 1024ULL
#define MIB (1024 * KIB)

#define MLOCK_KB_PARAM	"/sys/module/ipt/parameters/mlock_kb"
#define CGROUP_ROOT	"/sys/fs/cgroup"
#define CGROUP_TEST	CGROUP_ROOT "/ipt_account_test"

FIXTURE(acct) {
	int fd[2];
	struct ipt_caps caps;
	char mlock_kb[32];	/* the value to put back, "" if none */
};

FIXTURE_SETUP(acct)
{
	FILE *f;

	self->fd[0] = self->fd[1] = -1;
	self->mlock_kb[0] = '\0';
	if (!ipt_sim_loaded())
		SKIP(return, "the simulated unit (ipt_sim) is not loaded");
	if (geteuid())
		SKIP(return, "must start as root (it drops to uid %d itself)", IPT_TEST_UID);
	self->fd[0] = open(IPT_DEVICE_PATH, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, self->fd[0]);
	self->fd[1] = open(IPT_DEVICE_PATH, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, self->fd[1]);
	self->caps.size = sizeof(self->caps);
	ASSERT_EQ(0, ipt_ioctl(self->fd[0], IPT_IOC_GET_CAPS, &self->caps));
	f = fopen(MLOCK_KB_PARAM, "r");
	if (f) {
		if (!fgets(self->mlock_kb, sizeof(self->mlock_kb), f))
			self->mlock_kb[0] = '\0';
		fclose(f);
	} else {
		/* A module without accounting: the checks below say so. */
		TH_LOG("no %s: the module has no per-user allowance", MLOCK_KB_PARAM);
	}
}

FIXTURE_TEARDOWN(acct)
{
	if (self->mlock_kb[0])
		ipt_write_file(MLOCK_KB_PARAM, self->mlock_kb);
	if (self->fd[0] >= 0)
		close(self->fd[0]);
	if (self->fd[1] >= 0)
		close(self->fd[1]);
}

/* Set the per-user allowance to @kb KiB per online CPU (if there is one). */
static void set_mlock_kb(unsigned int kb)
{
	char v[32];

	snprintf(v, sizeof(v), "%u", kb);
	ipt_write_file(MLOCK_KB_PARAM, v);
}

static int set_memlock(rlim_t bytes)
{
	struct rlimit r = { bytes, bytes };

	return setrlimit(RLIMIT_MEMLOCK, &r) ? -errno : 0;
}

/*
 * A per-thread session (the mode an unprivileged user may have) of
 * @traces buffers of @size bytes.
 */
static int configure_thr(int fd, uint64_t size, unsigned int traces, unsigned int chunk_order,
			 uint32_t flags)
{
	struct ipt_config cfg;

	ipt_cfg_thread(&cfg, size, traces);
	cfg.chunk_order = chunk_order;
	cfg.buffer_flags = flags;
	return ipt_ioctl(fd, IPT_IOC_CONFIGURE, &cfg);
}

/* Whether @fd's session is IDLE (GET_TRACE refuses it with EINVAL). */
static int is_idle(int fd)
{
	struct ipt_trace_state ts;

	return ipt_state(fd, 0, &ts) == -EINVAL;
}

/* Run @fn(@self, @arg) in a child; its exit status (or 128 + signal). */
static int in_child(int (*fn)(FIXTURE_DATA(acct) *, long), FIXTURE_DATA(acct) *self,
		    long arg)
{
	int status;
	pid_t pid = fork();

	if (pid < 0)
		return -errno;
	if (!pid)
		_exit(fn(self, arg));
	if (waitpid(pid, &status, 0) != pid)
		return -errno;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/* ---- RLIMIT_MEMLOCK ------------------------------------------------------- */

/*
 * With no allowance (mlock_kb 0) and RLIMIT_MEMLOCK at 64 KiB, an
 * unprivileged user gets 64 KiB and not 68: EPERM, the session stays IDLE,
 * nothing is charged.
 */
static int rlimit_child(FIXTURE_DATA(acct) *self, long arg)
{
	int fd = self->fd[0], ret;

	CHECK(!set_memlock(64 * KIB), "setrlimit");
	CHECK(!ipt_become_user(), "become uid %d", IPT_TEST_UID);
	ret = configure_thr(fd, 68 * KIB, 1, 0, 0);
	CHECK(ret == -EPERM, "68 KiB over a 64 KiB RLIMIT_MEMLOCK: got %d", ret);
	CHECK(is_idle(fd), "a refused configure changed the state");
	CHECK(ipt_vm_pin_kb(0) == 0, "VmPin %ld kB after a refused configure", ipt_vm_pin_kb(0));
	ret = configure_thr(fd, 64 * KIB, 1, 0, 0);
	CHECK(!ret, "64 KiB within a 64 KiB RLIMIT_MEMLOCK: got %d", ret);
	CHECK(ipt_vm_pin_kb(0) == 64, "VmPin %ld kB, want 64", ipt_vm_pin_kb(0));
	CHECK(!ipt_cmd(fd, IPT_IOC_RELEASE), "release");
	CHECK(ipt_vm_pin_kb(0) == 0, "VmPin %ld kB after release, want 0", ipt_vm_pin_kb(0));
	/* Every buffer of the session counts. */
	ret = configure_thr(fd, 36 * KIB, 2, 0, 0);
	CHECK(ret == -EPERM, "2 x 36 KiB over a 64 KiB RLIMIT_MEMLOCK: got %d", ret);
	CHECK(is_idle(fd), "a refused configure changed the state");
	ret = configure_thr(fd, 32 * KIB, 2, 0, 0);
	CHECK(!ret, "2 x 32 KiB within a 64 KiB RLIMIT_MEMLOCK: got %d", ret);
	CHECK(ipt_vm_pin_kb(0) == 64, "VmPin %ld kB, want 64", ipt_vm_pin_kb(0));
	CHECK(!ipt_cmd(fd, IPT_IOC_RELEASE), "release");
	return 0;
}

TEST_F(acct, rlimit_memlock_bounds_configure)
{
	set_mlock_kb(0);
	EXPECT_EQ(0, in_child(rlimit_child, self, 0));
}

/*
 * The allowance comes first, free of RLIMIT_MEMLOCK (perf's
 * perf_event_mlock_kb): with mlock_kb 16 per online CPU and a 64 KiB
 * RLIMIT_MEMLOCK, allowance + 64 KiB fits and allowance + 68 KiB does not;
 * VmPin shows only what is beyond the allowance.
 */
static int allowance_child(FIXTURE_DATA(acct) *self, long allow_kb)
{
	int fd = self->fd[0], ret;

	CHECK(!set_memlock(64 * KIB), "setrlimit");
	CHECK(!ipt_become_user(), "become uid %d", IPT_TEST_UID);
	ret = configure_thr(fd, (allow_kb + 68) * KIB, 1, 0, 0);
	CHECK(ret == -EPERM, "%ld + 68 KiB: got %d", allow_kb, ret);
	CHECK(is_idle(fd), "a refused configure changed the state");
	ret = configure_thr(fd, (allow_kb + 64) * KIB, 1, 0, 0);
	CHECK(!ret, "%ld + 64 KiB: got %d", allow_kb, ret);
	CHECK(ipt_vm_pin_kb(0) == 64, "VmPin %ld kB, want 64", ipt_vm_pin_kb(0));
	CHECK(!ipt_cmd(fd, IPT_IOC_RELEASE), "release");
	CHECK(ipt_vm_pin_kb(0) == 0, "VmPin %ld kB after release", ipt_vm_pin_kb(0));
	return 0;
}

TEST_F(acct, allowance_then_rlimit_memlock)
{
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);

	ASSERT_LT(0, cpus);
	set_mlock_kb(16);
	EXPECT_EQ(0, in_child(allowance_child, self, 16 * cpus));
}

/* ---- the charge lives as long as a mapping -------------------------------- */

/*
 * A mapped buffer stays charged after RELEASE: configure / mmap / release
 * eight times pins 64 KiB once, not 512; another process of the same user
 * (its own mm, its own fd) is refused too; munmap() gives the charge back.
 */
static int loop_child(FIXTURE_DATA(acct) *self, long arg)
{
	int fd = self->fd[0], ok = 0, i, ret, status;
	void *maps[8];
	pid_t pid;

	CHECK(!set_memlock(64 * KIB), "setrlimit");
	CHECK(!ipt_become_user(), "become uid %d", IPT_TEST_UID);
	for (i = 0; i < 8; i++) {
		maps[i] = MAP_FAILED;
		ret = configure_thr(fd, 64 * KIB, 1, 0, 0);
		if (ret) {
			CHECK(ret == -EPERM, "round %d: got %d", i, ret);
			continue;
		}
		ok++;
		maps[i] = mmap(NULL, 64 * KIB, PROT_READ, MAP_SHARED, fd, 0);
		CHECK(maps[i] != MAP_FAILED, "mmap: %s", strerror(errno));
		CHECK(!ipt_cmd(fd, IPT_IOC_RELEASE), "release");
	}
	CHECK(ok == 1, "%d of 8 configure/mmap/release rounds pinned 64 KiB each", ok);
	CHECK(ipt_vm_pin_kb(0) == 64, "VmPin %ld kB with one buffer mapped", ipt_vm_pin_kb(0));
	pid = fork();
	CHECK(pid >= 0, "fork");
	if (!pid) {
		ret = configure_thr(self->fd[1], 64 * KIB, 1, 0, 0);
		if (ret != -EPERM)
			fprintf(stderr, "# another process of the user: got %d\n", ret);
		_exit(ret == -EPERM ? 0 : 1);
	}
	CHECK(waitpid(pid, &status, 0) == pid && WIFEXITED(status) &&
	      !WEXITSTATUS(status), "the other process was not refused");
	for (i = 0; i < 8; i++)
		if (maps[i] != MAP_FAILED)
			munmap(maps[i], 64 * KIB);
	CHECK(ipt_vm_pin_kb(0) == 0, "VmPin %ld kB after munmap", ipt_vm_pin_kb(0));
	ret = configure_thr(fd, 64 * KIB, 1, 0, 0);
	CHECK(!ret, "configure after munmap: got %d", ret);
	CHECK(!ipt_cmd(fd, IPT_IOC_RELEASE), "release");
	return 0;
}

TEST_F(acct, mapped_buffer_keeps_its_charge)
{
	set_mlock_kb(0);
	EXPECT_EQ(0, in_child(loop_child, self, 0));
}

/* ---- CAP_IPC_LOCK -------------------------------------------------------- */

/*
 * Root, and a non-root uid that kept CAP_IPC_LOCK alone, configure 1 MiB
 * over a 64 KiB RLIMIT_MEMLOCK; the pages are still charged (VmPin).
 */
static int ipc_lock_child(FIXTURE_DATA(acct) *self, long as_root)
{
	int fd = self->fd[0], ret;

	CHECK(!set_memlock(64 * KIB), "setrlimit");
	if (!as_root)
		CHECK(!ipt_become_user_keep(CAP_IPC_LOCK), "become uid %d with CAP_IPC_LOCK",
		      IPT_TEST_UID);
	ret = configure_thr(fd, MIB, 1, 0, 0);
	CHECK(!ret, "1 MiB over a 64 KiB RLIMIT_MEMLOCK with CAP_IPC_LOCK: got %d", ret);
	CHECK(ipt_vm_pin_kb(0) == 1024, "VmPin %ld kB, want 1024 (charged though not limited)",
	      ipt_vm_pin_kb(0));
	CHECK(!ipt_cmd(fd, IPT_IOC_RELEASE), "release");
	CHECK(ipt_vm_pin_kb(0) == 0, "VmPin %ld kB after release", ipt_vm_pin_kb(0));
	return 0;
}

TEST_F(acct, cap_ipc_lock_is_not_limited_but_charged)
{
	set_mlock_kb(0);
	EXPECT_EQ(0, in_child(ipc_lock_child, self, 1)) TH_LOG("as root");
	EXPECT_EQ(0, in_child(ipc_lock_child, self, 0)) TH_LOG("as uid %d", IPT_TEST_UID);
}

/*
 * Chunks above 4 MiB come from alloc_contig_range(), which no memory
 * cgroup is charged for: exact 8 MiB chunks are EPERM without
 * CAP_IPC_LOCK, and chunk_order 23 without EXACT falls back to 4 MiB.
 */
static int contig_child(FIXTURE_DATA(acct) *self, long keep_ipc_lock)
{
	int fd = self->fd[0], ret;
	struct ipt_attach a = { .size = sizeof(a), .tid = syscall(SYS_gettid) };
	struct ipt_trace_state ts;
	uint32_t orders[4];

	CHECK(!set_memlock(RLIM_INFINITY), "setrlimit");
	CHECK(!ipt_become_user_keep(keep_ipc_lock ? CAP_IPC_LOCK : -1), "become uid %d",
	      IPT_TEST_UID);
	ret = configure_thr(fd, 8 * MIB, 1, 23, IPT_BUFFER_EXACT_CHUNKS);
	if (keep_ipc_lock) {
		CHECK(!ret, "exact 8 MiB chunk with CAP_IPC_LOCK: got %d", ret);
		CHECK(!ipt_cmd(fd, IPT_IOC_RELEASE), "release");
		return 0;
	}
	CHECK(ret == -EPERM, "exact 8 MiB chunk without CAP_IPC_LOCK: got %d", ret);
	CHECK(is_idle(fd), "a refused configure changed the state");
	ret = configure_thr(fd, 8 * MIB, 1, 23, 0);
	CHECK(!ret, "chunk_order 23 without EXACT: got %d", ret);
	/* The chunks of a trace show once a thread has it: this one. */
	CHECK(!ipt_ioctl(fd, IPT_IOC_ATTACH, &a), "attach: %s", strerror(errno));
	memset(&ts, 0, sizeof(ts));
	ts.size = sizeof(ts);
	ts.cpu = a.trace;
	ts.chunks_ptr = (uintptr_t)orders;
	ts.chunks_len = 4;
	CHECK(!ipt_ioctl(fd, IPT_IOC_GET_TRACE, &ts), "get_trace: %s", strerror(errno));
	CHECK(ts.nr_chunks >= 2 && orders[0] <= 22, "%u chunks, the first of order %u",
	      ts.nr_chunks, orders[0]);
	CHECK(!ipt_cmd(fd, IPT_IOC_RELEASE), "release");
	return 0;
}

TEST_F(acct, contiguous_chunks_need_cap_ipc_lock)
{
	if (self->caps.max_chunk_order < 23)
		SKIP(return, "no range allocator (max_chunk_order %u)",
		     self->caps.max_chunk_order);
	EXPECT_EQ(0, in_child(contig_child, self, 0)) TH_LOG("without CAP_IPC_LOCK");
	EXPECT_EQ(0, in_child(contig_child, self, 1)) TH_LOG("with CAP_IPC_LOCK");
}

/* ---- memory cgroup ------------------------------------------------------- */

static long long read_ll(const char *path)
{
	FILE *f = fopen(path, "r");
	long long v = -1;

	if (!f)
		return -1;
	if (fscanf(f, "%lld", &v) != 1)
		v = -1;
	fclose(f);
	return v;
}

/*
 * In a memory cgroup limited to 32 MiB, with no RLIMIT_MEMLOCK in the way,
 * an unprivileged user cannot have a 239 MiB buffer (ENOMEM, not an OOM
 * kill, the session IDLE); an 8 MiB one is charged to the cgroup.
 */
static int memcg_child(FIXTURE_DATA(acct) *self, long size)
{
	int fd = self->fd[0], ret;
	long long before, after;
	void *p;

	CHECK(!ipt_write_file(CGROUP_TEST "/cgroup.procs", "0"), "join the cgroup");
	CHECK(!set_memlock(RLIM_INFINITY), "setrlimit");
	CHECK(!ipt_become_user(), "become uid %d", IPT_TEST_UID);
	ret = configure_thr(fd, size, 1, 0, 0);
	CHECK(ret == -ENOMEM, "%ld MiB in a 32 MiB memory cgroup: got %d", size >> 20, ret);
	CHECK(is_idle(fd), "a refused configure changed the state");
	before = read_ll(CGROUP_TEST "/memory.current");
	ret = configure_thr(fd, 8 * MIB, 1, 0, 0);
	CHECK(!ret, "8 MiB in a 32 MiB memory cgroup: got %d", ret);
	after = read_ll(CGROUP_TEST "/memory.current");
	CHECK(before >= 0 && after - before >= (long long)(8 * MIB),
	      "memory.current %lld -> %lld: the buffer is not charged", before, after);
	p = mmap(NULL, 8 * MIB, PROT_READ, MAP_SHARED, fd, 0);
	CHECK(p != MAP_FAILED, "mmap: %s", strerror(errno));
	CHECK(!ipt_cmd(fd, IPT_IOC_RELEASE), "release");
	munmap(p, 8 * MIB);
	after = read_ll(CGROUP_TEST "/memory.current");
	CHECK(after < before + (long long)MIB, "memory.current %lld after munmap (was %lld)",
	      after, before);
	return 0;
}

TEST_F(acct, memcg_bounds_buffers)
{
	uint64_t size = 239 * MIB;
	char ctl[256] = "";
	int mounted = 0, ret;
	FILE *f;

	if (access(CGROUP_ROOT "/cgroup.controllers", R_OK)) {
		if (access(CGROUP_ROOT, F_OK))
			SKIP(return, "the kernel has no cgroups (no %s)", CGROUP_ROOT);
		if (mount("none", CGROUP_ROOT, "cgroup2", 0, NULL)) {
			ASSERT_EQ(ENODEV, errno);
			SKIP(return, "the kernel has no cgroup v2");
		}
		mounted = 1;
	}
	f = fopen(CGROUP_ROOT "/cgroup.controllers", "r");
	ASSERT_NE(NULL, f);
	if (!fgets(ctl, sizeof(ctl), f))
		ctl[0] = '\0';
	fclose(f);
	if (!strstr(ctl, "memory")) {
		if (mounted)
			umount(CGROUP_ROOT);
		SKIP(return, "the kernel has no memory cgroup (controllers: %s)", ctl);
	}
	ASSERT_EQ(0, ipt_write_file(CGROUP_ROOT "/cgroup.subtree_control", "+memory"));
	rmdir(CGROUP_TEST);
	ASSERT_EQ(0, mkdir(CGROUP_TEST, 0755));
	ASSERT_EQ(0, ipt_write_file(CGROUP_TEST "/memory.max", "33554432"));
	if (size > self->caps.max_trace_size)
		size = self->caps.max_trace_size;
	TH_LOG("%llu MiB in a 32 MiB memory cgroup", (unsigned long long)size >> 20);
	ret = in_child(memcg_child, self, size);
	EXPECT_EQ(0, ret) {
		if (ret > 128)
			TH_LOG("killed by signal %d (the OOM killer?)", ret - 128);
	}
	EXPECT_EQ(0, rmdir(CGROUP_TEST));
	if (mounted)
		umount(CGROUP_ROOT);
}

TEST_HARNESS_MAIN
