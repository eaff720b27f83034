// SPDX-License-Identifier: GPL-2.0
/* clock_gettime and gettimeofday run in the vDSO, without a syscall. */
#include <stdio.h>
#include <sys/time.h>
#include <time.h>

int main(void)
{
	struct timespec ts;
	struct timeval tv;
	long s = 0;
	int i;

	for (i = 0; i < 50; i++) {
		clock_gettime(CLOCK_MONOTONIC, &ts);
		s += ts.tv_nsec & 1;
		gettimeofday(&tv, NULL);
		s += tv.tv_usec & 1;
	}
	printf("%d\n", s >= 0);
	return 0;
}
