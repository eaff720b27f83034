/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A minimal TAP producer for ipt's host unit tests: each CHECK is one test
 * point, so a failure names the exact expectation and its line.
 */
#ifndef IPT_TAP_H
#define IPT_TAP_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int tap_n, tap_failed;

#define CHECK(cond, ...) do {						\
	tap_n++;							\
	if (cond) {							\
		printf("ok %d - ", tap_n);				\
	} else {							\
		tap_failed++;						\
		printf("not ok %d - ", tap_n);				\
	}								\
	printf(__VA_ARGS__);						\
	printf("\n");							\
	if (!(cond))							\
		printf("# failed at %s:%d: %s\n", __FILE__, __LINE__, #cond); \
} while (0)

/*
 * A test point that could not run here, and why (TAP's "# SKIP").  Under
 * CI (CI=true, as .ci/run sets) scripts/setup has installed everything the
 * tests use, so a skip there means a broken setup: it fails instead.
 */
#define SKIP(...) do {							\
	const char *ci_ = getenv("CI");					\
	tap_n++;							\
	if (ci_ && !strcmp(ci_, "true")) {				\
		tap_failed++;						\
		printf("not ok %d - (CI=true: may not skip) ", tap_n);	\
	} else {							\
		printf("ok %d - # SKIP ", tap_n);			\
	}								\
	printf(__VA_ARGS__);						\
	printf("\n");							\
} while (0)

static inline int tap_done(void)
{
	printf("1..%d\n", tap_n);
	printf("# %d passed, %d failed\n", tap_n - tap_failed, tap_failed);
	return tap_failed ? 1 : 0;
}

#endif /* IPT_TAP_H */
