/* SPDX-License-Identifier: GPL-2.0 */
/*
 * ipt kselftests: libipt's verdict on a trace of the simulated unit,
 * shared by trace_test and stream_test.  Include after
 * kselftest_harness.h (it asserts).
 */
#ifndef IPT_PTCHECK_H
#define IPT_PTCHECK_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ipt_lib.h"

/*
 * Let Intel's libipt judge a trace: write it out and run ptcheck
 * (tools/testing/ptcheck; IPT_PTCHECK overrides /opt/bin/ptcheck), which
 * decodes every packet and the instruction flow against the simulator's
 * built-in code (debugfs "code", loaded at 0x401000) for the simulated
 * CPU.  The feed's branch content is that loop's, so every byte must fit.
 * @insns: decode the instructions too, at least @min_insn of them;
 * @extra: more ptcheck options.  Context: a kselftest_harness test.
 */
static void ipt_ptcheck(struct __test_metadata *_metadata, int fd,
			const uint8_t *trace, size_t n, bool insns, uint64_t min_insn,
			const char *extra)
{
	const char *ptcheck = getenv("IPT_PTCHECK") ?: "/opt/bin/ptcheck";
	struct ipt_caps caps = { .size = sizeof(caps) };
	static uint8_t code[4096];
	char cmd[512];
	ssize_t len;
	int in, out, st;

	ASSERT_EQ(0, access(ptcheck, X_OK)) TH_LOG("%s: %s", ptcheck, strerror(errno));
	ASSERT_EQ(0, ipt_ioctl(fd, IPT_IOC_GET_CAPS, &caps));
	in = open(IPT_SIM_DEBUGFS "/code", O_RDONLY);
	ASSERT_LE(0, in);
	len = read(in, code, sizeof(code));
	close(in);
	ASSERT_LT(0, len);
	out = open("/tmp/ipt-sim-code.bin", O_WRONLY | O_CREAT | O_TRUNC, 0600);
	ASSERT_LE(0, out);
	ASSERT_EQ(len, write(out, code, len));
	close(out);
	out = open("/tmp/ipt-trace.pt", O_WRONLY | O_CREAT | O_TRUNC, 0600);
	ASSERT_LE(0, out);
	ASSERT_EQ((ssize_t)n, write(out, trace, n));
	close(out);

	snprintf(cmd, sizeof(cmd),
		 "%s --cpu %u/%u/%u %s --min-insn %llu %s /tmp/ipt-trace.pt "
		 ">/tmp/ipt-ptcheck.out 2>&1",
		 ptcheck, caps.family, caps.model, caps.stepping,
		 insns ? "--raw /tmp/ipt-sim-code.bin:0x401000" : "",
		 (unsigned long long)min_insn, extra);
	st = system(cmd);
	ipt_print_file("# ptcheck: ", "/tmp/ipt-ptcheck.out");
	ASSERT_TRUE(WIFEXITED(st));
	EXPECT_EQ(0, WEXITSTATUS(st)) TH_LOG("libipt rejected the trace (above)");
	unlink("/tmp/ipt-trace.pt");
}

#endif /* IPT_PTCHECK_H */
