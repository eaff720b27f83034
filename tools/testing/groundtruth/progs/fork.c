// SPDX-License-Identifier: GPL-2.0
/*
 * Fork following (ptgen --follow-fork): the parent forks twice; one
 * child computes and exits, the other exec()s this program again with
 * an argument (new images in the child), and the parent waits for both.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static unsigned long work(unsigned long n)
{
	unsigned long s = 0;

	while (n--)
		s += n % 3 ? n : n / 3;
	return s;
}

int main(int argc, char **argv)
{
	pid_t a, b;
	int st;

	if (argc > 1 && !strcmp(argv[1], "exec'd"))
		return work(500) == 0;
	a = fork();
	if (a < 0)
		return 1;
	if (!a)
		_exit(work(1000) == 0);
	b = fork();
	if (b < 0)
		return 1;
	if (!b) {
		execl("/proc/self/exe", argv[0], "exec'd", (char *)NULL);
		_exit(127);
	}
	if (waitpid(a, &st, 0) != a || st || waitpid(b, &st, 0) != b || st)
		return 1;
	printf("%lu\n", work(200));
	return 0;
}
