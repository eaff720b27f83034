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
#include <unistd.h>
#include <linux/capability.h>
#include <linux/ipt.h>

/* ioctl() returning -errno, so that EXPECT_EQ can name the errno. */
static inline int ipt_ioctl(int fd, unsigned long cmd, void *arg)
{
	return ioctl(fd, cmd, arg) ? -errno : 0;
}

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

#endif /* IPT_SELFTEST_LIB_H */
