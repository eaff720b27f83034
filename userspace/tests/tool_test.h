/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What the tests that run ipttool-san on ptgen traces (test_decode,
 * test_syms, test_slice) share: sh(), the set-up that finds the build
 * tree, the tools and a fresh work directory, and the helpers that run
 * the decoder and read what it wrote.
 */
#ifndef IPT_TOOL_TEST_H
#define IPT_TOOL_TEST_H

#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tap.h"

/* The top build/ directory, the test's work directory, the decoder run. */
static char build[1024], work[1100], tool[1200];

/* Run a shell command: its exit status, 128 + signal, or -1. */
static inline int sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static inline int sh(const char *fmt, ...)
{
	char cmd[16384];
	va_list ap;
	int st;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	st = system(cmd);
	if (st == -1)
		return -1;
	if (WIFSIGNALED(st))
		return 128 + WTERMSIG(st);
	return WEXITSTATUS(st);
}

/*
 * The file at @path, NUL-terminated, in memory the caller frees; its
 * length in *@len (0 on failure) unless @len is NULL.  NULL if it cannot
 * be read.
 */
static inline char *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *p;
	long n;

	if (len)
		*len = 0;
	if (!f)
		return NULL;
	if (fseek(f, 0, SEEK_END) || (n = ftell(f)) < 0 || fseek(f, 0, SEEK_SET)) {
		fclose(f);
		return NULL;
	}
	p = malloc((size_t)n + 1);
	if (p && fread(p, 1, (size_t)n, f) != (size_t)n) {
		free(p);
		p = NULL;
	}
	fclose(f);
	if (p) {
		p[n] = 0;
		if (len)
			*len = (size_t)n;
	}
	return p;
}

/* A line of a ptgen run's images.txt: a code image, START END NAME (hex addresses). */
struct image_line {
	unsigned long long start, end;
	char name[256];
};

/* DIR/images.txt, open for reading, or NULL. */
static inline FILE *images_open(const char *dir)
{
	char path[PATH_MAX + 32];

	snprintf(path, sizeof(path), "%s/images.txt", dir);
	return fopen(path, "r");
}

/* The next image in @f (NULL: none), lines of another form passed over; false at the end. */
static inline bool images_next(FILE *f, struct image_line *im)
{
	char line[PATH_MAX + 128];

	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "%llx %llx %255s", &im->start, &im->end, im->name) == 3)
			return true;
	return false;
}

/* Run the decoder (ipttool-san ARGS): stdout to @out, stderr to @err.  Exit status. */
static inline int decode(const char *out, const char *err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static inline int decode(const char *out, const char *err, const char *fmt, ...)
{
	char args[12288];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(args, sizeof(args), fmt, ap);
	va_end(ap);
	return sh("%s %s >%s 2>%s", tool, args, out, err);
}

/* The sanitizers said nothing in the stderr file @err. */
static inline bool clean_stderr(const char *err)
{
	char *s = slurp(err, NULL);
	bool ok = s && !strstr(s, "AddressSanitizer") && !strstr(s, "runtime error") &&
		  !strstr(s, "LeakSanitizer");

	free(s);
	return ok;
}

static inline bool file_contains(const char *path, const char *needle)
{
	char *s = slurp(path, NULL);
	bool ok = s && strstr(s, needle);

	free(s);
	return ok;
}

/*
 * build: @argv[1], or two levels up from this program (build/userspace/);
 * work: BUILD/@workdir, emptied; tool: a private copy in it of
 * ipttool-san (a concurrent 'make' may relink the one in build/).  Sets
 * the sanitizers' options and LC_ALL=C.  A missing ipttool-san or ptgen
 * is a failed test point.  Returns true when the test can go on; else
 * false, with *@status what main returns.
 */
/*
 * The call depth after a return to @to, from the ground truth's stack of
 * return addresses @rets[0..@depth): the innermost frame returning to @to
 * closes with every frame above it, else the innermost closes (0 stays
 * 0) - the decoder's rule and perf's (thread-stack.c,
 * thread_stack__pop_cp()).
 */
static inline unsigned int gt_ret_depth(const uint64_t *rets, unsigned int depth, uint64_t to)
{
	unsigned int d = depth;

	while (d > 0 && rets[d - 1] != to)
		d--;
	if (!d)
		d = depth;
	return d ? d - 1 : 0;
}

static inline bool tool_test_setup(int argc, char **argv, const char *workdir, int *status)
{
	char p[PATH_MAX + 32];

	if (argc > 1) {
		snprintf(build, sizeof(build), "%s", argv[1]);
	} else {
		char self[1024];
		ssize_t l = readlink("/proc/self/exe", self, sizeof(self) - 1);

		if (l <= 0) {
			*status = 2;
			return false;
		}
		self[l] = 0;
		*strrchr(self, '/') = 0;	/* build/userspace */
		*strrchr(self, '/') = 0;	/* build */
		snprintf(build, sizeof(build), "%s", self);
	}
	snprintf(work, sizeof(work), "%s/%s", build, workdir);
	snprintf(tool, sizeof(tool), "%s/userspace/ipttool-san", build);
	setenv("ASAN_OPTIONS", "detect_leaks=1:abort_on_error=0:exitcode=99", 1);
	setenv("UBSAN_OPTIONS", "print_stacktrace=1:halt_on_error=1:exitcode=98", 1);
	setenv("LC_ALL", "C", 1);
	if (access(tool, X_OK)) {
		CHECK(0, "%s missing (run make userspace)", tool);
		*status = tap_done();
		return false;
	}
	snprintf(p, sizeof(p), "%s/selftests/ptgen", build);
	if (access(p, X_OK)) {
		CHECK(0, "%s missing (run make selftests)", p);
		*status = tap_done();
		return false;
	}
	sh("rm -rf %s && mkdir -p %s", work, work);
	if (sh("cp %s %s/ipttool-san", tool, work) == 0)
		snprintf(tool, sizeof(tool), "%s/ipttool-san", work);
	return true;
}

#endif /* IPT_TOOL_TEST_H */
