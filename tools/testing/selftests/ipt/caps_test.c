// SPDX-License-Identifier: GPL-2.0
/*
 * kselftest: IPT_IOC_GET_CAPS and the /dev/ipt device node.
 *
 * The expectations follow the CPU: where /proc/cpuinfo has no intel_pt
 * flag (QEMU TCG, AMD) the driver must report IPT_BACKEND_NONE with the
 * matching reason; where it has one, the native backend must be reported.
 * A simulated unit, when loaded, reports IPT_BACKEND_SIM.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>

#include "ipt_lib.h"
#include "kselftest_harness.h"

FIXTURE(dev) {
	int fd;
};

FIXTURE_SETUP(dev)
{
	self->fd = open(IPT_DEVICE_PATH, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, self->fd) TH_LOG("open %s: %s (is ipt.ko loaded?)",
				      IPT_DEVICE_PATH, strerror(errno));
}

FIXTURE_TEARDOWN(dev)
{
	close(self->fd);
}

TEST(device_node_is_root_only)
{
	struct stat st;

	ASSERT_EQ(0, stat(IPT_DEVICE_PATH, &st));
	EXPECT_TRUE(S_ISCHR(st.st_mode));
	EXPECT_EQ(0600, st.st_mode & 07777);
	EXPECT_EQ(0, st.st_uid);
}

TEST_F(dev, caps_current_size)
{
	struct ipt_caps caps = { .size = sizeof(caps) };

	ASSERT_EQ(0, ipt_ioctl(self->fd, IPT_IOC_GET_CAPS, &caps));
	EXPECT_EQ(sizeof(caps), caps.size);
	EXPECT_EQ(IPT_ABI_VERSION, caps.abi_version);
	EXPECT_EQ(0, caps.flags);
	EXPECT_NE(0, caps.vendor[0]);
	EXPECT_EQ(0, caps.vendor[15]);
}

/*
 * The output must match what the kernel's own CPU detection says, unless
 * the simulated unit is registered: then it describes the simulated CPU.
 */
TEST_F(dev, caps_match_cpuinfo)
{
	struct ipt_caps caps = { .size = sizeof(caps) };
	char buf[4096], *v;
	bool has_pt;

	ASSERT_EQ(0, ipt_ioctl(self->fd, IPT_IOC_GET_CAPS, &caps));
	if (caps.backend == IPT_BACKEND_SIM) {
		EXPECT_EQ(IPT_UNAVAIL_NONE, caps.unavailable);
		EXPECT_STREQ("GenuineIntel", caps.vendor);
		EXPECT_EQ(6, caps.family);
		EXPECT_NE(0, caps.features & (IPT_FEAT_TOPA | IPT_FEAT_SINGLE_RANGE));
		return;
	}

	v = ipt_cpuinfo("vendor_id", buf, sizeof(buf));
	ASSERT_NE(NULL, v);
	EXPECT_STREQ(v, caps.vendor);
	v = ipt_cpuinfo("cpu family", buf, sizeof(buf));
	ASSERT_NE(NULL, v);
	EXPECT_EQ(strtoul(v, NULL, 10), caps.family);
	v = ipt_cpuinfo("model", buf, sizeof(buf));
	ASSERT_NE(NULL, v);
	EXPECT_EQ(strtoul(v, NULL, 10), caps.model);
	v = ipt_cpuinfo("stepping", buf, sizeof(buf));
	ASSERT_NE(NULL, v);
	EXPECT_EQ(strtoul(v, NULL, 10), caps.stepping);

	v = ipt_cpuinfo("flags", buf, sizeof(buf));
	ASSERT_NE(NULL, v);
	has_pt = strstr(v, " intel_pt") != NULL;

	if (has_pt) {
		EXPECT_EQ(IPT_BACKEND_NATIVE, caps.backend);
		EXPECT_EQ(IPT_UNAVAIL_NONE, caps.unavailable);
		EXPECT_NE(0, caps.features & (IPT_FEAT_TOPA | IPT_FEAT_SINGLE_RANGE));
		return;
	}
	EXPECT_EQ(IPT_BACKEND_NONE, caps.backend);
	if (strcmp(caps.vendor, "GenuineIntel")) {
		EXPECT_EQ(IPT_UNAVAIL_NOT_INTEL, caps.unavailable);
	} else {
		EXPECT_NE(IPT_UNAVAIL_NONE, caps.unavailable);
	}
	/* No PT: every PT field is zero. */
	EXPECT_EQ(0, caps.features);
	EXPECT_EQ(0, caps.num_addr_ranges);
	EXPECT_EQ(0, caps.mtc_freq_mask | caps.cyc_thresh_mask | caps.psb_freq_mask);
	EXPECT_EQ(0, caps.nom_freq);
	EXPECT_EQ(0, caps.xsave_pt_size);
	EXPECT_EQ(0, caps.max_topa_order);
	EXPECT_EQ(0, caps.max_trace_size);
	EXPECT_EQ(0, caps.max_chunk_order);
	EXPECT_EQ(0, caps.virt_addr_bits);
	EXPECT_EQ(0, caps.platform);
	EXPECT_EQ(0, caps.cpuid_14_0.eax | caps.cpuid_14_0.ebx | caps.cpuid_14_0.ecx);
}

TEST_F(dev, caps_nr_cpus_is_possible_cpus)
{
	struct ipt_caps caps = { .size = sizeof(caps) };
	char buf[64] = "";
	FILE *f = fopen("/sys/devices/system/cpu/possible", "r");
	char *last;

	ASSERT_NE(NULL, f);
	ASSERT_NE(NULL, fgets(buf, sizeof(buf), f));
	fclose(f);
	last = strrchr(buf, '-');
	last = last ? last + 1 : buf;
	ASSERT_EQ(0, ipt_ioctl(self->fd, IPT_IOC_GET_CAPS, &caps));
	EXPECT_EQ(strtoul(last, NULL, 10) + 1, caps.nr_cpus);
}

/* An older caller with the first published size gets exactly that much. */
TEST_F(dev, caps_ver0_size)
{
	unsigned char buf[IPT_CAPS_SIZE_VER0 + 64];
	struct ipt_caps *caps = (struct ipt_caps *)buf;

	memset(buf, 0xa5, sizeof(buf));
	memset(buf, 0, IPT_CAPS_SIZE_VER0);
	caps->size = IPT_CAPS_SIZE_VER0;
	ASSERT_EQ(0, ipt_ioctl(self->fd, IPT_IOC_GET_CAPS, caps));
	EXPECT_EQ(sizeof(struct ipt_caps), caps->size);
	/* Not one byte past the caller's size was written. */
	EXPECT_EQ(0xa5, buf[IPT_CAPS_SIZE_VER0]);
	EXPECT_EQ(0xa5, buf[sizeof(buf) - 1]);
}

TEST_F(dev, caps_size_too_small)
{
	struct ipt_caps caps = { .size = IPT_CAPS_SIZE_VER0 - 1 };

	EXPECT_EQ(-EINVAL, ipt_ioctl(self->fd, IPT_IOC_GET_CAPS, &caps));
	caps.size = 0;
	EXPECT_EQ(-EINVAL, ipt_ioctl(self->fd, IPT_IOC_GET_CAPS, &caps));
	caps.size = 4;
	EXPECT_EQ(-EINVAL, ipt_ioctl(self->fd, IPT_IOC_GET_CAPS, &caps));
	/* Nothing was written back on failure. */
	EXPECT_EQ(4, caps.size);
	EXPECT_EQ(0, caps.abi_version);
}

/* A newer caller: a zero tail is accepted and comes back zeroed. */
TEST_F(dev, caps_larger_zero_tail)
{
	size_t len = sizeof(struct ipt_caps) + 256;
	unsigned char *buf = calloc(1, len);
	struct ipt_caps *caps = (struct ipt_caps *)buf;
	size_t i;

	ASSERT_NE(NULL, buf);
	caps->size = len;
	ASSERT_EQ(0, ipt_ioctl(self->fd, IPT_IOC_GET_CAPS, caps));
	EXPECT_EQ(sizeof(struct ipt_caps), caps->size);
	for (i = sizeof(struct ipt_caps); i < len; i++)
		if (buf[i])
			break;
	EXPECT_EQ(len, i);
	free(buf);
}

TEST_F(dev, caps_larger_nonzero_tail)
{
	size_t len = sizeof(struct ipt_caps) + 8;
	unsigned char *buf = calloc(1, len);
	struct ipt_caps *caps = (struct ipt_caps *)buf;

	ASSERT_NE(NULL, buf);
	caps->size = len;
	buf[len - 1] = 1;
	EXPECT_EQ(-E2BIG, ipt_ioctl(self->fd, IPT_IOC_GET_CAPS, caps));
	EXPECT_EQ(len, caps->size);
	EXPECT_EQ(0, caps->abi_version);
	free(buf);
}

TEST_F(dev, caps_size_above_page)
{
	long page = sysconf(_SC_PAGESIZE);
	unsigned char *buf = calloc(1, page + 8);
	struct ipt_caps *caps = (struct ipt_caps *)buf;

	ASSERT_NE(NULL, buf);
	caps->size = page;
	EXPECT_EQ(0, ipt_ioctl(self->fd, IPT_IOC_GET_CAPS, caps));
	memset(buf, 0, page + 8);
	caps->size = page + 1;
	EXPECT_EQ(-E2BIG, ipt_ioctl(self->fd, IPT_IOC_GET_CAPS, caps));
	caps->size = 0xffffffff;
	EXPECT_EQ(-E2BIG, ipt_ioctl(self->fd, IPT_IOC_GET_CAPS, caps));
	free(buf);
}

TEST_F(dev, caps_flags_rejected)
{
	struct ipt_caps caps = { .size = sizeof(caps), .flags = 1 };

	EXPECT_EQ(-EINVAL, ipt_ioctl(self->fd, IPT_IOC_GET_CAPS, &caps));
	caps.flags = 0x80000000;
	EXPECT_EQ(-EINVAL, ipt_ioctl(self->fd, IPT_IOC_GET_CAPS, &caps));
	EXPECT_EQ(0, caps.abi_version);
}

TEST_F(dev, caps_bad_pointers)
{
	void *page;

	EXPECT_EQ(-EFAULT, ipt_ioctl(self->fd, IPT_IOC_GET_CAPS, NULL));
	EXPECT_EQ(-EFAULT, ipt_ioctl(self->fd, IPT_IOC_GET_CAPS, (void *)1));
	EXPECT_EQ(-EFAULT, ipt_ioctl(self->fd, IPT_IOC_GET_CAPS,
				     (void *)0xffff800000000000ull));

	/* Readable but not writable: the copy back must fail cleanly. */
	page = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, page);
	((struct ipt_caps *)page)->size = sizeof(struct ipt_caps);
	ASSERT_EQ(0, mprotect(page, 4096, PROT_READ));
	EXPECT_EQ(-EFAULT, ipt_ioctl(self->fd, IPT_IOC_GET_CAPS, page));
	munmap(page, 4096);
}

/* A struct that runs off the end of the mapping into a hole. */
TEST_F(dev, caps_straddles_unmapped)
{
	unsigned char *map = mmap(NULL, 8192, PROT_READ | PROT_WRITE,
				  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	struct ipt_caps *caps;

	ASSERT_NE(MAP_FAILED, map);
	ASSERT_EQ(0, munmap(map + 4096, 4096));
	caps = (struct ipt_caps *)(map + 4096 - 64);
	memset(caps, 0, 64);
	caps->size = sizeof(*caps);
	EXPECT_EQ(-EFAULT, ipt_ioctl(self->fd, IPT_IOC_GET_CAPS, caps));
	munmap(map, 4096);
}

TEST_F(dev, unknown_commands)
{
	struct ipt_caps caps = { .size = sizeof(caps) };
	char big[256] = { 0 };

	EXPECT_EQ(-ENOTTY, ipt_ioctl(self->fd, _IO(IPT_IOC_MAGIC, 0x7f), NULL));
	EXPECT_EQ(-ENOTTY, ipt_ioctl(self->fd, _IOWR(IPT_IOC_MAGIC, 0xff, struct ipt_caps),
				     &caps));
	/* Right number, wrong direction. */
	EXPECT_EQ(-ENOTTY, ipt_ioctl(self->fd, _IOR(IPT_IOC_MAGIC, 0x00, struct ipt_caps),
				     &caps));
	EXPECT_EQ(-ENOTTY, ipt_ioctl(self->fd, _IOW(IPT_IOC_MAGIC, 0x00, struct ipt_caps),
				     &caps));
	EXPECT_EQ(-ENOTTY, ipt_ioctl(self->fd, _IO(IPT_IOC_MAGIC, 0x00), &caps));
	/* Right number and direction, another magic. */
	EXPECT_EQ(-ENOTTY, ipt_ioctl(self->fd, _IOWR(0xB7, 0x00, struct ipt_caps), &caps));
	/* Generic tty/file ioctls are not ours either. */
	EXPECT_EQ(-ENOTTY, ipt_ioctl(self->fd, TCGETS, big));
	/* The size bits are not part of the command: any struct size works. */
	EXPECT_EQ(0, ipt_ioctl(self->fd, _IOWR(IPT_IOC_MAGIC, 0x00, char[256]), &caps));
}

TEST_F(dev, not_seekable_not_readable)
{
	char c;

	EXPECT_EQ(-1, lseek(self->fd, 0, SEEK_SET));
	EXPECT_EQ(ESPIPE, errno);
	EXPECT_EQ(-1, read(self->fd, &c, 1));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(-1, write(self->fd, &c, 1));
	EXPECT_EQ(EINVAL, errno);
}

static void *caps_hammer(void *arg)
{
	int fd = *(int *)arg;
	long bad = 0;
	int i;

	for (i = 0; i < 2000; i++) {
		struct ipt_caps caps = { .size = sizeof(caps) };

		if (ioctl(fd, IPT_IOC_GET_CAPS, &caps) ||
		    caps.abi_version != IPT_ABI_VERSION)
			bad++;
	}
	return (void *)bad;
}

TEST_F(dev, caps_concurrent)
{
	pthread_t th[8];
	void *bad;
	int i;

	for (i = 0; i < 8; i++)
		ASSERT_EQ(0, pthread_create(&th[i], NULL, caps_hammer, &self->fd));
	for (i = 0; i < 8; i++) {
		ASSERT_EQ(0, pthread_join(th[i], &bad));
		EXPECT_EQ(0, (long)bad);
	}
}

/*
 * Without CAP_PERFMON and CAP_SYS_ADMIN the device opens (its mode decides
 * who may) and reports capabilities; what a trace may show is checked by
 * the commands (session_test, thread_test).
 */
TEST(open_without_perfmon)
{
	static const int caps[] = { CAP_SYS_ADMIN, CAP_PERFMON };
	pid_t pid = fork();
	int status;

	ASSERT_LE(0, pid);
	if (pid == 0) {
		struct ipt_caps c = { .size = sizeof(c) };
		int fd;

		if (ipt_drop_caps(caps, 2))
			_exit(10);
		fd = open(IPT_DEVICE_PATH, O_RDWR);
		if (fd < 0)
			_exit(11);
		_exit(ipt_ioctl(fd, IPT_IOC_GET_CAPS, &c) ? 12 : 0);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status));
}

/* Either capability alone is enough. */
TEST(open_with_perfmon_only)
{
	static const int caps[] = { CAP_SYS_ADMIN };
	pid_t pid = fork();
	int status;

	ASSERT_LE(0, pid);
	if (pid == 0) {
		int fd;

		if (ipt_drop_caps(caps, 1))
			_exit(10);
		fd = open(IPT_DEVICE_PATH, O_RDWR);
		_exit(fd >= 0 ? 0 : 11);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status));
}

/* An ordinary user is stopped by the node's mode before the driver. */
TEST(open_as_nobody)
{
	pid_t pid = fork();
	int status;

	ASSERT_LE(0, pid);
	if (pid == 0) {
		int fd;

		if (setgid(65534) || setuid(65534))
			_exit(10);
		fd = open(IPT_DEVICE_PATH, O_RDWR);
		_exit(fd >= 0 ? 11 : errno == EACCES ? 0 : 12);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status));
}

TEST_HARNESS_MAIN
